import { createRequire } from 'node:module';
import { accessSync, constants, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { delimiter, join } from 'node:path';
import { quarryHome } from '../../config/home.js';

/**
 * Whether bubblewrap can sandbox commands on this machine, checked once by running a trivial
 * command under exactly the flags the restricted shell uses (it can be installed yet unusable,
 * e.g. where user namespaces are disabled). Synchronous so that the bash tool's description,
 * which is read when the toolset is listed, can say whether the OS layer is active.
 *
 * bwrap is looked for in the usual places and on PATH (only absolute PATH entries). Setting
 * QUARRY_NO_BWRAP=1 turns the OS layer off, so that the policy layer can be seen (and tested)
 * on its own (docs/guide/restricted-shell.md).
 *
 * The probe costs a process start under new namespaces (30-45 ms), on every command that lists the
 * tools. A probe that succeeded is remembered in `$QUARRY_HOME/cache/bubblewrap.json`, keyed by
 * everything that usually decides the outcome: the binary (path, inode, size, times), the kernel
 * and boot, the user, the user-namespace switches in /proc/sys and the flags. Any change, or a file
 * that does not match, means a new probe. Only success is remembered: a stale entry can only make
 * quarry use bubblewrap where it no longer starts, and then the command fails (never runs outside
 * it); a failure is probed again every time, so installing or enabling bubblewrap is seen at once.
 */

export interface BubblewrapSupport {
  /** The bwrap binary, when it works here. */
  path: string | null;
  /** Why it is not used, when it is not. */
  reason: string;
  probeMs: number;
  /** Whether the answer came from the cache file rather than a probe. */
  cached?: boolean;
}

const FIXED_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];
/** The environment variable that turns the OS layer off. */
export const NO_BWRAP_VARIABLE = 'QUARRY_NO_BWRAP';
const cache = new Map<string, BubblewrapSupport>();

/** Where bwrap may be: the fixed places first, then every absolute PATH entry, each once. */
export function bubblewrapCandidates(pathVariable = process.env.PATH ?? ''): string[] {
  const onPath = pathVariable
    .split(delimiter)
    .filter((dir) => dir.startsWith('/'))
    .map((dir) => join(dir, 'bwrap'));
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

/** Kernel switches that decide whether unprivileged user namespaces (and so bwrap) work. */
const USERNS_SWITCHES = [
  '/proc/sys/kernel/unprivileged_userns_clone',
  '/proc/sys/user/max_user_namespaces',
  '/proc/sys/kernel/apparmor_restrict_unprivileged_userns',
  '/proc/sys/kernel/random/boot_id',
];

function readOr(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return '-';
  }
}

/** What a remembered success depends on; null when the binary cannot be examined. */
function cacheKey(path: string, sandboxFlags: readonly string[]): string | null {
  try {
    const stat = statSync(path);
    return JSON.stringify({
      path,
      dev: stat.dev,
      ino: stat.ino,
      size: stat.size,
      mtime: stat.mtimeMs,
      ctime: stat.ctimeMs,
      kernel: release(),
      uid: process.getuid?.() ?? -1,
      switches: USERNS_SWITCHES.map(readOr),
      flags: sandboxFlags,
    });
  } catch {
    return null;
  }
}

export function bubblewrapCacheFile(): string {
  return join(quarryHome(), 'cache', 'bubblewrap.json');
}

/** The remembered success for one of `candidates`, if its key still matches. */
function rememberedSuccess(candidates: readonly string[], sandboxFlags: readonly string[]): string | null {
  let entry: { key?: unknown; path?: unknown };
  try {
    entry = JSON.parse(readFileSync(bubblewrapCacheFile(), 'utf8')) as { key?: unknown; path?: unknown };
  } catch {
    return null;
  }
  if (typeof entry.path !== 'string' || !candidates.includes(entry.path) || !isExecutable(entry.path)) return null;
  // Only the first working candidate would be chosen by a probe: an earlier one that now works must win.
  return entry.key === cacheKey(entry.path, sandboxFlags) ? entry.path : null;
}

function rememberSuccess(path: string, sandboxFlags: readonly string[]): void {
  const key = cacheKey(path, sandboxFlags);
  if (!key) return;
  const file = bubblewrapCacheFile();
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(join(quarryHome(), 'cache'), { recursive: true });
    writeFileSync(temporary, `${JSON.stringify({ path, key })}\n`);
    renameSync(temporary, file);
  } catch {
    // A home that cannot be written only means probing again next time.
    try {
      unlinkSync(temporary);
    } catch {
      // not created
    }
  }
}

/** Runs /bin/true under exactly the restricted shell's flags; null when it worked, else why not. */
function probeFailure(path: string, sandboxFlags: readonly string[]): string | null {
  // node:child_process is loaded here, on the first probe, not when quarry starts.
  const { spawnSync } = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  const run = spawnSync(path, [...sandboxFlags, '--', '/bin/true'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
  return run.status === 0 ? null : String(run.stderr ?? run.error ?? '').trim() || `exit ${run.status}`;
}

export function probeBubblewrap(sandboxFlags: readonly string[]): BubblewrapSupport {
  const started = performance.now();
  if (osLayerDisabled()) return { path: null, reason: `turned off by ${NO_BWRAP_VARIABLE}=${process.env[NO_BWRAP_VARIABLE]}`, probeMs: 0 };
  const candidates = bubblewrapCandidates();
  const key = candidates.join('\0');
  const known = cache.get(key);
  if (known) return known;
  const executable = candidates.filter(isExecutable);
  let found: BubblewrapSupport;
  const remembered = executable[0] ? rememberedSuccess(executable.slice(0, 1), sandboxFlags) : null;
  if (remembered) {
    found = { path: remembered, reason: '', probeMs: performance.now() - started, cached: true };
  } else if (executable.length === 0) {
    found = {
      path: null,
      reason: 'bubblewrap (bwrap) is not installed (looked in /usr/bin, /usr/local/bin, /bin and on PATH)',
      probeMs: performance.now() - started,
    };
  } else {
    let firstFailure = '';
    let working: string | null = null;
    for (const candidate of executable) {
      const failure = probeFailure(candidate, sandboxFlags);
      if (failure === null) {
        working = candidate;
        break;
      }
      firstFailure ||= failure;
    }
    if (working) rememberSuccess(working, sandboxFlags);
    found = working
      ? { path: working, reason: '', probeMs: performance.now() - started }
      : { path: null, reason: `bubblewrap is installed but cannot sandbox here: ${firstFailure}`, probeMs: performance.now() - started };
  }
  cache.set(key, found);
  return found;
}
