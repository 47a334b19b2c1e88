import { splitCommandLine } from './grammar.js';
import { commandRefusal } from './rules.js';
import type { WordValue } from './words.js';

/**
 * The restricted shell's policy (SPEC §11.1): a command line may run only when it parses as
 * plain commands joined by |, &&, || and ;, and every command (also those run by env, timeout,
 * nice, command, xargs and find -exec) passes its rule. Fails closed: anything not understood
 * is refused, with the word or option named.
 */

export type PolicyDecision = { allowed: true } | { allowed: false; reason: string };

/** Marks a word bash may expand into file names, so that rules never take it as a script or command. */
const GLOB_MARK = '\0';
/** Commands that run another command or count operands: a pattern there could become anything. */
const NO_PATTERNS = new Set(['env', 'timeout', 'nice', 'command', 'xargs', 'uniq', 'xxd', 'hostname', 'date', 'cd']);
const MAX_NESTING = 8;

/** Per-process files under /proc that hold no secrets (environ, mem, fd/ and the like do). */
const HARMLESS_PROCESS_FILES = new Set(['status', 'stat', 'statm', 'cmdline', 'comm', 'limits', 'io', 'cgroup', 'mounts', 'mountinfo', 'oom_score', 'sched', 'wchan', 'maps', 'loginuid']);

/** Words that reach other processes' environments, memory or open files through /proc. */
function sensitivePathRefusal(word: WordValue): string | null {
  if (/environ/i.test(word.value)) return `the word ${JSON.stringify(word.value)} refers to a process environment (secrets)`;
  const components = word.value.split('/');
  const proc = components.indexOf('proc');
  if (proc >= 0) {
    const [owner, file, ...deeper] = components.slice(proc + 1).filter((part) => part !== '');
    const perProcess = owner === undefined || /^(\d+|self|thread-self)$/.test(owner);
    if (perProcess && (file === undefined || deeper.length > 0 || !HARMLESS_PROCESS_FILES.has(file))) {
      return `the path ${JSON.stringify(word.value)} reaches into /proc processes (environments, memory and open files hold secrets); name a file such as /proc/PID/status`;
    }
  }
  if (word.glob && (components.includes('proc') || components.includes('..') || (word.value.startsWith('/') && /[*?[]/.test(components[1] ?? '')))) {
    return `the pattern ${JSON.stringify(word.value)} may reach /proc (process environments); name the files without a pattern`;
  }
  return null;
}

function checkArgv(argv: string[], depth: number): string | null {
  if (depth > MAX_NESTING) return 'commands nested too deeply';
  return commandRefusal(argv, { checkNested: (nested) => checkArgv(nested, depth + 1) });
}

export async function checkRestrictedCommand(commandLine: string): Promise<PolicyDecision> {
  const split = await splitCommandLine(commandLine);
  if (!split.ok) return { allowed: false, reason: split.reason };
  for (const command of split.commands) {
    const [name] = command.words;
    for (const word of command.words) {
      const why = sensitivePathRefusal(word);
      if (why) return { allowed: false, reason: why };
    }
    if (name?.glob && name.value !== '[') return { allowed: false, reason: `the command name ${JSON.stringify(name.value)} is a file pattern` };
    if (name && NO_PATTERNS.has(name.value)) {
      const pattern = command.words.find((word) => word.glob);
      if (pattern) return { allowed: false, reason: `${name.value}: the file pattern ${JSON.stringify(pattern.value)} is refused here (it could expand into a command or an extra operand)` };
    }
    const argv = command.words.map((word, index) => (word.glob && index > 0 ? GLOB_MARK + word.value : word.value));
    const why = checkArgv(argv, 0);
    if (why) return { allowed: false, reason: `${why.replaceAll(GLOB_MARK, '')} (in: ${command.text})` };
  }
  return { allowed: true };
}
