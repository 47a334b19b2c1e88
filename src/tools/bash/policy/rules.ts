import { awkProgramRefusal } from './awk.js';
import { gitRule } from './git.js';
import { OptionRefusal, scanOptions, type OptionSpec, type ScannedOptions } from './options.js';
import { SAFE_WITH_ANY_ARGUMENTS, type Rule, type RuleContext } from './rule-types.js';
import { inspectionRules, isVersionCheck } from './inspect.js';
import { curlRule, dockerRule, getentRule, kubectlRule } from './network.js';
import { commandRule, envRule, findRule, niceRule, timeoutRule, xargsRule } from './runners.js';
import { sedScriptRefusal } from './sed.js';

/**
 * The command layer of the restricted shell (docs/guide/restricted-shell.md): a closed list of inspection commands,
 * each with the options and operands that would write, delete or run programs refused.
 * A rule returns null when the command may run, or the reason it may not.
 */

/** Commands of the safe list that still have a rule of their own. */
const RULED = new Set(['grep', 'egrep', 'fgrep', 'strings']);

/** Read-only commands whose every option only changes what is printed. */
const ANY_ARGUMENTS = [
  ...[...SAFE_WITH_ANY_ARGUMENTS].filter((name) => !RULED.has(name)),
  'comm',
  'df',
  'paste',
  'join',
  'fold',
  'fmt',
  'expand',
  'unexpand',
  'seq',
  'whoami',
  'id',
  'groups',
  'uname',
  'uptime',
  'nproc',
  'free',
  'pwd',
  'which',
  'type',
  'printenv',
  'locale',
  'cal',
  'sleep',
  'base64',
  'numfmt',
  'jq',
  'zipinfo',
  'pgrep',
  'lsblk',
  'more',
  '[',
  'du',
  'expr',
  'whereis',
  'getconf',
  'arch',
  'tput',
  'vmstat',
  'iostat',
  'mpstat',
  'lscpu',
  'lsmem',
  'lspci',
  'lsusb',
  'findmnt',
  'w',
  'who',
  'last',
  'pstree',
  'pidof',
];

