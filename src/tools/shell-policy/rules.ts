import { awkProgramRefusal } from './awk.js';
import { OptionRefusal, scanOptions, type OptionSpec, type ScannedOptions } from './options.js';
import { sedScriptRefusal } from './sed.js';

/**
 * The command layer of the restricted shell (SPEC §11.1): a closed list of inspection commands,
 * each with the options and operands that would write, delete or run programs refused.
 * A rule returns null when the command may run, or the reason it may not.
 */

export interface RuleContext {
  /** Checks a command that this one runs (env CMD, timeout CMD, nice CMD) with all the rules. */
  checkNested(argv: string[]): string | null;
}

type Rule = (args: string[], context: RuleContext) => string | null;

/**
 * Commands that are harmless whatever arguments follow: the only ones xargs and find -exec may
 * run, since there the arguments come from data (file names, input lines) nobody has checked.
 */
export const SAFE_WITH_ANY_ARGUMENTS = new Set([
  'cat', 'head', 'tail', 'grep', 'egrep', 'fgrep', 'wc', 'ls', 'stat', 'du', 'md5sum', 'sha1sum',
  'sha224sum', 'sha256sum', 'sha384sum', 'sha512sum', 'b2sum', 'cksum', 'basename', 'dirname',
  'realpath', 'readlink', 'echo', 'test', 'nl', 'od', 'hexdump', 'strings', 'cmp', 'zcat',
  'bzcat', 'xzcat', 'tac', 'rev', 'cut', 'tr', 'column', 'true', 'false',
]);

/** Read-only commands whose every option only changes what is printed. */
const ANY_ARGUMENTS = [
  ...SAFE_WITH_ANY_ARGUMENTS, 'diff', 'comm', 'df', 'paste', 'join', 'fold', 'fmt', 'expand',
  'unexpand', 'seq', 'whoami', 'id', 'groups', 'uname', 'uptime', 'nproc', 'free', 'pwd', 'which',
  'type', 'printenv', 'locale', 'cal', 'sleep', 'base64', 'numfmt', 'jq', 'zipinfo', 'pgrep',
  'lsblk', 'getent', 'more', '[', 'du',
];

/** Why some well-known commands are never allowed, for a refusal that says why. */
const NEVER: Array<[string[], string]> = [
  [['sh', 'bash', 'dash', 'zsh', 'ksh', 'fish', 'csh', 'tcsh', 'busybox'], 'shells run arbitrary commands'],
  [['python', 'python2', 'python3', 'perl', 'ruby', 'node', 'nodejs', 'deno', 'bun', 'php', 'lua', 'tclsh', 'Rscript', 'java', 'osascript'], 'interpreters run arbitrary programs'],
  [['sudo', 'su', 'doas', 'pkexec', 'runuser', 'chroot', 'nsenter', 'unshare', 'setsid'], 'it changes privileges or isolation'],
  [['vi', 'vim', 'nvim', 'nano', 'emacs', 'ed', 'ex', 'pico', 'joe', 'mcedit'], 'editors write files and need a terminal'],
  [['man', 'info'], 'it runs a pager and formatters'],
  [['eval', 'exec', 'source', '.', 'builtin', 'trap', 'alias', 'enable', 'set', 'shopt', 'export', 'read', 'mapfile'], 'this shell builtin can run code or change the shell'],
  [['rm', 'rmdir', 'mv', 'cp', 'dd', 'tee', 'touch', 'mkdir', 'ln', 'chmod', 'chown', 'chgrp', 'truncate', 'shred', 'install', 'split', 'csplit', 'patch', 'rsync', 'scp', 'sftp', 'ssh', 'curl', 'wget', 'nc', 'ncat', 'socat', 'telnet', 'ftp', 'kill', 'pkill', 'killall', 'systemctl', 'service', 'reboot', 'shutdown', 'mount', 'umount', 'crontab', 'at', 'make', 'npm', 'pip', 'apt', 'apt-get', 'dpkg', 'docker', 'kubectl', 'mysql', 'psql', 'sqlite3', 'watch', 'script', 'screen', 'tmux', 'stdbuf', 'ionice', 'parallel'], 'it can change files, processes or other systems'],
];

