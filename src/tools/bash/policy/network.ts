import type { ShellNetwork } from '../bash-options.js';
import { scanOptions, type OptionSpec } from './options.js';
import type { Rule, RuleContext } from './rule-types.js';

/**
 * Commands that talk to other systems (docs/guide/restricted-shell.md): docker/podman (through
 * the engine's socket), kubectl (the cluster's API server) and curl (HTTP GET). They need the
 * profile's shell_network: under `none` they are refused with a message naming the setting;
 * docker and curl to this host need `loopback`, kubectl and curl elsewhere `all`. Only reading
 * subcommands and options pass; global options that pick another engine, configuration or
 * credentials are refused.
 */

const NETWORK_HELP = 'set shell_network: loopback (this host) or all in the profile to allow it (docs/guide/restricted-shell.md)';

function networkRefusal(command: string, needs: ShellNetwork, context: RuleContext): string | null {
  const order: ShellNetwork[] = ['none', 'loopback', 'all'];
  if (order.indexOf(context.network) >= order.indexOf(needs)) return null;
  return `${command} needs the network (shell_network: ${needs}), and this profile's shell_network is ${context.network}; ${NETWORK_HELP}`;
}

function listOf(words: Iterable<string>): string {
  return [...words].join(', ');
}

/** docker/podman subcommands that read, with what each needs beyond plain options. */
const DOCKER_READS = ['ps', 'images', 'logs', 'inspect', 'top', 'port', 'diff', 'stats', 'version', 'info', 'history', 'events'];
const DOCKER_GROUPS: Record<string, string[]> = {
  container: ['ls', 'list', 'ps', 'inspect', 'logs', 'top', 'port', 'diff', 'stats'],
  image: ['ls', 'list', 'inspect', 'history'],
  network: ['ls', 'list', 'inspect'],
  volume: ['ls', 'list', 'inspect'],
  system: ['df', 'info', 'events'],
  context: ['ls', 'list', 'inspect', 'show'],
  compose: ['ps', 'logs', 'config', 'ls', 'images', 'top', 'version'],
};
/** Options refused on any reading docker subcommand (compose config writes with -o/--output). */
const DOCKER_DENIED_LONG: Record<string, string> = { '--output': 'it writes a file' };
/**
 * podman's global options are persistent flags: they are also read after the subcommand
 * (`podman ps --out FILE` writes stdout to FILE, `--url`/`--connection` pick another engine,
 * `--root`/`--runroot`/`--tmpdir` make podman create storage there).
 */
const PODMAN_GLOBAL_WHY = "it is podman's global option (also read after the subcommand): it writes files or picks another engine, configuration or storage";
const PODMAN_DENIED_LONG: Record<string, string> = Object.fromEntries(
  [
    '--out',
    '--url',
    '--connection',
    '--identity',
    '--remote',
    '--root',
    '--runroot',
    '--storage-driver',
    '--storage-opt',
    '--tmpdir',
    '--config',
    '--hooks-dir',
    '--module',
    '--runtime',
    '--runtime-flag',
    '--conmon',
    '--cgroup-manager',
    '--events-backend',
    '--imagestore',
    '--network-config-dir',
    '--network-cmd-path',
    '--volumepath',
    '--ssh',
    '--registries-conf',
    '--db-backend',
    '--log-level',
    '--syslog',
  ].map((option) => [option, PODMAN_GLOBAL_WHY]),
);

