import { scanOptions, type OptionSpec } from './options.js';
import type { Rule } from './rule-types.js';

/**
 * The production inspector's read tools in the restricted shell (docs/guide/restricted-shell.md):
 * systemd (systemctl, journalctl), sockets and interfaces (ss, ip), open files (lsof), processes
 * (top in batch mode), the kernel log (dmesg), compressed-file greps and pagers, and a few
 * search tools. Each allows only its reading subcommands and options; a refusal names what is
 * allowed.
 */

function listOf(words: Iterable<string>): string {
  return [...words].join(', ');
}

/** systemctl: only the reading verbs, only options that change what is printed. */
const SYSTEMCTL_VERBS = [
  'status',
  'show',
  'cat',
  'list-units',
  'list-unit-files',
  'list-timers',
  'list-sockets',
  'list-dependencies',
  'list-jobs',
  'list-machines',
  'is-active',
  'is-enabled',
  'is-failed',
  'is-system-running',
  'get-default',
  'show-environment',
];
const SYSTEMCTL_OPTIONS: OptionSpec = {
  shortWithValue: 'tpnoP',
  allowedShort: 'tpnoPalqr',
  allowedLong: [
    '--type',
    '--state',
    '--property',
    '--value',
    '--all',
    '--recursive',
    '--reverse',
    '--after',
    '--before',
    '--with-dependencies',
    '--full',
    '--no-legend',
    '--no-pager',
    '--plain',
    '--lines',
    '--output',
    '--quiet',
    '--failed',
    '--user',
    '--system',
    '--show-types',
    '--legend',
    '--timestamp',
    '--version',
    '--help',
  ],
  longWithValue: ['--type', '--state', '--property', '--lines', '--output', '--timestamp', '--legend'],
};
export const systemctlRule: Rule = (args) => {
  const scanned = scanOptions('systemctl', args, SYSTEMCTL_OPTIONS);
  const verb = scanned.operands[0];
  if (verb === undefined)
    return scanned.long.includes('--version') || scanned.long.includes('--help') ? null : 'systemctl: name the verb (list-units is the default, write it out)';
  return SYSTEMCTL_VERBS.includes(verb) ? null : `systemctl: "${verb}" is refused; only reading verbs run in the restricted shell (${listOf(SYSTEMCTL_VERBS)})`;
};

/** journalctl: everything that reads; the maintenance options that delete, rotate, flush or write are refused. */
const JOURNALCTL_DENIED: Record<string, string> = {
  '--vacuum-size': 'it deletes journal files',
  '--vacuum-time': 'it deletes journal files',
  '--vacuum-files': 'it deletes journal files',
  '--rotate': 'it rotates the journal',
  '--flush': 'it moves the journal',
  '--sync': 'it writes the journal to disk',
  '--relinquish-var': 'it moves the journal',
  '--smart-relinquish-var': 'it moves the journal',
  '--setup-keys': 'it writes sealing keys',
  '--update-catalog': 'it writes the catalog',
  '--cursor-file': 'it writes a cursor file',
  '--image': 'it mounts a disk image',
};
export const journalctlRule: Rule = (args) => {
  scanOptions('journalctl', args, {
    shortWithValue: 'bnpuoDMtSUigcF',
    shortWithOptionalValue: '',
    deniedLong: JOURNALCTL_DENIED,
    longWithValue: [
      '--boot',
      '--lines',
      '--priority',
      '--unit',
      '--user-unit',
      '--output',
      '--directory',
      '--file',
      '--root',
      '--since',
      '--until',
      '--identifier',
      '--grep',
      '--cursor',
      '--after-cursor',
      '--facility',
      '--field',
      '--output-fields',
      '--namespace',
      '--machine',
      '--case-sensitive',
      '--interval',
      '--verify-key',
      '--list-boots',
    ],
    knownLong: [
      '--follow',
      '--reverse',
      '--no-pager',
      '--pager-end',
      '--all',
      '--quiet',
      '--merge',
      '--utc',
      '--no-hostname',
      '--no-full',
      '--full',
      '--catalog',
      '--dmesg',
      '--system',
      '--user',
      '--disk-usage',
      '--list-catalog',
      '--dump-catalog',
      '--header',
      '--verify',
      '--fields',
      '--show-cursor',
      '--new-id128',
      '--version',
      '--help',
      '--this-boot',
      '--list-namespaces',
      '--truncate-newest',
    ],
  });
  return null;
};