const NEVER_REASON = new Map<string, string>(NEVER.flatMap(([names, why]) => names.map((name) => [name, why] as [string, string])));

function withOptions(command: string, spec: OptionSpec, after?: (scanned: ScannedOptions, args: string[]) => string | null): Rule {
  return (args) => {
    const scanned = scanOptions(command, args, spec);
    return after ? after(scanned, args) : null;
  };
}

function maxOperands(command: string, max: number, why: string, spec: OptionSpec = {}): Rule {
  return withOptions(command, spec, ({ operands }) => (operands.length > max ? `${command}: at most ${max} operand${max === 1 ? '' : 's'} (${why})` : null));
}

/** `find`: no actions that delete or write; -exec/-execdir only run commands that are harmless with any file name. */
const findRule: Rule = (args) => {
  const denied: Record<string, string> = {
    '-delete': 'it deletes files', '-fprint': 'it writes a file', '-fprint0': 'it writes a file',
    '-fprintf': 'it writes a file', '-fls': 'it writes a file', '-ok': 'it asks on a terminal', '-okdir': 'it asks on a terminal',
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (denied[arg]) return `find: ${arg} is refused: ${denied[arg]}`;
    if (arg === '-exec' || arg === '-execdir') {
      const command = args[i + 1];
      let end = i + 2;
      while (end < args.length && args[end] !== ';' && !(args[end] === '+' && args[end - 1] === '{}')) end += 1;
      if (command === undefined || end >= args.length) return `find: ${arg} without its terminating ";" or "{} +"`;
      const why = runnerTargetRefusal('find', command);
      if (why) return why;
      i = end;
    }
  }
  return null;
};

function runnerTargetRefusal(runner: string, command: string): string | null {
  if (SAFE_WITH_ANY_ARGUMENTS.has(command)) return null;
  return `${runner}: may only run commands that are harmless whatever file names or input they are given (${[...SAFE_WITH_ANY_ARGUMENTS].join(', ')}); "${command}" is not one of them`;
}

const xargsRule: Rule = (args) => {
  const scanned = scanOptions('xargs', args, {
    stopAtOperand: true,
    shortWithValue: 'adEILnPs', shortWithOptionalValue: 'eil',
    allowedShort: '0adEeIiLlnPrstx',
    allowedLong: ['--null', '--arg-file', '--delimiter', '--eof', '--replace', '--max-lines', '--max-args', '--max-procs', '--max-chars', '--no-run-if-empty', '--verbose', '--exit', '--show-limits'],
    longWithValue: ['--arg-file', '--delimiter', '--max-lines', '--max-args', '--max-procs', '--max-chars'],
  });
  const [command] = scanned.operands;
  if (command === undefined) return null; // runs echo
  const replace = scanned.values.find(([option]) => option === '-I' || option === '--replace')?.[1] ?? (scanned.short.has('i') ? '{}' : undefined);
  if (replace !== undefined && replace !== '' && command.includes(replace)) return 'xargs: the command name would come from the input';
  return runnerTargetRefusal('xargs', command);
};

/** `env` prints the (scrubbed) environment, or runs a checked command with a few harmless variables set. */
const SETTABLE_VARIABLES = /^(LC_[A-Z]+|LANG|LANGUAGE|TZ|COLUMNS|LINES|NO_COLOR|TERM)$/;
const envRule: Rule = (args, context) => {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-i' || arg === '-0' || arg === '--ignore-environment' || arg === '--null' || arg === '-') continue;
    if (arg === '-u' || arg === '--unset') { i += 1; continue; }
    if (arg.startsWith('--unset=') || (arg.startsWith('-u') && arg.length > 2)) continue;
    if (arg === '--') { i += 1; break; }
    if (arg.startsWith('-')) return `env: the option ${arg} is refused (only -i, -0 and -u NAME are allowed)`;
    break;
  }
  for (; i < args.length && args[i]!.includes('='); i++) {
    const name = args[i]!.slice(0, args[i]!.indexOf('='));
    if (!SETTABLE_VARIABLES.test(name)) return `env: setting ${name} is refused (only LC_*, LANG, LANGUAGE, TZ, COLUMNS, LINES, NO_COLOR and TERM may be set)`;
  }
  const rest = args.slice(i);
  return rest.length === 0 ? null : context.checkNested(rest);
};