/** Why some well-known commands are never allowed, for a refusal that says why. */
const NEVER: Array<[string[], string]> = [
  [['sh', 'bash', 'dash', 'zsh', 'ksh', 'fish', 'csh', 'tcsh', 'busybox'], 'shells run arbitrary commands'],
  [
    ['python', 'python2', 'python3', 'perl', 'ruby', 'node', 'nodejs', 'deno', 'bun', 'php', 'lua', 'tclsh', 'Rscript', 'java', 'osascript'],
    'interpreters run arbitrary programs',
  ],
  [['sudo', 'su', 'doas', 'pkexec', 'runuser', 'chroot', 'nsenter', 'unshare', 'setsid'], 'it changes privileges or isolation'],
  [['vi', 'vim', 'nvim', 'nano', 'emacs', 'ed', 'ex', 'pico', 'joe', 'mcedit'], 'editors write files and need a terminal'],
  [['man', 'info'], 'it runs a pager and formatters'],
  [
    ['eval', 'exec', 'source', '.', 'builtin', 'trap', 'alias', 'enable', 'set', 'shopt', 'export', 'read', 'mapfile'],
    'this shell builtin can run code or change the shell',
  ],
  [
    [
      'rm',
      'rmdir',
      'mv',
      'cp',
      'dd',
      'tee',
      'touch',
      'mkdir',
      'ln',
      'chmod',
      'chown',
      'chgrp',
      'truncate',
      'shred',
      'install',
      'split',
      'csplit',
      'patch',
      'rsync',
      'scp',
      'sftp',
      'ssh',
      'wget',
      'nc',
      'ncat',
      'socat',
      'telnet',
      'ftp',
      'kill',
      'pkill',
      'killall',
      'service',
      'reboot',
      'shutdown',
      'mount',
      'umount',
      'crontab',
      'at',
      'make',
      'npm',
      'pip',
      'apt',
      'apt-get',
      'dpkg',
      'mysql',
      'psql',
      'sqlite3',
      'watch',
      'script',
      'screen',
      'tmux',
      'stdbuf',
      'ionice',
      'parallel',
    ],
    'it can change files, processes or other systems',
  ],
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

const SED_VALUES = 'elf';
const sedRule: Rule = (args) => {
  const scanned = scanOptions('sed', args, {
    shortWithValue: SED_VALUES,
    deniedShort: { i: 'it edits files in place', f: 'a script file cannot be checked' },
    deniedLong: { '--in-place': 'it edits files in place', '--file': 'a script file cannot be checked' },
    longWithValue: ['--expression', '--line-length'],
    knownLong: [
      '--binary',
      '--debug',
      '--follow-symlinks',
      '--help',
      '--null-data',
      '--zero-terminated',
      '--posix',
      '--quiet',
      '--silent',
      '--regexp-extended',
      '--sandbox',
      '--separate',
      '--unbuffered',
      '--version',
    ],
  });
  const expressions = scanned.values.filter(([option]) => option === '-e' || option === '--expression').map(([, value]) => value);
  const script = expressions.length > 0 ? expressions.join('\n') : scanned.operands[0];
  if (script === undefined) return 'sed: no script';
  return sedScriptRefusal(script);
};

const awkRule: Rule = (args) => {
  const scanned = scanOptions('awk', args, {
    stopAtOperand: true,
    shortWithValue: 'Fv',
    allowedShort: 'Fv',
    allowedLong: ['--field-separator', '--assign'],
    longWithValue: ['--field-separator', '--assign'],
    knownLong: ['--file', '--source', '--exec', '--include', '--load', '--sandbox', '--profile', '--pretty-print', '--dump-variables', '--debug'],
  });
  const program = scanned.operands[0];
  if (program === undefined) return 'awk: no program (program files given with -f cannot be checked)';
  return awkProgramRefusal(program);
};

const sortRule = withOptions('sort', {
  shortWithValue: 'ktST',
  deniedShort: { o: 'it writes the output to a file', T: 'it writes temporary files to a directory' },
  deniedLong: {
    '--output': 'it writes the output to a file',
    '--compress-program': 'it runs a program',
    '--temporary-directory': 'it writes temporary files to a directory',
    '--random-source': 'reads a file as randomness',
    '--files0-from': "it reads files named by data (such as another process's /proc/PID/environ)",
  },
  longWithValue: ['--key', '--field-separator', '--buffer-size', '--parallel', '--batch-size', '--sort'],
});

const rgRule = withOptions('rg', {
  shortWithValue: 'ABCEefgjmMrtTd',
  deniedShort: { z: 'it runs decompression programs' },
  deniedLong: {
    '--pre': 'it runs a program on every file',
    '--pre-glob': 'it configures --pre',
    '--search-zip': 'it runs decompression programs',
    '--hostname-bin': 'it runs a program',
  },
  longWithValue: [
    '--after-context',
    '--before-context',
    '--context',
    '--encoding',
    '--regexp',
    '--file',
    '--glob',
    '--iglob',
    '--max-count',
    '--max-depth',
    '--max-columns',
    '--replace',
    '--type',
    '--type-not',
    '--type-add',
    '--sort',
    '--sortr',
    '--threads',
    '--max-filesize',
    '--path-separator',
    '--colors',
    '--color',
    '--ignore-file',
    '--field-match-separator',
    '--field-context-separator',
    '--context-separator',
    '--dfa-size-limit',
    '--regex-size-limit',
    '--engine',
    '--generate',
  ],
});

const gzipRule = (command: string): Rule =>
  withOptions(
    command,
    {
      shortWithValue: 'S',
      allowedShort: 'cdfhlnNqrtvkS123456789L',
      allowedLong: [
        '--stdout',
        '--to-stdout',
        '--decompress',
        '--uncompress',
        '--list',
        '--test',
        '--verbose',
        '--quiet',
        '--force',
        '--keep',
        '--name',
        '--no-name',
        '--recursive',
        '--suffix',
        '--fast',
        '--best',
        '--help',
        '--version',
        '--license',
      ],
      longWithValue: ['--suffix'],
    },
    ({ short, long }) =>
      short.has('c') ||
      short.has('l') ||
      short.has('t') ||
      long.some((l) => ['--stdout', '--to-stdout', '--list', '--test', '--help', '--version', '--license'].includes(l))
        ? null
        : `${command}: only listing (-l), testing (-t) or writing to stdout (-c) is allowed; otherwise it replaces files`,
  );

/** tar: listing only; old-style first arguments ("tzvf") are read like option clusters. */
const TAR_VALUE_LETTERS = 'fCX';
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
    shortWithValue: TAR_VALUE_LETTERS,
    allowedShort: `tvzjJaZhi${TAR_VALUE_LETTERS}`,
    allowedLong: [
      '--list',
      '--verbose',
      '--file',
      '--gzip',
      '--gunzip',
      '--ungzip',
      '--bzip2',
      '--xz',
      '--lzma',
      '--zstd',
      '--auto-compress',
      '--directory',
      '--exclude',
      '--exclude-from',
      '--wildcards',
      '--no-wildcards',
      '--anchored',
      '--no-anchored',
      '--ignore-case',
      '--numeric-owner',
      '--full-time',
      '--utc',
      '--force-local',
      '--null',
      '--quoting-style',
      '--show-transformed-names',
      '--occurrence',
      '--dereference',
      '--ignore-zeros',
      '--exclude-vcs',
      '--warning',
      '--quiet',
      '--totals',
      '--block-number',
      '--strip-components',
      '--transform',
      '--xform',
      '--help',
      '--version',
    ],
    longWithValue: ['--file', '--directory', '--exclude', '--exclude-from', '--quoting-style', '--warning', '--strip-components', '--transform', '--xform'],
  });
  if (!scanned.short.has('t') && !scanned.long.includes('--list') && !scanned.long.includes('--help') && !scanned.long.includes('--version')) {
    return 'tar: only listing (-t/--list) is allowed';
  }
  const archive = scanned.values.find(([option]) => option === '-f' || option === '--file')?.[1];
  if (archive?.includes(':') && !scanned.long.includes('--force-local')) return 'tar: an archive name with ":" means a remote archive (it runs rsh/ssh)';
  return null;
};