export const dockerRule =
  (command: string): Rule =>
  (args, context) => {
    // A global option before the subcommand: only a lone --version is read.
    const first = args[0];
    if (first?.startsWith('-')) {
      if (first === '--version' || first === '-v') return args.length === 1 ? null : `${command}: --version takes nothing else`;
      return `${command}: the global option ${first} is refused (it can pick another engine, configuration or credentials); write the subcommand first`;
    }
    const sub = first;
    if (sub === undefined) return `${command}: name a reading subcommand (${listOf(DOCKER_READS)}, or ${listOf(Object.keys(DOCKER_GROUPS))} with theirs)`;
    let rest = args.slice(1);
    let name = sub;
    if (DOCKER_GROUPS[sub]) {
      let j = 0;
      const groupOptions: string[] = [];
      if (sub === 'compose') {
        // compose's own options come before its subcommand: project files and names only.
        for (; j < rest.length && rest[j]!.startsWith('-'); j++) {
          const option = rest[j]!;
          if (/^(-f|--file|-p|--project-name|--project-directory|--env-file|--profile)$/.test(option)) {
            groupOptions.push(option, rest[j + 1] ?? '');
            j += 1;
            continue;
          }
          if (/^(--file|--project-name|--project-directory|--env-file|--profile)=/.test(option) || /^-[fp]./.test(option)) {
            groupOptions.push(option);
            continue;
          }
          return (
            `${command} compose: the option ${option} is refused before the subcommand (allowed: -f FILE, -p NAME, --project-directory DIR, --env-file ` +
            `FILE, --profile NAME)`
          );
        }
      }
      const verb = rest[j];
      if (verb === undefined || !DOCKER_GROUPS[sub].includes(verb)) {
        return `${command} ${sub}: ${verb === undefined ? 'name' : `"${verb}" is refused; use`} one of ${listOf(DOCKER_GROUPS[sub])}`;
      }
      name = `${sub} ${verb}`;
      rest = rest.slice(j + 1);
    } else if (!DOCKER_READS.includes(sub)) {
      return (
        `${command}: the subcommand "${sub}" is refused; only reading subcommands run in the restricted shell (${listOf(DOCKER_READS)}; ` +
        `${listOf(Object.entries(DOCKER_GROUPS).map(([group, verbs]) => `${group} ${verbs.join('/')}`))})`
      );
    }
    const spec: OptionSpec = {
      shortWithValue: name === 'compose config' ? 'o' : '',
      deniedShort: name === 'compose config' ? { o: 'it writes a file' } : {},
      deniedLong: command === 'podman' ? { ...DOCKER_DENIED_LONG, ...PODMAN_DENIED_LONG } : DOCKER_DENIED_LONG,
      longWithValue: ['--format', '--filter', '--since', '--until', '--tail', '--type', '--size'],
    };
    const scanned = scanOptions(`${command} ${name}`, rest, spec);
    if ((name === 'stats' || name === 'container stats') && !scanned.long.includes('--no-stream'))
      return `${command} ${name}: add --no-stream (otherwise it never ends)`;
    return networkRefusal(`${command} (the engine's socket)`, 'loopback', context);
  };