const timeoutRule: Rule = (args, context) => {
  const scanned = scanOptions('timeout', args, {
    stopAtOperand: true, shortWithValue: 'sk', allowedShort: 'skv',
    allowedLong: ['--signal', '--kill-after', '--preserve-status', '--foreground', '--verbose'], longWithValue: ['--signal', '--kill-after'],
  });
  const [, ...command] = scanned.operands;
  return command.length === 0 ? 'timeout: needs a duration and a command' : context.checkNested(command);
};

const niceRule: Rule = (args, context) => {
  const scanned = scanOptions('nice', args, { stopAtOperand: true, shortWithValue: 'n', allowedShort: 'n', allowedLong: ['--adjustment'], longWithValue: ['--adjustment'], numericShortIsValue: true });
  return scanned.operands.length === 0 ? null : context.checkNested(scanned.operands);
};

const commandRule: Rule = (args, context) => {
  const scanned = scanOptions('command', args, { stopAtOperand: true, allowedShort: 'pvV', allowedLong: [] });
  if (scanned.short.has('v') || scanned.short.has('V')) return null; // only describes
  return scanned.operands.length === 0 ? null : context.checkNested(scanned.operands);
};

const SED_VALUES = 'elf';
const sedRule: Rule = (args) => {
  const scanned = scanOptions('sed', args, {
    shortWithValue: SED_VALUES,
    deniedShort: { i: 'it edits files in place', f: 'a script file cannot be checked' },
    deniedLong: { '--in-place': 'it edits files in place', '--file': 'a script file cannot be checked' },
    longWithValue: ['--expression', '--line-length'],
  });
  const expressions = scanned.values.filter(([option]) => option === '-e' || option === '--expression').map(([, value]) => value);
  const script = expressions.length > 0 ? expressions.join('\n') : scanned.operands[0];
  if (script === undefined) return 'sed: no script';
  return sedScriptRefusal(script);
};

const awkRule: Rule = (args) => {
  const scanned = scanOptions('awk', args, {
    stopAtOperand: true, shortWithValue: 'Fv', allowedShort: 'Fv', allowedLong: ['--field-separator', '--assign'], longWithValue: ['--field-separator', '--assign'],
  });
  const program = scanned.operands[0];
  if (program === undefined) return 'awk: no program (program files given with -f cannot be checked)';
  return awkProgramRefusal(program);
};

const sortRule = withOptions('sort', {
  shortWithValue: 'ktST',
  deniedShort: { o: 'it writes the output to a file', T: 'it writes temporary files to a directory' },
  deniedLong: { '--output': 'it writes the output to a file', '--compress-program': 'it runs a program', '--temporary-directory': 'it writes temporary files to a directory', '--random-source': 'reads a file as randomness' },
  longWithValue: ['--key', '--field-separator', '--buffer-size', '--parallel', '--batch-size', '--files0-from', '--sort'],
});

const rgRule = withOptions('rg', {
  shortWithValue: 'ABCEefgjmMrtTd',
  deniedShort: { z: 'it runs decompression programs' },
  deniedLong: { '--pre': 'it runs a program on every file', '--pre-glob': 'it configures --pre', '--search-zip': 'it runs decompression programs', '--hostname-bin': 'it runs a program' },
  longWithValue: ['--after-context', '--before-context', '--context', '--encoding', '--regexp', '--file', '--glob', '--iglob', '--max-count', '--max-depth', '--max-columns', '--replace', '--type', '--type-not', '--type-add', '--sort', '--sortr', '--threads', '--max-filesize', '--path-separator', '--colors', '--color', '--ignore-file', '--field-match-separator', '--field-context-separator', '--context-separator', '--dfa-size-limit', '--regex-size-limit', '--engine', '--generate'],
});