/** ss: listing sockets; -K kills them, -D writes a dump file, -N enters another network namespace. */
export const ssRule: Rule = (args) => {
  scanOptions('ss', args, {
    shortWithValue: 'fADFN',
    deniedShort: { K: 'it closes (kills) sockets', D: 'it writes a dump file', N: 'it switches network namespace' },
    deniedLong: { '--kill': 'it closes (kills) sockets', '--diag': 'it writes a dump file', '--net': 'it switches network namespace' },
    longWithValue: ['--family', '--query', '--socket', '--filter'],
  });
  return null;
};

/** ip: OBJECT [show|list] only, for address, route, link, neighbour, rule and a few more. */
const IP_OBJECTS: Record<string, string> = {
  a: 'address',
  addr: 'address',
  address: 'address',
  r: 'route',
  ro: 'route',
  route: 'route',
  l: 'link',
  link: 'link',
  n: 'neigh',
  neigh: 'neigh',
  neighbor: 'neigh',
  neighbour: 'neigh',
  ru: 'rule',
  rule: 'rule',
  maddr: 'maddress',
  maddress: 'maddress',
  netconf: 'netconf',
};
const IP_SHOW = ['show', 'list', 'ls', 'lst', 'sh'];
const IP_FLAGS =
  /^-(s|stats|statistics|d|details|h|human|human-readable|4|6|0|br|brief|j|json|p|pretty|c|color|o|oneline|r|resolve|a|all|t|timestamp|ts|tshort|V|Version)$/;
export const ipRule: Rule = (args) => {
  let i = 0;
  for (; i < args.length && args[i]!.startsWith('-'); i++) {
    const flag = args[i]!.replace(/^--/, '-');
    if (/^-color=/.test(flag)) continue;
    if (/^-f(amily)?$/.test(flag)) {
      i += 1;
      continue;
    }
    if (!IP_FLAGS.test(flag))
      return `ip: the option ${args[i]} is refused (allowed: -s -d -h -4 -6 -br -j -p -c -o -r -a -t -f FAMILY; -batch, -force and -netns are not)`;
  }
  const objectWord = args[i];
  if (objectWord === undefined) return args.length > 0 ? null : 'ip: name the object (addr, route, link, neigh)';
  const object = IP_OBJECTS[objectWord];
  if (!object) return `ip: the object "${objectWord}" is refused; the restricted shell shows only ${listOf(new Set(Object.values(IP_OBJECTS)))}`;
  const command = args[i + 1];
  if (command === undefined || IP_SHOW.includes(command) || (object === 'route' && command === 'get')) return null;
  return `ip ${objectWord}: "${command}" is refused; only showing (${IP_SHOW.join(', ')}${object === 'route' ? ', get' : ''}, or nothing) is allowed`;
};

/** lsof: lists open files; -D builds or updates a device cache file. */
export const lsofRule: Rule = (args) => {
  const cache = args.find((arg) => /^-[a-zA-Z]*D/.test(arg));
  return cache ? `lsof: the option -D (in ${cache}) is refused (it builds or updates a device cache file)` : null;
};

/** top: one batch-mode snapshot (or a few): -b and -n are required, so it never waits on a terminal. */
export const topRule: Rule = (args) => {
  const scanned = scanOptions('top', args, {
    shortWithValue: 'ndpuUoOwE',
    allowedShort: 'bndpuUoOwEcHiSs1e',
    allowedLong: [],
  });
  if (!scanned.short.has('b') || !scanned.short.has('n')) return 'top: run it in batch mode with a count, as in top -b -n 1';
  return null;
};

