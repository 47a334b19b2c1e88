import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import { describeSsh, type SshConfig, type SshHop } from '../../config/ssh.js';
import { importOptional } from '../core/optional-packages.js';
import { ToolError } from '../core/types.js';
import { checkHostKey, knownKeyTypes } from './known-hosts.js';

/**
 * SSH tunnels for server databases (docs/guide/databases.md "SSH tunnels"), through the ssh2 package (no `ssh`
 * binary). One tunnel per SSH server (and jump chain) per process, opened on first use and
 * reopened by the next call after it drops; closeAllTunnels() (called with
 * closeAllDatabaseConnections at exit) ends them. A database's driver connects to a loopback
 * port of this process, and each connection to it becomes one forwarded channel to the
 * database's host and port as the SSH server sees them. Host keys are checked against
 * known_hosts before authenticating (known-hosts.ts).
 */

type Ssh2 = typeof import('ssh2');

const tunnels = new Map<string, SshTunnel>();

function hopName(hop: SshHop): string {
  return `${hop.user}@${hop.host}:${hop.port}`;
}

/** The tunnel for an SSH server (and jump chain), shared by every database behind it. */
export function tunnelFor(ssh: SshConfig): SshTunnel {
  const key = JSON.stringify([ssh.knownHosts, ...[...ssh.jump, ssh].map((hop) => [hop.host, hop.port, hop.user, hop.identityFile ?? ''])]);
  let tunnel = tunnels.get(key);
  if (!tunnel) {
    tunnel = new SshTunnel(ssh);
    tunnels.set(key, tunnel);
  }
  return tunnel;
}

export async function closeAllTunnels(): Promise<void> {
  const open = [...tunnels.values()];
  tunnels.clear();
  await Promise.allSettled(open.map((tunnel) => tunnel.close()));
}

export class SshTunnel {
  /** The chain's clients, jump hosts first; null while not connected. */
  private clients: Client[] | null = null;
  private connecting: Promise<Client[]> | null = null;
  private readonly forwards = new Map<string, Promise<Server>>();
  private readonly sockets = new Set<Socket>();
  /** Counts drops: a call that started at another count saw its tunnel go. */
  generation = 0;
  lastDrop = '';
  private closed = false;

  constructor(readonly ssh: SshConfig) {}

  get name(): string {
    return describeSsh(this.ssh);
  }

  get connected(): boolean {
    return this.clients !== null;
  }

  /** Connects the chain if it is not (quickly resolved when it is). */
  async open(timeoutMs: number): Promise<void> {
    await this.chain(timeoutMs);
  }