const gzipRule = (command: string): Rule => withOptions(command, {
  shortWithValue: 'S', allowedShort: 'cdfhlnNqrtvkS123456789L',
  allowedLong: ['--stdout', '--to-stdout', '--decompress', '--uncompress', '--list', '--test', '--verbose', '--quiet', '--force', '--keep', '--name', '--no-name', '--recursive', '--suffix', '--fast', '--best', '--help', '--version', '--license'],
  longWithValue: ['--suffix'],
}, ({ short, long }) => (
  short.has('c') || short.has('l') || short.has('t') || long.some((l) => ['--stdout', '--to-stdout', '--list', '--test', '--help', '--version', '--license'].includes(l))
    ? null : `${command}: only listing (-l), testing (-t) or writing to stdout (-c) is allowed; otherwise it replaces files`));

/** tar: listing only; old-style first arguments ("tzvf") are read like option clusters. */
const TAR_VALUE_LETTERS = 'fCTX';
const tarRule: Rule = (args) => {
  let normalized = [...args];
  const first = args[0];
  if (first !== undefined && !first.startsWith('-')) {
    // Old style: each value letter of the first word takes the next argument, in order.
    const rest = args.slice(1);
    const expanded: string[] = [];
    for (const letter of first) {
      expanded.push(`-${letter}`);
      if (TAR_VALUE_LETTERS.includes(letter)) {
        const value = rest.shift();
        if (value === undefined) return `tar: the option ${letter} needs a value`;
        expanded.push(value);
      }
    }
    normalized = [...expanded, ...rest];
  }
  const scanned = scanOptions('tar', normalized, {
    shortWithValue: TAR_VALUE_LETTERS, allowedShort: `tvzjJaZhi${TAR_VALUE_LETTERS}`,
    allowedLong: ['--list', '--verbose', '--file', '--gzip', '--gunzip', '--ungzip', '--bzip2', '--xz', '--lzma', '--zstd', '--auto-compress', '--directory', '--files-from', '--exclude', '--exclude-from', '--wildcards', '--no-wildcards', '--anchored', '--no-anchored', '--ignore-case', '--numeric-owner', '--full-time', '--utc', '--force-local', '--null', '--quoting-style', '--show-transformed-names', '--occurrence', '--dereference', '--ignore-zeros', '--exclude-vcs', '--warning', '--quiet', '--totals', '--block-number', '--strip-components', '--transform', '--xform', '--help', '--version'],
    longWithValue: ['--file', '--directory', '--files-from', '--exclude', '--exclude-from', '--quoting-style', '--warning', '--strip-components', '--transform', '--xform'],
  });
  if (!scanned.short.has('t') && !scanned.long.includes('--list') && !scanned.long.includes('--help') && !scanned.long.includes('--version')) {
    return 'tar: only listing (-t/--list) is allowed';
  }
  const archive = scanned.values.find(([option]) => option === '-f' || option === '--file')?.[1];
  if (archive?.includes(':') && !scanned.long.includes('--force-local')) return 'tar: an archive name with ":" means a remote archive (it runs rsh/ssh)';
  return null;
};

const unzipRule = withOptions('unzip', { allowedShort: 'lvtpcqCzZ12shmM', allowedLong: [] }, ({ short }) => (
  ['l', 'v', 't', 'p', 'c', 'z', 'Z'].some((letter) => short.has(letter)) ? null : 'unzip: only listing (-l, -v, -Z), testing (-t) or printing (-p, -c) is allowed; otherwise it extracts files'));

/** ps: BSD-style `e` shows every process's environment. */
const psRule: Rule = (args) => {
  for (const arg of args) {
    if (!arg.startsWith('-') && /^[A-Za-z]+$/.test(arg) && arg.includes('e')) return 'ps: the BSD option "e" prints processes\' environments (secrets)';
  }
  return null;
};