const unzipRule = withOptions('unzip', { allowedShort: 'lvtpcqCzZ12shmM', allowedLong: [] }, ({ short }) =>
  ['l', 'v', 't', 'p', 'c', 'z', 'Z'].some((letter) => short.has(letter))
    ? null
    : 'unzip: only listing (-l, -v, -Z), testing (-t) or printing (-p, -c) is allowed; otherwise it extracts files',
);

/**
 * ps: BSD-style `e` shows every process's environment, and procps reads some dashed words the
 * BSD way too (`-auxe`, `-ae -x`), so dashed words may only hold UNIX options that never switch
 * it, and undashed (BSD) words never an "e".
 */
const PS_UNIX_LETTERS = 'AadefFHjlLMNTwyZcPmV';
const PS_VALUE_LETTERS = 'oOpqstuUgGCk';
/** Value options whose attached value procps never reads BSD-style (checked on procps-ng 4). */
const PS_ATTACHED_VALUE_LETTERS = 'oOpqtCUG';
const psRule: Rule = (args) => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.startsWith('--')) {
      if (/env/i.test(arg)) return `ps: the option ${arg} is refused (process environments hold secrets)`;
      if (!arg.includes('=') && /^--(format|sort|pid|ppid|user|User|group|Group|cols|columns|width|rows|lines|tty|sid|quick-pid)$/.test(arg)) i += 1;
      continue;
    }
    if (arg.startsWith('-')) {
      for (let k = 1; k < arg.length; k++) {
        const letter = arg[k]!;
        if (PS_VALUE_LETTERS.includes(letter)) {
          if (k === arg.length - 1) {
            i += 1;
            break;
          }
          // An attached value (-uxe) can make procps read the whole word BSD-style (checked: -uxe, -gxe, -sxe print environments).
          if (k === 1 && PS_ATTACHED_VALUE_LETTERS.includes(letter)) break;
          return `ps: write the value of -${letter} as a separate word (procps may read ${arg} BSD-style, where "e" prints processes' environments)`;
        }
        if (!PS_UNIX_LETTERS.includes(letter))
          return (
            `ps: the option -${letter} in ${arg} is refused (procps may read the word BSD-style, where "e" prints processes' environments); use UNIX ` +
            `options such as -ef, -e -o pid,comm`
          );
      }
      continue;
    }
    if (/e/.test(arg) && /^[A-Za-z]+$/.test(arg)) return 'ps: the BSD option "e" prints processes\' environments (secrets)';
  }
  return null;
};

