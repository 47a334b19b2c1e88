import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './servers.js';

/**
 * A real OpenSSH server (Debian openssh-server) for the SSH tunnel tests: `sshd -D` on a
 * loopback port with its own host key, letting in one generated client key, logging at DEBUG1
 * (which logs every forwarding request, so a test can prove its queries went through it).
 * A missing binary is an error that says what to install.
 */

export const SSHD = '/usr/sbin/sshd';

export interface SshKeyPair {
  privatePath: string;
  publicKey: string;
}

export function generateKey(dir: string, name: string): SshKeyPair {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', path]);
  return { privatePath: path, publicKey: readFileSync(`${path}.pub`, 'utf8').trim() };
}

export interface RunningSshd {
  port: number;
  user: string;
  /** The host key's public line (`ssh-ed25519 AAAA...`). */
  hostPublicKey: string;
  logPath: string;
  log(): string;
  /** Kills the listener and every session process it forked (SIGKILL: no goodbye to the client). */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same keys. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  pids(): number[];
}

function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) children.push(Number(entry), ...childrenOf(Number(entry)));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

export async function startSshd(dir: string, authorizedKeys: string[], name = 'sshd'): Promise<RunningSshd> {
  if (!existsSync(SSHD)) throw new Error(`${SSHD} not found (install it: apt-get install -y openssh-server)`);
  // sshd's privilege separation needs its empty directory; the service unit would create it.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  const hostKey = join(home, 'host_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  const authorized = join(home, 'authorized_keys');
  writeFileSync(authorized, `${authorizedKeys.join('\n')}\n`);
  chmodSync(authorized, 0o600);
  const port = await freePort();
  const logPath = join(home, 'sshd.log');
  const config = join(home, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${join(home, 'sshd.pid')}`,
      `AuthorizedKeysFile ${authorized}`,
      'StrictModes no',
      'UsePAM no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      'AllowTcpForwarding yes',
      'LogLevel DEBUG1',
      '',
    ].join('\n'),
  );
  let child: ChildProcess | null = null;
  const start = async () => {
    const from = readLog().length;
    const started = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    started.stderr!.on('data', (chunk: Buffer) => writeFileSync(logPath, chunk, { flag: 'a' }));
    child = started;
    const deadline = Date.now() + 10_000;
    while (!readLog().slice(from).includes(`Server listening on 127.0.0.1 port ${port}`)) {
      if (started.exitCode !== null) throw new Error(`sshd exited at start: ${readLog().slice(-500)}`);
      if (Date.now() > deadline) throw new Error(`sshd did not start: ${readLog().slice(-500)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const readLog = () => (existsSync(logPath) ? readFileSync(logPath, 'utf8') : '');
  const kill = async () => {
    const current = child;
    if (!current?.pid || current.exitCode !== null) return;
    const pids = [current.pid, ...childrenOf(current.pid)];
    const exited = new Promise((resolve) => current.once('exit', resolve));
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
    child = null;
  };
  await start();
  return {
    port,
    user: userInfo().username,
    hostPublicKey: readFileSync(`${hostKey}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' '),
    logPath,
    log: readLog,
    kill,
    restart: start,
    stop: kill,
    pids: () => {
      const current = child as ChildProcess | null;
      return current?.pid ? [current.pid, ...childrenOf(current.pid)] : [];
    },
  };
}

/** How many forwardings (direct-tcpip channels) to a port the server's DEBUG1 log shows: proof that traffic went through it. */
export function forwardedTo(server: RunningSshd, port: string | number): number {
  return server
    .log()
    .split('\n')
    .filter((line) => (line.includes('direct-tcpip') || line.includes('server_request_direct_tcpip')) && line.includes(`port ${port}`)).length;
}
