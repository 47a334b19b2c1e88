import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real PostgreSQL and MariaDB servers for tests and the bench: each on a loopback port with a
 * temporary data directory, no systemd. Started as the `postgres` user (PostgreSQL refuses
 * root) or as the current user when not root. A missing binary is an error that says what to
 * install; nothing is skipped.
 */

export const TEST_DB_NAME = 'quarry_test';
export const TEST_DB_USER = 'quarry_test';
/** A password with URL-special characters, so scrubbing and URL parsing are exercised. */
export const TEST_DB_PASSWORD = 'S3cret:p@ss/word';

export interface RunningServer {
  /** URL for the test user (password included, URL-encoded). */
  url: string;
  /** URL for a superuser, to inspect and set up state beside the tool. */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
  /** PostgreSQL only: a fast restart on the same port and data (every connection is dropped). */
  restart?(): void;
}

const isRoot = process.getuid?.() === 0;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function findPostgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) {
    throw new Error('PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (install them: apt-get install -y postgresql)');
  }
  return join(root, versions[0]!, 'bin');
}

function requireBinary(path: string, pkg: string): string {
  if (!existsSync(path)) throw new Error(`${path} not found (install it: apt-get install -y ${pkg})`);
  return path;
}

/** Runs a command, as the postgres user when we are root. */
function runAsPostgres(argv: string[], options: { input?: string } = {}): string {
  const command = isRoot ? ['runuser', '-u', 'postgres', '--', ...argv] : argv;
  return execFileSync(command[0]!, command.slice(1), { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], input: options.input ?? '' });
}

function makeDataDir(prefix: string, owner: 'postgres' | 'self'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (isRoot && owner === 'postgres') {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  return dir;
}

export async function startPostgres(): Promise<RunningServer> {
  const bin = findPostgresBin();
  const dir = makeDataDir('quarry-pg-', 'postgres');
  const data = join(dir, 'data');
  const port = await freePort();
  const adminPassword = 'admin-pw';
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, adminPassword);
  if (isRoot) execFileSync('chown', ['postgres', pwfile]);
  runAsPostgres([
    join(bin, 'initdb'),
    '-D',
    data,
    '-U',
    'postgres',
    '--pwfile',
    pwfile,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  runAsPostgres([
    join(bin, 'pg_ctl'),
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-t',
    '30',
    'start',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
  ]);
  const psql = (sql: string, database = 'postgres') =>
    runAsPostgres([join(bin, 'psql'), '-h', dir, '-p', String(port), '-U', 'postgres', '-d', database, '-v', 'ON_ERROR_STOP=1', '-qAt', '-c', sql]);
  psql(`CREATE ROLE ${TEST_DB_USER} LOGIN PASSWORD '${TEST_DB_PASSWORD}'`);
  psql(`CREATE DATABASE ${TEST_DB_NAME} OWNER ${TEST_DB_USER}`);
  const password = encodeURIComponent(TEST_DB_PASSWORD);
  return {
    port,
    url: `postgres://${TEST_DB_USER}:${password}@127.0.0.1:${port}/${TEST_DB_NAME}`,
    adminUrl: `postgres://postgres:${adminPassword}@127.0.0.1:${port}/${TEST_DB_NAME}`,
    restart: () => {
      runAsPostgres([join(bin, 'pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-m', 'fast', '-w', '-t', '30', 'restart']);
    },
    stop: async () => {
      try {
        runAsPostgres([join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

async function waitFor(check: () => boolean, what: string, timeoutMs: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode} while starting`);
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} did not start within ${timeoutMs / 1000} s`);
}

export async function startMariadb(): Promise<RunningServer> {
  const installDb = requireBinary('/usr/bin/mariadb-install-db', 'mariadb-server');
  const server = requireBinary('/usr/sbin/mariadbd', 'mariadb-server');
  const client = requireBinary('/usr/bin/mariadb', 'mariadb-client');
  const dir = makeDataDir('quarry-mariadb-', 'self');
  const data = join(dir, 'data');
  const socket = join(dir, 'mysqld.sock');
  const port = await freePort();
  const userFlag = isRoot ? ['--user=root'] : [];
  execFileSync(installDb, ['--no-defaults', `--datadir=${data}`, ...userFlag, '--auth-root-authentication-method=socket', '--skip-test-db'], { stdio: 'pipe' });
  const child = spawn(
    server,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--pid-file=${join(dir, 'mysqld.pid')}`,
      `--log-error=${join(dir, 'error.log')}`,
      '--skip-log-bin',
      '--innodb-flush-log-at-trx-commit=0',
      '--innodb-buffer-pool-size=64M',
      ...userFlag,
    ],
    { stdio: 'ignore', detached: false },
  );
  const mysql = (sql: string) => execFileSync(client, ['--no-defaults', `--socket=${socket}`, '-uroot', '-e', sql], { encoding: 'utf8', stdio: 'pipe' });
  await waitFor(
    () => {
      try {
        mysql('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    'mariadbd',
    30_000,
    child,
  );
  const adminPassword = 'admin-pw';
  mysql(`CREATE DATABASE ${TEST_DB_NAME}`);
  mysql(`CREATE USER '${TEST_DB_USER}'@'127.0.0.1' IDENTIFIED BY '${TEST_DB_PASSWORD}'`);
  mysql(`GRANT ALL ON ${TEST_DB_NAME}.* TO '${TEST_DB_USER}'@'127.0.0.1'`);
  mysql(`CREATE USER 'quarry_admin'@'127.0.0.1' IDENTIFIED BY '${adminPassword}'`);
  mysql(`GRANT ALL ON *.* TO 'quarry_admin'@'127.0.0.1' WITH GRANT OPTION`);
  const password = encodeURIComponent(TEST_DB_PASSWORD);
  return {
    port,
    url: `mysql://${TEST_DB_USER}:${password}@127.0.0.1:${port}/${TEST_DB_NAME}`,
    adminUrl: `mysql://quarry_admin:${adminPassword}@127.0.0.1:${port}/${TEST_DB_NAME}`,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
