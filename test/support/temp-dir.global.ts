import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Every test run gets its own temporary directory: TMPDIR points into it for this process and
 * for every worker and child process (os.tmpdir() reads TMPDIR on each call), and the teardown
 * removes it with whatever a test left behind, so a run leaves nothing in the system's temporary
 * directory. What was left is named on stderr, so a test that litters can be found and fixed.
 * test/core/temp-dir.test.ts checks that the workers see the per-run directory.
 * Every vitest project lists this setup (vitest.config.ts): the first creates the directory, and
 * the last teardown (vitest tears projects down one after another) removes it.
 */
export const RUN_TMPDIR_VARIABLE = 'QUARRY_TEST_RUN_TMPDIR';

const SHARED = Symbol.for('quarry.testRunTmpdir');
type Shared = { users: number; teardown: () => void };

export default function setup(): () => void {
  const holder = globalThis as { [SHARED]?: Shared };
  const shared = holder[SHARED];
  if (shared) {
    shared.users += 1;
    return release;
  }
  holder[SHARED] = { users: 1, teardown: create() };
  return release;
}

function release(): void {
  const holder = globalThis as { [SHARED]?: Shared };
  const shared = holder[SHARED];
  if (!shared) return;
  shared.users -= 1;
  if (shared.users > 0) return;
  delete holder[SHARED];
  shared.teardown();
}

function create(): () => void {
  const parent = tmpdir();
  const runDir = mkdtempSync(join(parent, 'quarry-test-run-'));
  // Like /tmp: the database servers' data directories inside belong to the postgres user.
  chmodSync(runDir, 0o1777);
  const previous = process.env.TMPDIR;
  process.env.TMPDIR = runDir;
  process.env[RUN_TMPDIR_VARIABLE] = runDir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    if (!existsSync(runDir)) return;
    const left = readdirSync(runDir);
    if (left.length > 0 && process.env.QUARRY_TEST_REPORT_LITTER) {
      process.stderr.write(
        `temp-dir: tests left ${left.length} entries in ${runDir} (removed): ${left.slice(0, 20).join(', ')}${left.length > 20 ? ', ...' : ''}\n`,
      );
    }
    rmSync(runDir, { recursive: true, force: true });
    if (existsSync(runDir)) process.stderr.write(`temp-dir: could not remove ${runDir}\n`);
  };
}