  private chain(timeoutMs: number): Promise<Client[]> {
    if (this.clients) return Promise.resolve(this.clients);
    if (!this.connecting) {
      this.connecting = this.connectChain(timeoutMs).finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting;
  }

  private async connectChain(timeoutMs: number): Promise<Client[]> {
    const ssh2 = await importOptional(['ssh2'], async () => {
      const module = (await import('ssh2')) as Ssh2 & { default?: Ssh2 };
      return module.default ?? module;
    });
    const hops = [...this.ssh.jump, this.ssh];
    const clients: Client[] = [];
    try {
      for (const hop of hops) {
        const previous = clients[clients.length - 1];
        const sock = previous ? await forward(previous, hop.host, hop.port, `${hopName(hop)} through ${hopName(hops[clients.length - 1]!)}`) : undefined;
        clients.push(await this.connectHop(ssh2, hop, timeoutMs, sock));
      }
    } catch (error) {
      for (const client of clients.reverse()) client.end();
      throw error;
    }
    const last = clients[clients.length - 1]!;
    const generation = this.generation;
    const dropped = (reason: string) => {
      if (this.clients !== clients || this.generation !== generation) return;
      this.clients = null;
      this.generation++;
      this.lastDrop = reason;
      for (const client of clients) client.end();
    };
    for (const [index, client] of clients.entries()) {
      client.on('error', (error: Error) => dropped(`${hopName(hops[index]!)}: ${error.message}`));
      client.on('close', () => dropped(`the connection to ${hopName(hops[index]!)} closed`));
    }
    last.on('end', () => dropped(`${hopName(this.ssh)} ended the connection`));
    if (this.closed) {
      for (const client of clients) client.end();
      throw new ToolError(`SSH tunnel ${this.name} was closed`, 'ssh_tunnel');
    }
    this.clients = clients;
    return clients;
  }

  private connectHop(ssh2: Ssh2, hop: SshHop, timeoutMs: number, sock: ClientChannel | undefined): Promise<Client> {
    const client = new ssh2.Client();
    let hostKeyRefusal: string | null = null;
    const config: ConnectConfig = {
      host: hop.host,
      port: hop.port,
      username: hop.user,
      readyTimeout: timeoutMs,
      keepaliveInterval: this.ssh.keepaliveSeconds * 1000,
      keepaliveCountMax: 3,
      hostVerifier: (key: Buffer) => {
        const verdict = checkHostKey(this.ssh.knownHosts, hop.host, hop.port, key);
        if (!verdict.ok) hostKeyRefusal = verdict.message;
        return verdict.ok;
      },
      ...credentials(hop),
    };
    const known = knownKeyTypes(this.ssh.knownHosts, hop.host, hop.port);
    if (known.length) config.algorithms = { serverHostKey: preferredHostKeyAlgorithms(known) as never };
    if (sock) config.sock = sock;
    return new Promise<Client>((resolve, reject) => {
      const fail = (error: Error & { level?: string }) => {
        client.removeAllListeners('ready');
        client.end();
        reject(explainSshError(error, hop, hostKeyRefusal));
      };
      client.once('ready', () => {
        client.removeListener('error', fail);
        resolve(client);
      });
      client.once('error', fail);
      try {
        client.connect(config);
      } catch (error) {
        fail(error as Error);
      }
    });
  }

  /** The loopback port that leads to host:port as the SSH server sees it (listening from now on). */
  localPort(host: string, port: number, timeoutMs: number): Promise<number> {
    const key = `${host}\u0000${port}`;
    let server = this.forwards.get(key);
    if (!server) {
      server = this.listen(host, port, timeoutMs);
      this.forwards.set(key, server);
      server.catch(() => this.forwards.delete(key));
    }
    return server.then((listening) => (listening.address() as { port: number }).port);
  }

  private listen(host: string, port: number, timeoutMs: number): Promise<Server> {
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      socket.pause();
      this.chain(timeoutMs)
        .then((clients) => forward(clients[clients.length - 1]!, host, port, `${host}:${port} through ${this.name}`))
        .then((channel) => {
          if (socket.destroyed) {
            channel.close();
            return;
          }
          channel.on('error', () => socket.destroy());
          channel.on('close', () => socket.destroy());
          socket.on('close', () => channel.close());
          socket.pipe(channel).pipe(socket);
          socket.resume();
        })
        .catch(() => socket.destroy());
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const socket of this.sockets) socket.destroy();
    const servers = await Promise.allSettled(this.forwards.values());
    this.forwards.clear();
    await Promise.all(
      servers.map((result) => (result.status === 'fulfilled' ? new Promise<void>((resolve) => result.value.close(() => resolve())) : undefined)),
    );
    const clients = this.clients ?? (await this.connecting?.catch(() => null)) ?? null;
    this.clients = null;
    for (const client of [...(clients ?? [])].reverse()) client.end();
  }
}

function forward(client: Client, host: string, port: number, what: string): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, host, port, (error, channel) => {
      if (error) reject(new ToolError(`SSH could not open a channel to ${what}: ${error.message}`, 'ssh_tunnel'));
      else resolve(channel);
    });
  });
}

/** The host-key algorithms of the key types known_hosts holds for a server, RSA by its SHA-2 signatures first. */
function preferredHostKeyAlgorithms(types: string[]): string[] {
  return types.flatMap((type) => (type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type]));
}

/** The hop's login: its identity file, else the SSH agent and the default keys; its password if set. */
function credentials(hop: SshHop): Partial<ConnectConfig> {
  const login: Partial<ConnectConfig> = {};
  if (hop.password) login.password = hop.password;
  if (hop.identityFile) {
    login.privateKey = readKey(hop.identityFile, hop);
  } else {
    if (process.env.SSH_AUTH_SOCK) login.agent = process.env.SSH_AUTH_SOCK;
    const home = process.env.HOME;
    const fallback = home ? ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((name) => join(home, '.ssh', name)).find((path) => existsSync(path)) : undefined;
    if (fallback) login.privateKey = readKey(fallback, hop);
  }
  if (hop.passphrase) login.passphrase = hop.passphrase;
  return login;
}

function readKey(path: string, hop: SshHop): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ToolError(
      `SSH ${hopName(hop)}: cannot read identity_file ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      'ssh_login',
    );
  }
}

function explainSshError(error: Error & { level?: string }, hop: SshHop, hostKeyRefusal: string | null): ToolError {
  if (error instanceof ToolError) return error;
  if (hostKeyRefusal) return new ToolError(hostKeyRefusal, 'ssh_host_key');
  const name = hopName(hop);
  const message = error.message.split('\n')[0] ?? '';
  if (error.level === 'client-authentication')
    return new ToolError(
      `SSH login refused for ${name} (${hop.identityFile ? `key ${hop.identityFile}` : 'agent and default keys'}${hop.password ? ', password' : ''}); check user and identity_file`,
      'ssh_login',
    );
  if (/passphrase|private key|privateKey|Cannot parse/i.test(message))
    return new ToolError(`SSH ${name}: ${message} (check identity_file and passphrase)`, 'ssh_login');
  if (error.level === 'client-timeout') return new ToolError(`SSH server ${name} did not answer within the connect timeout (${message})`, 'ssh_tunnel');
  return new ToolError(`SSH server ${name} unreachable: ${message}`, 'ssh_tunnel');
}
