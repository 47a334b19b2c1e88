import { secretLocationOf, treeHoldsSecrets } from '../../../security/secret-files.js';
import { homedir } from 'node:os';
import { posix } from 'node:path';

/**
 * Where the words of a command line lead on the real file system. Other processes'
 * environments (/proc/PID/environ: quarry's own API keys) are reachable through symlinks
 * (/dev/fd/../../PID), `cd -P`, file patterns, recursion from / and names computed at run time,
 * so spelling checks are not enough: every word that could be a path is resolved the way the
 * kernel would (symlinks first, then ".."), and refused when it lands in a process's /proc
 * directory or, for commands that read whole trees, at / or /proc.
 */

/** Resolves an absolute path the way the kernel would; null when it does not exist. */
export type RealPath = (path: string) => Promise<string | null>;

export interface Resolved {
  /** The physical path (symlinks and ".." resolved); a missing tail is appended as written. */
  path: string;
  exists: boolean;
}

/** Resolves `raw` against `cwd` component by component, symlinks before "..", as the kernel does. */
export async function resolvePhysical(raw: string, cwd: string, realpath: RealPath): Promise<Resolved> {
  const absolute = raw.startsWith('/') ? raw : `${cwd}/${raw}`;
  const whole = await realpath(absolute);
  if (whole !== null) return { path: whole, exists: true };
  // The common case: a name that does not exist in a directory that does.
  const base = posix.basename(absolute);
  if (base !== '..' && base !== '.' && base !== '') {
    const parent = await realpath(posix.dirname(absolute));
    if (parent !== null) return { path: posix.join(parent, base), exists: false };
  }
  let current = '/';
  const parts = absolute.split('/').filter((part) => part !== '' && part !== '.');
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const next = part === '..' ? posix.dirname(current) : posix.join(current, part);
    const real = await realpath(next);
    if (real === null) return { path: posix.join(current, ...parts.slice(i)), exists: false };
    current = real;
  }
  return { path: current, exists: true };
}

/** `cd -L` (bash's default): ".." is taken off the text first, then the result is resolved. */
export async function resolveLogical(raw: string, cwd: string, realpath: RealPath): Promise<Resolved> {
  return resolvePhysical(posix.normalize(raw.startsWith('/') ? raw : `${cwd}/${raw}`), '/', realpath);
}

/** Per-process files under /proc/PID that hold no secrets (environ, mem, fd/, task/ and the like do). */
const HARMLESS_PROCESS_FILES = new Set([
  'status',
  'stat',
  'statm',
  'cmdline',
  'comm',
  'limits',
  'io',
  'cgroup',
  'mounts',
  'mountinfo',
  'oom_score',
  'sched',
  'wchan',
  'maps',
  'loginuid',
]);
/** System-wide /proc entries that may be read (kcore, kmem, keys, sysrq-trigger and the rest may not). */
const READABLE_PROC_ENTRIES = new Set([
  'cpuinfo',
  'meminfo',
  'loadavg',
  'uptime',
  'version',
  'stat',
  'mounts',
  'filesystems',
  'partitions',
  'diskstats',
  'vmstat',
  'swaps',
  'cmdline',
  'devices',
  'interrupts',
  'modules',
  'zoneinfo',
  'buddyinfo',
  'softirqs',
  'pressure',
  'net',
  'sys',
  'cgroups',
  'crypto',
  'locks',
  'misc',
  'consoles',
  'execdomains',
  'kallsyms',
  'schedstat',
  'slabinfo',
]);
/** Devices that expose memory or hardware ports (as root: other processes' memory). */
const MEMORY_DEVICES = new Set(['/dev/mem', '/dev/kmem', '/dev/port']);

export type PathUse = 'read' | 'tree';

/**
 * Why a resolved path may not be used, or null. 'read' is a path a command opens or lists;
 * 'tree' a place from which a command reads everything below (grep -r, rg, diff -r, find -exec,
 * cd, git -C), where / and /proc themselves are refused too.
 */
export function resolvedPathRefusal(word: string, resolved: Resolved, use: PathUse): string | null {
  const { path } = resolved;
  if (MEMORY_DEVICES.has(path)) return `the path ${JSON.stringify(word)} is a memory device`;
  if (use === 'tree' && (path === '/' || path === '/proc')) {
    return (
      `${JSON.stringify(word)} is ${path}: reading everything below it reaches /proc (other processes' environments hold secrets); name the ` +
      `directories to search`
    );
  }
  const secret = use === 'tree' ? treeHoldsSecrets(path) : secretLocationOf(path);
  if (secret) {
    return use === 'tree'
      ? `reading everything below ${JSON.stringify(word)} would read ${secret.path}, which holds credentials; name the directories to search`
      : `the path ${JSON.stringify(word)} leads to ${secret.path}, which holds credentials quarry never shows to the model`;
  }
  if (!path.startsWith('/proc/')) return null;
  const [entry, file, ...deeper] = path.slice('/proc/'.length).split('/');
  const perProcess = /^(\d+|self|thread-self)$/.test(entry ?? '');
  if (!perProcess && !resolved.exists) return null; // nothing there to read
  const why =
    `the path ${JSON.stringify(word)} leads to ${path}, inside /proc (process environments, memory and open files hold secrets); only files such ` +
    `as /proc/PID/status or /proc/meminfo may be read`;
  if (!perProcess) return READABLE_PROC_ENTRIES.has(entry ?? '') ? null : why;
  if (file === undefined) return use === 'tree' ? why : null;
  return deeper.length === 0 && HARMLESS_PROCESS_FILES.has(file) ? null : why;
}

/** Upper bound on path candidates checked per command line: more is refused rather than half-checked. */
export const MAX_PATH_CANDIDATES = 2000;

/**
 * Strings inside a word that a program could open as a path: the word itself, the value after
 * "=", an attached short-option value (-fFILE), every whitespace- or quote-separated token
 * (sed and awk scripts name files inside the script), and every tail that starts at a "/".
 */
export function pathCandidates(word: string): string[] {
  const found = new Set<string>([word]);
  const eq = word.indexOf('=');
  if (eq >= 0) found.add(word.slice(eq + 1));
  if (/^-[^-]/.test(word)) found.add(word.slice(2));
  for (const token of word.split(/[\s;'"=,:()<>|&]+/)) {
    if (token === '') continue;
    found.add(token);
    for (let i = token.indexOf('/', 1); i > 0; i = token.indexOf('/', i + 1)) found.add(token.slice(i));
  }
  found.delete('');
  return withHome(found);
}

/** The shell expands a leading "~" to the home directory: check that path too. */
function withHome(found: Set<string>): string[] {
  for (const candidate of [...found]) if (candidate === '~' || candidate.startsWith('~/')) found.add(homedir() + candidate.slice(1));
  return [...found];
}

/** The strings that could name the tree a recursive command reads: the word, its "=" value and attached value. */
export function treeCandidates(word: string): string[] {
  const found = new Set<string>([word]);
  const eq = word.indexOf('=');
  if (eq >= 0) found.add(word.slice(eq + 1));
  if (/^-[^-]/.test(word)) found.add(word.slice(2));
  found.delete('');
  return withHome(found);
}
