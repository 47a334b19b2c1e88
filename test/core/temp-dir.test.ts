import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';

describe('the test run temporary directory', () => {
  it('is a per-run directory that workers and child processes use', () => {
    const runDir = process.env.QUARRY_TEST_RUN_TMPDIR;
    expect(runDir).toMatch(/quarry-test-run-/);
    expect(tmpdir()).toBe(runDir);
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(require("os").tmpdir())'], { encoding: 'utf8' });
    expect(child.stdout).toBe(runDir);
  });

  it('is removed at the end of a run, with what the tests left in it', () => {
    // A nested vitest run of one small test file that litters on purpose: afterwards its per-run
    // directory (named by the nested test) must be gone from this run's temporary directory.
    const before = new Set(readdirSync(tmpdir()));
    const result = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        'test/core/fixtures/litter.fixture.ts',
        '--config',
        'test/core/fixtures/litter.vitest.config.ts',
      ],
      {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        env: { ...process.env, QUARRY_TEST_RUN_TMPDIR: '', LITTER_REPORT: join(tmpdir(), 'litter-report.txt') },
        timeout: 60_000,
      },
    );
    expect(result.status, result.stderr + result.stdout).toBe(0);
    const littered = readFileSync(join(tmpdir(), 'litter-report.txt'), 'utf8');
    expect(dirname(littered)).toMatch(/quarry-test-run-/);
    expect(existsSync(dirname(littered))).toBe(false);
    // Only the nested run's own directories count: test files running beside this one in parallel write here too.
    const after = readdirSync(tmpdir()).filter((name) => !before.has(name) && name.startsWith('quarry-test-run-'));
    expect(after).toEqual([]);
  }, 90_000);
});
