import { isSecretVariable } from '../../security/secret-variables.js';

/**
 * The environment a shell command gets (docs/guide/databases.md, secrets). In restricted mode it holds no secrets
 * (so `env`/`printenv` print none) and none of the variables that make programs run other
 * programs, load code or read configuration we have not checked; a few are set to make
 * inspection tools behave (no pagers, no optional git locks, less without shell escapes).
 * Unrestricted mode keeps the environment as it is: any command may read secrets there anyway
 * (files, credentials helpers), and developers' tools need their tokens.
 */

/** Variables that make shells and tools run code, load libraries or read unchecked configuration. */
// biome-ignore format: a list of names reads best packed
const BEHAVIOUR_NAME = new RegExp(
  `^(${[
    'BASH_ENV', 'ENV', 'BASH_FUNC_.*', 'SHELLOPTS', 'BASHOPTS', 'CDPATH', 'GLOBIGNORE', 'IFS', 'PS4',
    'PROMPT_COMMAND', 'LD_.*', 'GCONV_PATH', 'GIT_.*', 'PAGER', 'MANPAGER', 'SYSTEMD_PAGER', 'LESS.*',
    'MORE', 'EDITOR', 'VISUAL', 'BROWSER', 'TAR_OPTIONS', 'GREP_OPTIONS', 'RIPGREP_CONFIG_PATH', 'AWKPATH',
    'AWKLIBPATH', 'PYTHON.*', 'PERL5?LIB', 'PERL5OPT', 'RUBYOPT', 'NODE_OPTIONS', 'GZIP', 'BZIP2?', 'XZ_OPT',
    'XZ_DEFAULTS', 'ZSTD_.*', 'SSH_ASKPASS', 'SUDO_ASKPASS', 'JQ_COLORS', 'JQ_LIBRARY_PATH', 'MAGIC',
    'TMPDIR', 'POSIXLY_CORRECT', 'TAPE',
  ].join('|')})$`,
);

/**
 * Command-line-strength overrides of any repository configuration (GIT_CONFIG_COUNT/KEY/VALUE,
 * read after the repository's own file): no fsmonitor program, no pager, no gpg (log
 * --show-signature and %G? run gpg.program), no transport (a partial clone would fetch missing
 * objects and run core.sshCommand), no look into submodules (git would run there under their own
 * configuration), and repositories owned by other users stay readable (their configuration is
 * checked before git runs: policy/git.ts).
 */
const GIT_OVERRIDES: Array<[string, string]> = [
  ['core.fsmonitor', 'false'],
  ['core.pager', 'cat'],
  ['safe.directory', '*'],
  ['gpg.program', 'false'],
  ['gpg.ssh.program', 'false'],
  ['gpg.x509.program', 'false'],
  ['log.showSignature', 'false'],
  ['protocol.allow', 'never'],
  ['diff.ignoreSubmodules', 'dirty'],
  ['submodule.recurse', 'false'],
  ['core.hooksPath', '/dev/null'],
];

/**
 * Where programs that keep state under the home directory are sent in restricted mode: a path
 * below /dev/null, which no one (root included) can create, on every Unix. Without bubblewrap
 * `top -b` created ~/.config/procps and `kubectl get` wrote ~/.kube/cache; with these they write
 * nothing and still print what was asked.
 */
export const NO_WRITES_DIR = '/dev/null/quarry-read-only';

/**
 * Set in restricted mode: no pagers, no git config beyond the repository's own and no locks, less
 * without escapes, no state written under the home directory.
 */
const RESTRICTED_SETTINGS: Record<string, string> = {
  XDG_CONFIG_HOME: NO_WRITES_DIR,
  XDG_CACHE_HOME: NO_WRITES_DIR,
  XDG_STATE_HOME: NO_WRITES_DIR,
  KUBECACHEDIR: NO_WRITES_DIR,
  LESSHISTFILE: '-',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  LESSSECURE: '1',
  GIT_OPTIONAL_LOCKS: '0',
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_COUNT: String(GIT_OVERRIDES.length),
  ...Object.fromEntries(
    GIT_OVERRIDES.flatMap(([key, value], n) => [
      [`GIT_CONFIG_KEY_${n}`, key],
      [`GIT_CONFIG_VALUE_${n}`, value],
    ]),
  ),
};

export function restrictedEnvironment(source: NodeJS.ProcessEnv, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || isSecretVariable(name, value) || BEHAVIOUR_NAME.test(name)) continue;
    env[name] = value;
  }
  // Only absolute PATH entries: an empty or relative one would find programs in the working directory.
  env.PATH = (source.PATH ?? '/usr/local/bin:/usr/bin:/bin')
    .split(':')
    .filter((dir) => dir.startsWith('/'))
    .join(':');
  return { ...env, ...RESTRICTED_SETTINGS, ...extra };
}

export function unrestrictedEnvironment(source: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) if (value !== undefined) env[name] = value;
  return { ...env, PAGER: 'cat', GIT_PAGER: 'cat' };
}
