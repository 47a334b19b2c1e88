import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { interpolateEnv, isMapping } from './yaml.js';

/**
 * A database entry's `ssh:` block (docs/guide/databases.md "SSH tunnels"): quarry reaches the database's host and
 * port through this SSH server (and its jump hosts), with strict host-key checking against
 * `known_hosts`. The password and the key's passphrase are kept here so they can be scrubbed.
 */
export interface SshHop {
  host: string;
  port: number;
  user: string;
  /** Absolute path of the private key; absent: the SSH agent ($SSH_AUTH_SOCK) or ~/.ssh/id_* keys. */
  identityFile?: string;
  passphrase?: string;
  password?: string;
}

export interface SshConfig extends SshHop {
  /** Absolute path; one file covers the jump hosts too. */
  knownHosts: string;
  /** Reached one after another before this server. */
  jump: SshHop[];
  keepaliveSeconds: number;
}

export const DEFAULT_SSH_PORT = 22;
export const DEFAULT_SSH_KEEPALIVE_SECONDS = 30;
const SSH_KEYS = ['host', 'port', 'user', 'identity_file', 'passphrase', 'password', 'known_hosts', 'jump', 'keepalive_seconds'] as const;
const HOP_KEYS = ['host', 'port', 'user', 'identity_file', 'passphrase', 'password'] as const;

/** `~` is $HOME (as Node's os.homedir() reads it); a relative path is relative to the config file's folder. */
export function expandHome(path: string, dir: string, env: NodeJS.ProcessEnv): string {
  const home = env.HOME || homedir();
  if (path === '~') return home;
  if (path.startsWith('~/')) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(dir, path);
}

export function parseSshBlock(raw: unknown, where: string, dir: string, env: NodeJS.ProcessEnv): SshConfig {
  if (!isMapping(raw)) throw new ConfigError(`${where} must be a mapping: ssh: {host, port, user, identity_file, known_hosts, jump, keepalive_seconds}`);
  const hop = parseHop(raw, where, dir, env, SSH_KEYS);
  const home = env.HOME || homedir();
  const knownHosts =
    raw.known_hosts === undefined ? join(home, '.ssh', 'known_hosts') : expandHome(text(raw.known_hosts, `${where}.known_hosts`, env), dir, env);
  let jump: SshHop[] = [];
  if (raw.jump !== undefined && raw.jump !== null) {
    const list = Array.isArray(raw.jump) ? raw.jump : [raw.jump];
    jump = list.map((entry, index) => {
      const at = `${where}.jump[${index}]`;
      if (!isMapping(entry)) throw new ConfigError(`${at} must be a mapping: {host, port, user, identity_file}`);
      return parseHop(entry, at, dir, env, HOP_KEYS);
    });
  }
  let keepaliveSeconds = DEFAULT_SSH_KEEPALIVE_SECONDS;
  if (raw.keepalive_seconds !== undefined) {
    keepaliveSeconds = Number(raw.keepalive_seconds);
    if (!Number.isFinite(keepaliveSeconds) || keepaliveSeconds < 0)
      throw new ConfigError(`${where}.keepalive_seconds must be a number of seconds, 0 for none (got ${JSON.stringify(raw.keepalive_seconds)})`);
  }
  return { ...hop, knownHosts, jump, keepaliveSeconds };
}

function parseHop(raw: Record<string, unknown>, where: string, dir: string, env: NodeJS.ProcessEnv, allowed: readonly string[]): SshHop {
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) throw new ConfigError(`${where}: unknown key "${key}"; allowed keys: ${allowed.join(', ')}`);
  }
  if (raw.host === undefined) throw new ConfigError(`${where}: needs "host" (the SSH server)`);
  const host = text(raw.host, `${where}.host`, env);
  const port = raw.port === undefined ? DEFAULT_SSH_PORT : Number(raw.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new ConfigError(`${where}.port must be a port number (got ${JSON.stringify(raw.port)})`);
  const user = raw.user === undefined ? env.USER || env.LOGNAME : text(raw.user, `${where}.user`, env);
  if (!user) throw new ConfigError(`${where}: needs "user" (the SSH login)`);
  const hop: SshHop = { host, port, user };
  if (raw.identity_file !== undefined) hop.identityFile = expandHome(text(raw.identity_file, `${where}.identity_file`, env), dir, env);
  if (raw.passphrase !== undefined) hop.passphrase = text(raw.passphrase, `${where}.passphrase`, env);
  if (raw.password !== undefined) hop.password = text(raw.password, `${where}.password`, env);
  return hop;
}

function text(value: unknown, where: string, env: NodeJS.ProcessEnv): string {
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string' || value === '') throw new ConfigError(`${where} must be a non-empty string`);
  return interpolateEnv(value, env, where);
}

/** The SSH secrets of a database (passwords and passphrases of every hop), for scrubbing. */
export function sshSecrets(ssh: SshConfig | undefined): string[] {
  if (!ssh) return [];
  return [ssh, ...ssh.jump].flatMap((hop) => [hop.password, hop.passphrase]).filter((value): value is string => Boolean(value));
}

/** `user@host:port` (with ` via ...` for jump hosts), as messages and `db list` show a tunnel. */
export function describeSsh(ssh: SshConfig): string {
  const hop = (h: SshHop) => `${h.user}@${h.host}:${h.port}`;
  return `ssh ${hop(ssh)}${ssh.jump.length ? ` via ${ssh.jump.map(hop).join(', ')}` : ''}`;
}
