import { scanOptions } from './options.js';
import { SAFE_WITH_ANY_ARGUMENTS, type Rule, type RuleContext } from './rule-types.js';

/**
 * Commands that run other commands (docs/guide/restricted-shell.md): find -exec, xargs, env, timeout, nice and
 * `command`. What they run passes the same check, recursively. Where the arguments come from
 * data (xargs, find -exec), only commands harmless with any file name run, and the data must
 * be file names found on disk: find's start points are checked like a recursive read, and
 * xargs reads only from a names producer (find, grep -l, ls, git ls-files), because any other
 * input (printf, awk, sed) could spell /proc/PID/environ at run time.
 */

function runnerTargetRefusal(runner: string, argv: string[], context: RuleContext): string | null {
  const [command] = argv;
  if (command === undefined) return `${runner}: no command to run`;
  if (!SAFE_WITH_ANY_ARGUMENTS.has(command)) {
    return (
      `${runner}: may only run commands that are harmless whatever file names or input they are given (${[...SAFE_WITH_ANY_ARGUMENTS].join(', ')}); ` +
      `"${command}" is not one of them`
    );
  }
  return context.checkNested(argv, true);
}

/** find's expression starts at the first word that is an option, "(", "!" or ","; what comes before are start points. */
function findStartPoints(args: readonly string[]): { globals: string[]; roots: string[]; expression: string[] } {
  let i = 0;
  const globals: string[] = [];
  while (i < args.length && /^-[HLP]+$|^-D$|^-O\d*$/.test(args[i]!)) {
    globals.push(args[i]!);
    if (args[i] === '-D') globals.push(args[++i] ?? '');
    i += 1;
  }
  const roots: string[] = [];
  while (i < args.length && !/^[-(!,)]/.test(args[i]!)) roots.push(args[i++]!);
  return { globals, roots, expression: args.slice(i) };
}

const FIND_DENIED: Record<string, string> = {
  '-delete': 'it deletes files',
  '-fprint': 'it writes a file',
  '-fprint0': 'it writes a file',
  '-fprintf': 'it writes a file',
  '-fls': 'it writes a file',
  '-ok': 'it asks on a terminal',
  '-okdir': 'it asks on a terminal',
  '-files0-from': 'its start points would come from data (name them on the command line)',
};

/** Refuses find's start points when what it finds is read (by -exec or xargs): not /, /proc or inside. */
function findTreeRefusal(args: readonly string[], context: RuleContext): string | null {
  const { roots, expression } = findStartPoints(args);
  const staysOnFileSystem = expression.includes('-xdev') || expression.includes('-mount');
  return context.treeRefusal('find', roots.length > 0 ? roots : ['.'], { allowRoot: staysOnFileSystem });
}

/** `find`: no actions that delete or write; -exec/-execdir only run commands that are harmless with any file name. */
export const findRule: Rule = (args, context) => {
  let runs = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (FIND_DENIED[arg]) return `find: ${arg} is refused: ${FIND_DENIED[arg]}`;
    if (arg === '-exec' || arg === '-execdir') {
      let end = i + 2;
      while (end < args.length && args[end] !== ';' && !(args[end] === '+' && args[end - 1] === '{}')) end += 1;
      if (args[i + 1] === undefined || end >= args.length) return `find: ${arg} without its terminating ";" or "{} +"`;
      const why = runnerTargetRefusal('find', args.slice(i + 1, end), context);
      if (why) return why;
      runs = true;
      i = end;
    }
  }
  return runs ? findTreeRefusal(args, context) : null;
};