const dateRule = withOptions(
  'date',
  {
    shortWithValue: 'dfrs',
    shortWithOptionalValue: 'I',
    deniedShort: { s: 'it sets the system clock' },
    deniedLong: { '--set': 'it sets the system clock' },
    longWithValue: ['--date', '--file', '--reference'],
  },
  ({ operands }) => (operands.some((operand) => !operand.startsWith('+')) ? 'date: an operand other than +FORMAT sets the system clock' : null),
);

const hostnameRule = withOptions(
  'hostname',
  {
    allowedShort: 'sfdiIaAy',
    allowedLong: ['--short', '--fqdn', '--long', '--domain', '--ip-address', '--all-ip-addresses', '--all-fqdns', '--alias', '--nis'],
  },
  ({ operands }) => (operands.length > 0 ? 'hostname: an operand sets the host name' : null),
);

const lessRule: Rule = (args) => {
  const plus = args.find((arg) => arg.startsWith('+'));
  if (plus) return `less: "${plus}" runs less commands at start-up`;
  scanOptions('less', args, {
    shortWithValue: 'bhjkoOpPtTxyz#',
    deniedShort: { o: 'it writes a log file', O: 'it writes a log file' },
    deniedLong: {
      '--log-file': 'it writes a log file',
      '--LOG-FILE': 'it writes a log file',
      '--lesskey-src': 'it reads key bindings',
      '--lesskey-file': 'it reads key bindings',
      '--tag': 'it runs tag lookups',
    },
  });
  return null;
};

/** Whether a grep/diff command line may read a whole tree (-r, -R, -d recurse, --recursive, ...); over-approximated. */
function mayRecurse(args: readonly string[], shortLetters: RegExp, longPrefix: RegExp): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (/^-[^-]/.test(arg) && shortLetters.test(arg.slice(1))) return true;
    if (longPrefix.test(arg)) return true;
  }
  return false;
}

/** grep: a recursive search may not start at /, /proc or inside it, nor run on names from data. */
function grepRule(command: string): Rule {
  return (args, context) => {
    if (!mayRecurse(args, /[rRd]/, /^--(r|de|di|d$)/)) {
      // Words from data (xargs input, a substitution's output) could add -r: the named directories must be safe to recurse.
      return context.dataDriven ? context.treeRefusal(command, args, { includeCwd: true }) : null;
    }
    if (context.dataDriven) return `${command}: a recursive search is refused where the names come from data (xargs, find -exec, substitutions)`;
    return context.treeRefusal(command, args, { includeCwd: true });
  };
}

const rgRecursiveRule: Rule = (args, context) => {
  const why = rgRule(args, context);
  return why ?? context.treeRefusal('rg', args, { includeCwd: true });
};

const diffRule: Rule = (args, context) => (mayRecurse(args, /r/, /^--rec/) ? context.treeRefusal('diff', args) : null);

/** binutils strings reads more options and names from "@FILE". */
const stringsRule: Rule = (args, context) => {
  if (context.dataDriven) return 'strings: refused where names come from data (a name starting with "@" reads options and file names from that file)';
  const atFile = args.find((arg) => arg.startsWith('@'));
  return atFile ? `strings: "${atFile}" reads options and file names from a file` : null;
};

/**
 * xxd reads options only up to the first operand, and then takes the second operand as the
 * output file whatever it looks like (`xxd in -i` overwrites "-i"); so at most one operand.
 * Value options (-c -g -l -o -s -n -R) take the next word only when written alone.
 */