const dateRule = withOptions('date', {
  shortWithValue: 'dfrs', shortWithOptionalValue: 'I', deniedShort: { s: 'it sets the system clock' },
  deniedLong: { '--set': 'it sets the system clock' }, longWithValue: ['--date', '--file', '--reference'],
}, ({ operands }) => (operands.some((operand) => !operand.startsWith('+')) ? 'date: an operand other than +FORMAT sets the system clock' : null));

const hostnameRule = withOptions('hostname', { allowedShort: 'sfdiIaAy', allowedLong: ['--short', '--fqdn', '--long', '--domain', '--ip-address', '--all-ip-addresses', '--all-fqdns', '--alias', '--nis'] },
  ({ operands }) => (operands.length > 0 ? 'hostname: an operand sets the host name' : null));

const lessRule: Rule = (args) => {
  const plus = args.find((arg) => arg.startsWith('+'));
  if (plus) return `less: "${plus}" runs less commands at start-up`;
  scanOptions('less', args, {
    shortWithValue: 'bhjkoOpPtTxyz#',
    deniedShort: { o: 'it writes a log file', O: 'it writes a log file' },
    deniedLong: { '--log-file': 'it writes a log file', '--LOG-FILE': 'it writes a log file', '--lesskey-src': 'it reads key bindings', '--lesskey-file': 'it reads key bindings', '--tag': 'it runs tag lookups' },
  });
  return null;
};

const printfRule = withOptions('printf', { stopAtOperand: true, allowedShort: '', allowedLong: [] });
const cdRule = maxOperands('cd', 1, 'the directory', { allowedShort: 'LP', allowedLong: [] });

const fileRule = withOptions('file', {
  shortWithValue: 'eFfmP', deniedShort: { C: 'it compiles a magic file (writes a file)' },
  deniedLong: { '--compile': 'it compiles a magic file (writes a file)' }, longWithValue: ['--exclude', '--exclude-quiet', '--separator', '--files-from', '--magic-file', '--parameter'],
});

const iconvRule = withOptions('iconv', {
  shortWithValue: 'fto', deniedShort: { o: 'it writes a file' }, deniedLong: { '--output': 'it writes a file' }, longWithValue: ['--from-code', '--to-code'],
});

const treeRule = withOptions('tree', { deniedShort: { o: 'it writes the listing to a file' }, deniedLong: { '--output': 'it writes the listing to a file' } });

