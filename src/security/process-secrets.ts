import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { isSecretVariable } from './secret-variables.js';

/**
 * Hides quarry's secrets from other processes of the same user (docs/guide/restricted-shell.md,
 * secrets). On Linux, /proc/PID/environ and /proc/PID/cmdline show the bytes the process was
 * started with, whatever the program does to its environment later: `cat /proc/<quarry>/environ`
 * would print every API key and database password. Node 20 cannot call prctl(PR_SET_DUMPABLE)
 * without native code, but a process may write its own memory through /proc/self/mem:
 *
 * 1. each secret variable (the names and values the restricted shell removes, isSecretVariable)
 *    is set again through process.env, so the C environment points to a copy on the heap;
 * 2. the original bytes of its value, in the block /proc/self/stat names (env_start..env_end),
 *    are overwritten with `*`; so are passwords in URLs and the value of --token in the
 *    arguments (arg_start..arg_end).
 *
 * quarry keeps using the values (process.env reads the copies, child processes get them as
 * before). Where /proc/self/mem cannot be written (a kernel that forbids it, not Linux) nothing
 * changes and the other layers stay: the restricted shell refuses /proc reads and runs under
 * bubblewrap, where other processes' /proc entries are not visible. Returns what was hidden.
 */
export function hideProcessSecrets(): { variables: number; arguments: number } {
  const hidden = { variables: 0, arguments: 0 };
  if (process.platform !== 'linux') return hidden;
  let stat: string;
  let environ: Buffer;
  let cmdline: Buffer;
  try {
    stat = readFileSync('/proc/self/stat', 'utf8');
    environ = readFileSync('/proc/self/environ');
    cmdline = readFileSync('/proc/self/cmdline');
  } catch {
    return hidden;
  }
  // Fields after "(comm)": the name may hold spaces and parentheses, so count from the last ")".
  const fields = stat
    .slice(stat.lastIndexOf(')') + 2)
    .trim()
    .split(' ');
  const field = (n: number) => Number(fields[n - 3]);
  const [argStart, argEnd, envStart, envEnd] = [field(48), field(49), field(50), field(51)];
  if (![argStart, argEnd, envStart, envEnd].every((value) => Number.isSafeInteger(value) && value > 0)) return hidden;

  const writes: Array<{ at: number; length: number }> = [];
  if (envEnd - envStart === environ.length) {
    for (const { start, end } of entries(environ)) {
      // Offsets are bytes: find "=" in the bytes (a value need not be valid UTF-8).
      const equals = environ.indexOf(0x3d, start);
      if (equals <= start || equals >= end) continue;
      const name = environ.toString('utf8', start, equals);
      const value = process.env[name];
      if (value === undefined || !isSecretVariable(name, value)) continue;
      // A copy on the heap first: from here on the C environment no longer points at these bytes.
      process.env[name] = value;
      const valueStart = equals + 1;
      if (end > valueStart) writes.push({ at: envStart + valueStart, length: end - valueStart });
      hidden.variables++;
    }
  }
  if (argEnd - argStart === cmdline.length) {
    let tokenNext = false;
    for (const { start, end } of entries(cmdline)) {
      const text = cmdline.toString('latin1', start, end);
      if (tokenNext) {
        writes.push({ at: argStart + start, length: end - start });
        hidden.arguments++;
      } else if (text.startsWith('--token=')) {
        writes.push({ at: argStart + start + 8, length: end - start - 8 });
        hidden.arguments++;
      } else {
        // scheme://user:PASSWORD@host: only the password.
        for (const match of text.matchAll(/[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:([^/\s@]+)@/gi)) {
          const at = match.index + match[0].length - 1 - match[1]!.length;
          writes.push({ at: argStart + start + at, length: match[1]!.length });
          hidden.arguments++;
        }
      }
      tokenNext = text === '--token';
    }
  }
  if (writes.length === 0) return hidden;
  let fd: number;
  try {
    fd = openSync('/proc/self/mem', 'r+');
  } catch {
    return { variables: 0, arguments: 0 };
  }
  try {
    for (const { at, length } of writes) writeSync(fd, Buffer.alloc(length, '*'), 0, length, at);
  } catch {
    return { variables: 0, arguments: 0 };
  } finally {
    closeSync(fd);
  }
  return hidden;
}

/** The NUL-terminated entries of an environ or cmdline block, as byte ranges. */
function* entries(block: Buffer): Generator<{ start: number; end: number }> {
  let start = 0;
  while (start < block.length) {
    let end = block.indexOf(0, start);
    if (end < 0) end = block.length;
    yield { start, end };
    start = end + 1;
  }
}