const xxdRule: Rule = (args) => {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      i += 1;
      break;
    }
    if (!arg.startsWith('-') || arg === '-') break;
    if (/^--?[cglosnR]$/.test(arg)) i += 1;
  }
  return args.length - i > 1 ? 'xxd: at most one operand (a second one is an output file); attach option values, as in -s10' : null;
};

const printfRule = withOptions('printf', { stopAtOperand: true, allowedShort: '', allowedLong: [] });
const cdRule = maxOperands('cd', 1, 'the directory', { allowedShort: 'LP', allowedLong: [] });

const fileRule = withOptions('file', {
  shortWithValue: 'eFfmP',
  deniedShort: { C: 'it compiles a magic file (writes a file)' },
  deniedLong: { '--compile': 'it compiles a magic file (writes a file)' },
  longWithValue: ['--exclude', '--exclude-quiet', '--separator', '--files-from', '--magic-file', '--parameter'],
});

const iconvRule = withOptions('iconv', {
  shortWithValue: 'fto',
  deniedShort: { o: 'it writes a file' },
  deniedLong: { '--output': 'it writes a file' },
  longWithValue: ['--from-code', '--to-code'],
});

const treeRule = withOptions('tree', { deniedShort: { o: 'it writes the listing to a file' }, deniedLong: { '--output': 'it writes the listing to a file' } });

function uniqRule(): Rule {
  return maxOperands('uniq', 1, 'a second operand is an output file', {
    shortWithValue: 'fsw',
    longWithValue: ['--skip-fields', '--skip-chars', '--check-chars'],
  });
}

export const RULES = new Map<string, Rule>([
  ...ANY_ARGUMENTS.map((name): [string, Rule] => [name, () => null]),
  ['find', findRule],
  ['xargs', xargsRule],
  ['env', envRule],
  ['timeout', timeoutRule],
  ['nice', niceRule],
  ['command', commandRule],
  ['sed', sedRule],
  ['awk', awkRule],
  ['gawk', awkRule],
  ['mawk', awkRule],
  ['sort', sortRule],
  ['rg', rgRecursiveRule],
  ['gzip', gzipRule('gzip')],
  ['gunzip', gzipRule('gunzip')],
  ['tar', tarRule],
  ['unzip', unzipRule],
  ['ps', psRule],
  ['date', dateRule],
  ['hostname', hostnameRule],
  ['less', lessRule],
  ['printf', printfRule],
  ['cd', cdRule],
  ['file', fileRule],
  ['iconv', iconvRule],
  ['tree', treeRule],
  ['git', gitRule],
  ['uniq', uniqRule()],
  ['xxd', xxdRule],
  ['grep', grepRule('grep')],
  ['egrep', grepRule('egrep')],
  ['fgrep', grepRule('fgrep')],
  ['diff', diffRule],
  ['strings', stringsRule],
  ...['zgrep', 'zegrep', 'zfgrep', 'bzgrep', 'bzegrep', 'bzfgrep', 'xzgrep', 'xzegrep', 'xzfgrep'].map((name): [string, Rule] => [name, grepRule(name)]),
  ...['zless', 'bzless', 'xzless', 'lzless'].map((name): [string, Rule] => [name, lessRule]),
  ...['zmore', 'bzmore', 'xzmore', 'lzmore'].map((name): [string, Rule] => [name, () => null]),
  ...inspectionRules(),
  ['docker', dockerRule('docker')],
  ['podman', dockerRule('podman')],
  ['kubectl', kubectlRule],
  ['curl', curlRule],
  ['getent', getentRule],
]);

/** Checks one command's argument vector (argv[0] is the command name). */
export function commandRefusal(argv: string[], context: RuleContext): string | null {
  const [name, ...args] = argv;
  if (name === undefined || name === '') return 'an empty command name';
  if (name.includes('/')) return `"${name}": commands must be named without a path (a path can run any program); use the bare name of an allowed command`;
  if (isVersionCheck(name, args)) return null;
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
