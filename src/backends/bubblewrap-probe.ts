import { spawnSync } from 'node:child_process';

/**
 * Whether bubblewrap can sandbox commands on this machine, checked once by running a trivial
 * command under exactly the flags the restricted shell uses (it can be installed yet unusable,
 * e.g. where user namespaces are disabled). Synchronous so that the bash tool's description,
 * which is read when the toolset is listed, can say whether the OS layer is active.
 */

export interface BubblewrapSupport {
  /** The bwrap binary, when it works here. */
  path: string | null;
  /** Why it is not used, when it is not. */
  reason: string;
  probeMs: number;
}

const CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
let cached: BubblewrapSupport | undefined;

export function probeBubblewrap(sandboxFlags: readonly string[]): BubblewrapSupport {
  if (cached) return cached;
  const started = performance.now();
  const path = CANDIDATES.find((candidate) => spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) ?? null;
  if (!path) {
    cached = { path: null, reason: 'bubblewrap (bwrap) is not installed', probeMs: performance.now() - started };
    return cached;
  }
  const run = spawnSync(path, [...sandboxFlags, '--', '/bin/true'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
  cached = run.status === 0
    ? { path, reason: '', probeMs: performance.now() - started }
    : { path: null, reason: `bubblewrap is installed but cannot sandbox here: ${String(run.stderr ?? run.error ?? '').trim() || `exit ${run.status}`}`, probeMs: performance.now() - started };
  return cached;
}