/** What a names producer may print: file names only (no -printf text, no -ls lines, no labels or formats). */
function namesProducerRefusal(argv: readonly string[], context: RuleContext, who = 'xargs'): string | null {
  const [name, ...args] = argv;
  switch (name) {
    case 'find': {
      const printing = args.find((arg) => /^-(f?printf?0?|f?ls|exec|execdir|ok|okdir)$/.test(arg) && arg !== '-print' && arg !== '-print0');
      if (printing) return `${who}: find feeding it may only print names (-print, -print0), not ${printing}`;
      return findTreeRefusal(args, context);
    }
    case 'grep':
    case 'egrep':
    case 'fgrep': {
      const listsNames = args.some((arg) => /^-[^-]*[lL]/.test(arg) || /^--files-with/.test(arg));
      if (!listsNames) return `${who}: ${name} feeding it must list file names (-l or -L)`;
      if (args.some((arg) => arg.startsWith('--lab'))) return `${who}: ${name} --label feeding it would name any file`;
      return null;
    }
    case 'rg':
      return args.some((arg) => /^-[^-]*l/.test(arg) || /^--files/.test(arg)) ? null : `${who}: rg feeding it must list file names (-l, --files)`;
    case 'ls':
      return args.every((arg) => !arg.startsWith('-') || /^-[1aAdrtSUXvR]+$/.test(arg))
        ? null
        : `${who}: ls feeding it may only use -1 -a -A -d -r -t -S -U -X -v -R (names only)`;
    case 'git': {
      const sub = args.indexOf('ls-files');
      if (sub < 0 || args.slice(0, sub).some((arg, i) => arg !== '-C' && args[i - 1] !== '-C'))
        return `${who}: of git, only "git [-C DIR] ls-files" may feed it`;
      const bad = args
        .slice(sub + 1)
        .find(
          (arg) =>
            arg.startsWith('-') && !/^(-[zcomdi]+|--(cached|others|modified|deleted|ignored|exclude-standard|full-name|recurse-submodules)|--)$/.test(arg),
        );
      return bad ? `${who}: git ls-files feeding it may not use ${bad} (names only)` : null;
    }
    default:
      return (
        `${who}: takes file names only from find, grep -l, rg -l, ls or git ls-files (directly or through head, tail, sort, uniq, tac or grep ` +
        `filters), not from ${name}: other commands could spell any path, such as another process's /proc/PID/environ`
      );
  }
}

/** Whether `args` are only options made of `letters` (values after `valueLetters`) and at most `maxOperands` operands. */
function onlyOptions(args: readonly string[], letters: string, valueLetters: string, maxOperands: number): boolean {
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('-') || arg === '-') {
      operands += 1;
      continue;
    }
    if (![...arg.slice(1)].every((letter) => letters.includes(letter) || /\d/.test(letter))) return false;
    if (valueLetters.includes(arg.at(-1)!)) i += 1;
  }
  return operands <= maxOperands;
}

/** Line filters that pass names through without making new ones (no file operands, no added text). */
function passesNamesThrough(argv: readonly string[]): boolean {
  const [name, ...args] = argv;
  switch (name) {
    case 'head':
    case 'tail':
      return onlyOptions(args, 'nz', 'n', 0);
    case 'sort':
      return onlyOptions(args, 'rufzVnbdik', 'k', 0);
    case 'uniq':
    case 'tac':
      return onlyOptions(args, 'uzdi', '', 0);
    case 'grep':
    case 'egrep':
    case 'fgrep':
      return onlyOptions(args, 'viEFxwze', 'e', args.some((arg) => /^-[a-zA-Z]*e$/.test(arg)) ? 0 : 1);
    default:
      return false;
  }
}

/** Commands that never print what is inside a file (names, sizes, hashes): they may take names from any input. */
const NAMES_ONLY = new Set([
  'echo',
  '[',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'test',
  'true',
  'false',
  'ls',
  'stat',
  'du',
  'wc',
  'md5sum',
  'sha1sum',
  'sha224sum',
  'sha256sum',
  'sha384sum',
  'sha512sum',
  'b2sum',
  'cksum',
]);