/** dmesg: reading the kernel log; clearing it or changing the console is refused. */
export const dmesgRule: Rule = (args) => {
  scanOptions('dmesg', args, {
    shortWithValue: 'FfsnlL',
    deniedShort: {
      c: 'it clears the kernel log',
      C: 'it clears the kernel log',
      D: 'it turns console logging off',
      E: 'it turns console logging on',
      n: 'it sets the console log level',
    },
    deniedLong: {
      '--clear': 'it clears the kernel log',
      '--read-clear': 'it clears the kernel log',
      '--console-off': 'it turns console logging off',
      '--console-on': 'it turns console logging on',
      '--console-level': 'it sets the console log level',
    },
    longWithValue: ['--file', '--facility', '--buffer-size', '--level', '--time-format', '--color'],
    knownLong: [
      '--human',
      '--ctime',
      '--decode',
      '--follow',
      '--follow-new',
      '--kernel',
      '--userspace',
      '--nopager',
      '--notime',
      '--raw',
      '--reltime',
      '--show-delta',
      '--syslog',
      '--since',
      '--until',
      '--force-prefix',
      '--json',
      '--help',
      '--version',
    ],
  });
  return null;
};

/** fd/fdfind: finding names; -x/-X run a command for what is found. */
export const fdRule =
  (command: string): Rule =>
  (args) => {
    scanOptions(command, args, {
      shortWithValue: 'edEtcjSxX',
      deniedShort: { x: 'it runs a command for every result', X: 'it runs a command on the results' },
      deniedLong: { '--exec': 'it runs a command for every result', '--exec-batch': 'it runs a command on the results' },
      longWithValue: [
        '--extension',
        '--max-depth',
        '--min-depth',
        '--exact-depth',
        '--exclude',
        '--type',
        '--size',
        '--changed-within',
        '--changed-before',
        '--owner',
        '--color',
        '--threads',
        '--max-results',
        '--base-directory',
        '--path-separator',
        '--search-path',
        '--format',
        '--ignore-file',
        '--batch-size',
        '--hyperlink',
      ],
    });
    return null;
  };

/** bat/batcat: printing files; --pager runs a program, `bat cache` writes the theme cache. */
export const batRule =
  (command: string): Rule =>
  (args) => {
    if (args[0] === 'cache') return `${command}: "cache" writes bat's cache`;
    scanOptions(command, args, {
      shortWithValue: 'lHrm',
      deniedLong: {
        '--pager': 'it runs a program as the pager',
        '--config-file': 'it names the configuration file',
        '--generate-config-file': 'it writes a configuration file',
        '--config-dir': 'it prints configuration',
      },
      longWithValue: [
        '--language',
        '--highlight-line',
        '--line-range',
        '--map-syntax',
        '--theme',
        '--style',
        '--tabs',
        '--wrap',
        '--terminal-width',
        '--color',
        '--italic-text',
        '--decorations',
        '--paging',
        '--file-name',
        '--diff-context',
        '--ignored-suffix',
        '--strip-ansi',
        '--nonprintable-notation',
        '--binary',
      ],
      knownLong: [
        '--plain',
        '--show-all',
        '--number',
        '--diff',
        '--list-languages',
        '--list-themes',
        '--help',
        '--version',
        '--chop-long-lines',
        '--squeeze-blank',
        '--squeeze-limit',
        '--no-config',
        '--no-custom-assets',
        '--cache-dir',
        '--acknowledgements',
        '--diagnostic',
      ],
    });
    return null;
  };

