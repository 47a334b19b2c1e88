import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Whether bubblewrap can sandbox commands on this machine, checked once by running a trivial
 * command under exactly the flags the restricted shell uses (it can be installed yet unusable,
 * e.g. where user namespaces are disabled). Synchronous so that the bash tool's description,
 * which is read when the toolset is listed, can say whether the OS layer is active.
 *
 * bwrap is looked for in the usual places and on PATH (only absolute PATH entries). Setting
 * QUARRY_NO_BWRAP=1 turns the OS layer off, so that the policy layer can be seen (and tested)
 * on its own (README: the restricted shell).
 */

export interface BubblewrapSupport {
  /** The bwrap binary, when it works here. */
  path: string | null;
  /** Why it is not used, when it is not. */
  reason: string;
  probeMs: number;
}

const FIXED_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
/** The environment variable that turns the OS layer off. */
export const NO_BWRAP_VARIABLE = 'QUARRY_NO_BWRAP';
const cache = new Map<string, BubblewrapSupport>();

/** Where bwrap may be: the fixed places first, then every absolute PATH entry, each once. */
export function bubblewrapCandidates(pathVariable = process.env.PATH ?? ''): string[] {
  const onPath = pathVariable.split(delimiter).filter((dir) => dir.startsWith('/')).map((dir) => join(dir, 'bwrap'));
  return [...new Set([...FIXED_CANDIDATES, ...onPath])];
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function osLayerDisabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env[NO_BWRAP_VARIABLE];
  return value !== undefined && value !== '' && value !== '0';
}

export function probeBubblewrap(sandboxFlags: readonly string[]): BubblewrapSupport {
  const started = performance.now();
  if (osLayerDisabled()) return { path: null, reason: `turned off by ${NO_BWRAP_VARIABLE}=${process.env[NO_BWRAP_VARIABLE]}`, probeMs: 0 };
  const candidates = bubblewrapCandidates();
  const key = candidates.join('\0');
  const known = cache.get(key);
  if (known) return known;
  const path = candidates.find((candidate) => isExecutable(candidate) && spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) ?? null;
  let found: BubblewrapSupport;
  if (!path) {
    found = { path: null, reason: 'bubblewrap (bwrap) is not installed (looked in /usr/bin, /usr/local/bin, /bin and on PATH)', probeMs: performance.now() - started };
  } else {
    const run = spawnSync(path, [...sandboxFlags, '--', '/bin/true'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
    found = run.status === 0
      ? { path, reason: '', probeMs: performance.now() - started }
      : { path: null, reason: `bubblewrap is installed but cannot sandbox here: ${String(run.stderr ?? run.error ?? '').trim() || `exit ${run.status}`}`, probeMs: performance.now() - started };
  }
  cache.set(key, found);
  return found;
}
