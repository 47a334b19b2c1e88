import { describe, expect, it } from 'vitest';
import { BUILTIN_PROFILE_NAMES } from '../../src/profiles/load.js';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

/**
 * What the model is told: `quarry tools --format json` for each built-in profile, kept in
 * test/cli/__snapshots__/tools-PROFILE.json so that a changed description or schema is a visible
 * diff in review. After an intended change: `npx vitest run test/cli/tools-snapshot.test.ts -u`
 * (docs/development/tests.md). The OS layer is turned off so that the text does not depend on the machine.
 */
describe('quarry tools --format json', () => {
  for (const profile of BUILTIN_PROFILE_NAMES) {
    it(`${profile}: the tools, descriptions and schemas are as reviewed`, async () => {
      const result = await runQuarry(['tools', '--format', 'json', '-p', profile], {
        env: { QUARRY_NO_BWRAP: '1', QUARRY_HOME: makeTempDir('quarry-snapshot-home-') },
      });
      expect(result.code, result.stderr).toBe(0);
      const parsed = JSON.parse(result.stdout) as { profile: string; tools: { name: string }[] };
      expect(parsed.profile).toBe(profile);
      await expect(`${JSON.stringify(parsed, null, 2)}\n`).toMatchFileSnapshot(`__snapshots__/tools-${profile}.json`);
    });
  }
});