/** ag: searching; --pager runs a program; recursion is checked like grep's. */
export const agRule: Rule = (args, context) => {
  scanOptions('ag', args, {
    shortWithValue: 'ABCGgmp',
    deniedLong: { '--pager': 'it runs a program as the pager' },
    longWithValue: [
      '--after',
      '--before',
      '--context',
      '--file-search-regex',
      '--max-count',
      '--path-to-ignore',
      '--depth',
      '--ignore',
      '--ignore-dir',
      '--workers',
      '--color-line-number',
      '--color-match',
      '--color-path',
    ],
  });
  return context.treeRefusal('ag', args, { includeCwd: true });
};

/**
 * ack (a Perl program): --pager runs a program and --output evaluates an expression; ack also
 * reads .ackrc files from the directories it starts in, which could set either, so --noenv
 * (no .ackrc, no ACK_OPTIONS) is required.
 */
export const ackRule: Rule = (args, context) => {
  scanOptions('ack', args, {
    shortWithValue: 'ABCmg',
    deniedLong: {
      '--pager': 'it runs a program as the pager',
      '--output': 'it evaluates a Perl expression',
      '--ackrc': 'it reads options from a file',
      '--create-ackrc': 'it writes a configuration',
    },
    longWithValue: [
      '--after-context',
      '--before-context',
      '--context',
      '--max-count',
      '--type',
      '--type-add',
      '--type-set',
      '--type-del',
      '--ignore-dir',
      '--noignore-dir',
      '--ignore-file',
      '--color-filename',
      '--color-match',
      '--color-colno',
      '--color-lineno',
      '--range-start',
      '--range-end',
    ],
    knownLong: [
      '--noenv',
      '--env',
      '--nopager',
      '--help',
      '--version',
      '--files-with-matches',
      '--files-without-matches',
      '--count',
      '--column',
      '--nocolor',
      '--color',
      '--sort-files',
      '--smart-case',
      '--ignore-case',
      '--word-regexp',
      '--literal',
      '--invert-match',
      '--follow',
      '--nofollow',
      '--recurse',
      '--no-recurse',
    ],
  });
  if (!args.includes('--noenv'))
    return 'ack: add --noenv (ack otherwise reads .ackrc files from the tree, which can name a pager program or a Perl expression)';
  return context.treeRefusal('ack', args, { includeCwd: true });
};

/**
 * Interpreters and shells print their version and exit with exactly these words, without
 * reading a program; any other use stays refused.
 */
const VERSION_FORMS: Record<string, string[]> = {
  python: ['--version', '-V'],
  python2: ['--version', '-V'],
  python3: ['--version', '-V'],
  node: ['--version', '-v'],
  nodejs: ['--version', '-v'],
  perl: ['--version', '-v'],
  ruby: ['--version'],
  php: ['--version', '-v'],
  java: ['--version', '-version'],
  deno: ['--version', '-V'],
  bun: ['--version'],
  bash: ['--version'],
  zsh: ['--version'],
  lua: ['-v'],
  Rscript: ['--version'],
  psql: ['--version', '-V'],
  mysql: ['--version', '-V'],
  sqlite3: ['--version', '-version'],
  npm: ['--version', '-v'],
  pip: ['--version', '-V'],
  make: ['--version', '-v'],
  docker: ['--version', '-v'],
  kubectl: ['version --client'],
  curl: ['--version', '-V'],
  wget: ['--version', '-V'],
  ssh: ['-V'],
  tmux: ['-V'],
  rsync: ['--version'],
};
export function isVersionCheck(name: string, args: readonly string[]): boolean {
  return VERSION_FORMS[name]?.includes(args.join(' ')) ?? false;
}

export function inspectionRules(): Array<[string, Rule]> {
  return [
    ['systemctl', systemctlRule],
    ['journalctl', journalctlRule],
    ['ss', ssRule],
    ['ip', ipRule],
    ['lsof', lsofRule],
    ['top', topRule],
    ['dmesg', dmesgRule],
    ['fd', fdRule('fd')],
    ['fdfind', fdRule('fdfind')],
    ['bat', batRule('bat')],
    ['batcat', batRule('batcat')],
    ['ag', agRule],
    ['ack', ackRule],
  ];
}