/** git: read-only subcommands; no configuration, alternative programs, pagers or output files. */
const GIT_READ_SUBCOMMANDS = new Set([
  'log', 'show', 'diff', 'status', 'blame', 'branch', 'tag', 'rev-parse', 'ls-files', 'grep', 'cat-file', 'shortlog',
  'describe', 'rev-list', 'ls-tree', 'show-ref', 'reflog', 'name-rev', 'merge-base', 'count-objects', 'diff-tree',
  'diff-files', 'diff-index', 'whatchanged', 'for-each-ref', 'version', 'annotate',
]);
const GIT_DENIED_LONG: Record<string, string> = {
  '--output': 'it writes a file', '--ext-diff': 'it runs an external diff program', '--textconv': 'it runs conversion programs',
  '--filters': 'it runs filter programs', '--open-files-in-pager': 'it runs a pager', '--exec': 'it runs a program',
  '--upload-pack': 'it runs a program', '--receive-pack': 'it runs a program', '--help': 'it runs man or a browser',
  '--edit-description': 'it edits', '--delete': 'it deletes', '--move': 'it renames', '--copy': 'it copies',
  '--force': 'it overwrites', '--set-upstream-to': 'it changes configuration', '--unset-upstream': 'it changes configuration',
  '--track': 'it changes configuration', '--create-reflog': 'it writes', '--annotate': 'it creates a tag', '--sign': 'it creates a tag',
  '--local-user': 'it creates a tag', '--message': 'it creates', '--file': 'it creates', '--verify': 'it runs gpg',
};
const GIT_LISTING_ONLY: Record<string, { allowedShort: string }> = {
  branch: { allowedShort: 'arlvi' },
  tag: { allowedShort: 'lni0123456789' },
};
const gitRule: Rule = (args) => {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-C') { i += 1; continue; }
    if (['--no-pager', '-P', '--no-optional-locks', '--literal-pathspecs', '--no-replace-objects', '--noglob-pathspecs', '--icase-pathspecs', '--glob-pathspecs'].includes(arg)) continue;
    if (arg.startsWith('-')) return `git: the global option ${arg} is refused (it can change configuration or run programs; allowed: -C DIR, --no-pager, --no-optional-locks)`;
    break;
  }
  const subcommand = args[i];
  if (subcommand === undefined) return 'git: no subcommand';
  if (!GIT_READ_SUBCOMMANDS.has(subcommand)) return `git: the subcommand "${subcommand}" is refused; only read subcommands run in the restricted shell (${[...GIT_READ_SUBCOMMANDS].join(', ')})`;
  const rest = args.slice(i + 1);
  const listing = GIT_LISTING_ONLY[subcommand];
  const deniedShort: Record<string, string> = subcommand === 'grep' ? { O: 'it runs a pager' } : {};
  if (subcommand === 'reflog' && rest[0] !== undefined && !rest[0].startsWith('-') && rest[0] !== 'show') return 'git reflog: only "show" (the default) is allowed';
  const scanned = scanOptions(`git ${subcommand}`, rest, {
    deniedShort,
    deniedLong: GIT_DENIED_LONG,
    ...(listing ? { allowedShort: listing.allowedShort } : {}),
    longWithValue: ['--contains', '--no-contains', '--merged', '--no-merged', '--points-at', '--sort', '--format'],
  });
  if (listing && scanned.operands.length > 0 && !scanned.short.has('l') && !scanned.long.includes('--list')) {
    return `git ${subcommand}: a name without --list would create a ${subcommand}`;
  }
  return null;
};

function uniqRule(): Rule {
  return maxOperands('uniq', 1, 'a second operand is an output file', { shortWithValue: 'fsw', longWithValue: ['--skip-fields', '--skip-chars', '--check-chars'] });
}

export const RULES = new Map<string, Rule>([
  ...ANY_ARGUMENTS.map((name): [string, Rule] => [name, () => null]),
  ['find', findRule], ['xargs', xargsRule], ['env', envRule], ['timeout', timeoutRule], ['nice', niceRule],
  ['command', commandRule], ['sed', sedRule], ['awk', awkRule], ['gawk', awkRule], ['mawk', awkRule],
  ['sort', sortRule], ['rg', rgRule], ['gzip', gzipRule('gzip')], ['gunzip', gzipRule('gunzip')], ['tar', tarRule],
  ['unzip', unzipRule], ['ps', psRule], ['date', dateRule], ['hostname', hostnameRule], ['less', lessRule],
  ['printf', printfRule], ['cd', cdRule], ['file', fileRule], ['iconv', iconvRule], ['tree', treeRule], ['git', gitRule],
  ['uniq', uniqRule()],
  ['xxd', maxOperands('xxd', 1, 'a second operand is an output file; attach option values, as in -s10', {})],
]);

/** Checks one command's argument vector (argv[0] is the command name). */
export function commandRefusal(argv: string[], context: RuleContext): string | null {
  const [name, ...args] = argv;
  if (name === undefined || name === '') return 'an empty command name';
  if (name.includes('/')) return `"${name}": commands must be named without a path (a path can run any program); use the bare name of an allowed command`;
  const never = NEVER_REASON.get(name);
  if (never) return `"${name}" is not allowed in the restricted shell: ${never}`;
  const rule = RULES.get(name);
  if (!rule) return `"${name}" is not in the restricted shell's list of read-only commands (${[...RULES.keys()].sort().join(', ')})`;
  try {
    return rule(args, context);
  } catch (error) {
    if (error instanceof OptionRefusal) return error.message;
    throw error;
  }
}
