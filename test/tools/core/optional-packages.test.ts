import { describe, expect, test } from 'vitest';
import { importOptional, missingPackageMessage, optionalPackageVersions } from '../../../src/tools/core/optional-packages.js';
import { ToolError } from '../../../src/tools/core/types.js';

/** Optional packages (docs/guide/install.md "Optional packages"); the packed install is tested in test/cli/install-optional.test.ts. */
describe('optional packages', () => {
  test('a missing one is one line naming the package and the install command', async () => {
    const missing = importOptional(['quarry-no-such-package'], () => import('quarry-no-such-package' as string));
    await expect(missing).rejects.toBeInstanceOf(ToolError);
    await expect(missing).rejects.toMatchObject({
      kind: 'missing_package',
      message:
        'this feature needs the optional package quarry-no-such-package, which is not installed; install it with: npm install -g quarry-no-such-package (or npm install quarry-no-such-package beside a local quarry)',
    });
    expect(missingPackageMessage('pg')).toMatch(
      /^PostgreSQL needs the optional package pg, which is not installed; install it with: npm install -g pg@\^8\.\d+\.\d+ /,
    );
  });

  test('other failures of an import pass through unchanged', async () => {
    const failure = new Error('native binding crashed');
    await expect(importOptional(['pg'], () => Promise.reject(failure))).rejects.toBe(failure);
  });

  test('every optional package is installed in a checkout (npm ci), with its version', () => {
    const versions = optionalPackageVersions();
    expect(versions.map((entry) => entry.name)).toContain('ssh2');
    for (const entry of versions) expect(entry.version, entry.name).toMatch(/^\d+\.\d+\.\d+/);
  });
});