/** kubectl: reading verbs against the cluster the user's own kubeconfig names. */
const KUBECTL_READS = ['get', 'describe', 'logs', 'top', 'explain', 'api-resources', 'api-versions', 'version', 'cluster-info', 'events'];
const KUBECTL_CONFIG_READS = ['view', 'get-contexts', 'current-context', 'get-clusters', 'get-users'];
/** Global options that may be written before or after the verb. */
const KUBECTL_GLOBAL_VALUE = ['-n', '--namespace', '--context', '--cluster', '--user', '--request-timeout', '-v', '--v'];
const KUBECTL_DENIED_LONG: Record<string, string> = {
  '--kubeconfig': 'a kubeconfig can name credential programs to run',
  '--server': 'it picks another API server',
  '--token': 'it passes credentials',
  '--as': 'it impersonates',
  '--as-group': 'it impersonates',
  '--as-uid': 'it impersonates',
  '--username': 'it passes credentials',
  '--password': 'it passes credentials',
  '--client-key': 'it passes credentials',
  '--client-certificate': 'it passes credentials',
  '--insecure-skip-tls-verify': 'it turns off TLS checks',
  '--cache-dir': 'it writes a cache',
  '--raw': 'it prints credentials (config view) or sends a raw request',
  '--output-directory': 'it writes files',
  '--edit': 'it edits',
  '--overwrite': 'it writes',
  '--save-config': 'it writes',
  // Global options of every verb that write files (kubectl's pprof output and klog's log files).
  '--profile-output': 'it writes a file',
  '--profile': 'it writes a profiling file (with --profile-output)',
  '--log-file': 'it writes a file',
  '--log-dir': 'it writes files',
};
export const kubectlRule: Rule = (args, context) => {
  const scanned = scanOptions('kubectl', args, {
    shortWithValue: 'nlocfLsv',
    deniedShort: { s: 'it picks another API server' },
    deniedLong: KUBECTL_DENIED_LONG,
    // kubectl (pflag) takes no abbreviations: `--client` is version's own option, not --client-key.
    exactLong: true,
    longWithValue: [
      ...KUBECTL_GLOBAL_VALUE.filter((o) => o.startsWith('--')),
      '--output',
      '--selector',
      '--field-selector',
      '--sort-by',
      '--container',
      '--since',
      '--since-time',
      '--tail',
      '--limit-bytes',
      '--chunk-size',
      '--template',
      '--label-columns',
      '--filename',
      '--api-group',
      '--recursive',
      '--show-kind',
      '--sort-by',
      '--max-log-requests',
      '--pod-running-timeout',
      '--containers',
    ],
  });
  const [verb, second] = scanned.operands;
  if (verb === undefined) return `kubectl: name a reading verb (${listOf(KUBECTL_READS)}, config ${KUBECTL_CONFIG_READS.join('/')})`;
  if (verb === 'config') {
    if (second === undefined || !KUBECTL_CONFIG_READS.includes(second))
      return `kubectl config: only ${listOf(KUBECTL_CONFIG_READS)} (without --raw) read the configuration; "${second ?? ''}" is refused`;
    return null; // reads the local kubeconfig only
  }
  if (!KUBECTL_READS.includes(verb))
    return (
      `kubectl: the verb "${verb}" is refused; only reading verbs run in the restricted shell (${listOf(KUBECTL_READS)}, config ` +
      `${KUBECTL_CONFIG_READS.join('/')})`
    );
  if (verb === 'cluster-info' && second !== undefined) return 'kubectl cluster-info: only without a subcommand ("dump" writes files)';
  // Only the client's own version is local (`--client=false` asks the server too).
  if (verb === 'version' && args.some((arg) => arg === '--client' || arg === '--client=true')) return null;
  return networkRefusal('kubectl (the API server)', 'all', context);
};

/**
 * curl: GET (or HEAD) of http(s) URLs only, printed to stdout; no output files, uploads, data,
 * config files, other protocols or cookies written. Under `loopback` the URL's host must be this
 * host, and redirects are not followed (they could lead elsewhere).
 */