export const xargsRule: Rule = (args, context) => {
  const scanned = scanOptions('xargs', args, {
    stopAtOperand: true,
    shortWithValue: 'EILnPs',
    shortWithOptionalValue: 'eil',
    allowedShort: '0EeIiLlnPrstx',
    allowedLong: [
      '--null',
      '--eof',
      '--replace',
      '--max-lines',
      '--max-args',
      '--max-procs',
      '--max-chars',
      '--no-run-if-empty',
      '--verbose',
      '--exit',
      '--show-limits',
    ],
    longWithValue: ['--max-lines', '--max-args', '--max-procs', '--max-chars'],
    knownLong: ['--arg-file', '--delimiter', '--interactive', '--open-tty', '--process-slot-var'],
  });
  const command = scanned.operands.length > 0 ? scanned.operands : ['echo'];
  const replace =
    scanned.values.find(([option]) => option === '-I' || option === '--replace')?.[1] ??
    (scanned.short.has('i') || scanned.long.includes('--replace') ? '{}' : undefined);
  if (replace !== undefined && replace !== '') {
    if (command[0]!.includes(replace)) return 'xargs: the command name would come from the input';
    const spliced = command.find((arg) => arg.includes(replace) && arg !== replace);
    if (spliced) return `xargs: the replacement ${replace} must be a whole argument, not part of ${JSON.stringify(spliced)} (it could build any path)`;
  }
  const why = runnerTargetRefusal('xargs', command, context);
  return why ?? computedNamesRefusal('xargs', command[0]!, context.upstream, context);
};

/**
 * Whether `target` may take words made from the output of `chain` (a pipeline, its writer
 * first): commands that print only names, sizes or hashes take any; the others only file names
 * from a names producer (an empty chain: names matched by a file pattern).
 */
export function computedNamesRefusal(who: string, target: string, chain: readonly string[][], context: RuleContext): string | null {
  if (NAMES_ONLY.has(target)) return null;
  for (const producer of chain) {
    if (passesNamesThrough(producer)) continue;
    return namesProducerRefusal(producer, context, who);
  }
  return null;
}

/** `env` prints the (scrubbed) environment, or runs a checked command with a few harmless variables set. */
const SETTABLE_VARIABLES = /^(LC_[A-Z]+|LANG|LANGUAGE|TZ|COLUMNS|LINES|NO_COLOR|TERM)$/;
export const envRule: Rule = (args, context) => {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-i' || arg === '-0' || arg === '--ignore-environment' || arg === '--null' || arg === '-') continue;
    if (arg === '-u' || arg === '--unset') {
      i += 1;
      continue;
    }
    if (arg.startsWith('--unset=') || (arg.startsWith('-u') && arg.length > 2)) continue;
    if (arg === '--') {
      i += 1;
      break;
    }
    if (arg.startsWith('-')) return `env: the option ${arg} is refused (only -i, -0 and -u NAME are allowed)`;
    break;
  }
  for (; i < args.length && args[i]!.includes('='); i++) {
    const [name = '', value = ''] = [args[i]!.slice(0, args[i]!.indexOf('=')), args[i]!.slice(args[i]!.indexOf('=') + 1)];
    if (!SETTABLE_VARIABLES.test(name)) return `env: setting ${name} is refused (only LC_*, LANG, LANGUAGE, TZ, COLUMNS, LINES, NO_COLOR and TERM may be set)`;
    if (value.includes('/')) return `env: ${name} may not name a file (locale and time zone data are loaded from it)`;
  }
  const rest = args.slice(i);
  return rest.length === 0 ? null : context.checkNested(rest, context.dataDriven);
};

export const timeoutRule: Rule = (args, context) => {
  const scanned = scanOptions('timeout', args, {
    stopAtOperand: true,
    shortWithValue: 'sk',
    allowedShort: 'skv',
    allowedLong: ['--signal', '--kill-after', '--preserve-status', '--foreground', '--verbose'],
    longWithValue: ['--signal', '--kill-after'],
  });
  const [, ...command] = scanned.operands;
  return command.length === 0 ? 'timeout: needs a duration and a command' : context.checkNested(command, context.dataDriven);
};

export const niceRule: Rule = (args, context) => {
  const scanned = scanOptions('nice', args, {
    stopAtOperand: true,
    shortWithValue: 'n',
    allowedShort: 'n',
    allowedLong: ['--adjustment'],
    longWithValue: ['--adjustment'],
    numericShortIsValue: true,
  });
  return scanned.operands.length === 0 ? null : context.checkNested(scanned.operands, context.dataDriven);
};

export const commandRule: Rule = (args, context) => {
  const scanned = scanOptions('command', args, { stopAtOperand: true, allowedShort: 'pvV', allowedLong: [] });
  if (scanned.short.has('v') || scanned.short.has('V')) return null; // only describes
  return scanned.operands.length === 0 ? null : context.checkNested(scanned.operands, context.dataDriven);
};