const CURL_ALLOWED_SHORT = 'sSfiIvkLmH4g';
const CURL_ALLOWED_LONG = [
  '--silent',
  '--show-error',
  '--fail',
  '--fail-with-body',
  '--include',
  '--head',
  '--verbose',
  '--insecure',
  '--location',
  '--max-time',
  '--connect-timeout',
  '--header',
  '--compressed',
  '--http1.1',
  '--http2',
  '--ipv4',
  '--ipv6',
  '--no-progress-meter',
  '--max-filesize',
  '--retry',
  '--retry-delay',
  '--max-redirs',
  '--globoff',
  '--get',
  '--user-agent',
  '--write-out',
  '--url',
  '--unix-socket',
  '--noproxy',
  '--no-buffer',
  '--raw',
  '--path-as-is',
];
const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\]|\[0:0:0:0:0:0:0:1\])$/i;
export const curlRule: Rule = (args, context) => {
  const scanned = scanOptions('curl', args, {
    shortWithValue: 'mHA',
    allowedShort: `${CURL_ALLOWED_SHORT}A`,
    allowedLong: CURL_ALLOWED_LONG,
    longWithValue: [
      '--max-time',
      '--connect-timeout',
      '--header',
      '--max-filesize',
      '--retry',
      '--retry-delay',
      '--max-redirs',
      '--user-agent',
      '--write-out',
      '--url',
      '--unix-socket',
      '--noproxy',
    ],
  });
  for (const [option, value] of scanned.values) {
    if (value.startsWith('@')) return `curl: ${option} ${value} reads a file (its content would be sent)`;
    // curl 8.3+: "%output{FILE}" in --write-out sends the rest of the output to FILE (">>FILE" appends).
    if (option === '--write-out' && /%output\{/i.test(value)) return 'curl: --write-out %output{FILE} writes a file';
  }
  const socket = scanned.values.find(([option]) => option === '--unix-socket');
  if (socket) return 'curl: --unix-socket is refused (a local socket can be any service, such as the docker engine)';
  const urls = [...scanned.operands, ...scanned.values.filter(([option]) => option === '--url').map(([, value]) => value)];
  if (urls.length === 0) return 'curl: name the URL';
  let needs: ShellNetwork = 'loopback';
  for (const url of urls) {
    const match = /^(https?):\/\/([^/?#]*)/i.exec(url);
    // An unquoted word with [ or * is a file pattern to bash (the check marks it with a NUL): quoted, an IPv6 URL passes.
    if (url.startsWith('\0')) return `curl: the URL ${url.slice(1)} is a file pattern to the shell (it holds [, ] or *); quote it, e.g. "${url.slice(1)}"`;
    if (!match) return `curl: only http:// and https:// URLs written in full are allowed (${JSON.stringify(url)})`;
    const authority = match[2]!;
    if (authority.includes('@')) return 'curl: credentials in the URL are refused';
    if (/[{}[\]]/.test(url.replace(/^https?:\/\/\[[0-9a-f:]+\]/i, '')) && !scanned.long.includes('--globoff') && !scanned.short.has('g'))
      return 'curl: braces and brackets in a URL make curl fetch several URLs; add --globoff or write one URL';
    const host = authority.replace(/:\d+$/, '');
    if (!LOOPBACK_HOST.test(host)) needs = 'all';
  }
  if (needs === 'loopback' && context.network === 'loopback' && (scanned.short.has('L') || scanned.long.includes('--location'))) {
    return 'curl: following redirects (-L) is refused under shell_network: loopback (a redirect can lead to another host)';
  }
  return networkRefusal(`curl (${needs === 'all' ? 'a host other than this one' : 'this host'})`, needs, context);
};

/**
 * `getent DATABASE [KEY...]`: hosts, ahosts*, networks and netgroup look names up through the name
 * service, which sends a DNS query naming the key to whatever server answers for its domain, so
 * `getent hosts DATA.example.org` can carry data out even where nothing else reaches the network
 * (bubblewrap's own network namespace stops it; without bubblewrap only this rule does). They
 * need shell_network: all. The local databases (passwd, group, services, ...) stay allowed; options
 * (-s picks the service) are refused.
 */
const GETENT_NETWORK_DATABASES = new Set(['hosts', 'ahosts', 'ahostsv4', 'ahostsv6', 'networks', 'netgroup']);

export const getentRule: Rule = (args, context) => {
  const option = args.find((arg) => arg.startsWith('-'));
  if (option) return `getent: the option ${option} is refused (it picks the lookup service or changes what is looked up); write getent DATABASE KEY...`;
  const database = args[0];
  if (database === undefined) return 'getent: name a database (passwd, group, services, protocols, shells; hosts and ahosts need shell_network: all)';
  if (database.startsWith('\0')) return 'getent: write the database name plainly (not a file pattern)';
  if (!GETENT_NETWORK_DATABASES.has(database)) return null;
  return networkRefusal(`getent ${database} (a name lookup can send a DNS query out)`, 'all', context);
};
