import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadDatabaseConfigs } from '../../../src/config/databases.js';
import { closeAllDatabaseConnections } from '../../../src/tools/database/connections.js';
import type { DatabaseConfig } from '../../../src/tools/database/types.js';
import { runQuarry } from '../../support/cli.js';
import { makeTempDir } from '../../support/context.js';
import { forwardedTo, generateKey, startSshd, type RunningSshd, type SshKeyPair } from '../../support/sshd.js';
import { makeRunner, requireEnv } from './helpers.js';

/**
 * SSH tunnels (docs/guide/databases.md "SSH tunnels") against a real OpenSSH server in front of the suite's
 * PostgreSQL and MariaDB: sshd's DEBUG1 log names every forwarding request, so each test proves
 * its traffic went through the tunnel.
 */

let dir: string;
let sshd: RunningSshd;
let jump: RunningSshd;
let clientKey: SshKeyPair;
let wrongKey: SshKeyPair;
let knownHosts: string;
let pgUrl: URL;
let mysqlUrl: URL;

function knownHostsLine(server: RunningSshd): string {
  return `[127.0.0.1]:${server.port} ${server.hostPublicKey}`;
}

function fingerprint(publicKey: string): string {
  const file = join(dir, `fp-${Date.now()}.pub`);
  writeFileSync(file, `${publicKey}\n`);
  return execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', file], { encoding: 'utf8' }).split(' ')[1]!;
}

interface Entry {
  url: URL;
  ssh: Record<string, unknown>;
}

function yamlFor(entries: Record<string, Entry>): string {
  const lines = ['databases:'];
  for (const [alias, entry] of Object.entries(entries)) {
    lines.push(`  ${alias}:`, `    url: ${JSON.stringify(entry.url.href)}`, `    ssh: ${JSON.stringify(entry.ssh)}`);
  }
  return `${lines.join('\n')}\n`;
}

function configs(entries: Record<string, Entry>): DatabaseConfig[] {
  const file = join(dir, `databases-${Object.keys(entries).join('-')}.yaml`);
  writeFileSync(file, yamlFor(entries));
  return loadDatabaseConfigs({ databasesFile: file, env: { HOME: dir }, cwd: dir });
}

function viaSshd(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { host: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: clientKey.privatePath, known_hosts: knownHosts, ...extra };
}

/** Forwarding requests sshd logged to a port, e.g. PostgreSQL's. */
const forwardsTo = forwardedTo;

function acceptedLogins(server: RunningSshd): number {
  return server
    .log()
    .split('\n')
    .filter((line) => line.includes('Accepted publickey')).length;
}

beforeAll(async () => {
  dir = makeTempDir('quarry-ssh-');
  clientKey = generateKey(dir, 'client_key');
  wrongKey = generateKey(dir, 'wrong_key');
  sshd = await startSshd(dir, [clientKey.publicKey], 'bastion');
  jump = await startSshd(dir, [clientKey.publicKey], 'jump');
  // Hashed entries, as HashKnownHosts (Debian's default) writes them.
  knownHosts = join(dir, 'known_hosts');
  writeFileSync(knownHosts, `${knownHostsLine(sshd)}\n${knownHostsLine(jump)}\n`);
  execFileSync('ssh-keygen', ['-q', '-H', '-f', knownHosts], { stdio: 'ignore' });
  rmSync(`${knownHosts}.old`);
  expect(readFileSync(knownHosts, 'utf8')).toMatch(/^\|1\|/);
  pgUrl = new URL(requireEnv('QUARRY_TEST_PG_URL'));
  mysqlUrl = new URL(requireEnv('QUARRY_TEST_MYSQL_URL'));
});

afterAll(async () => {
  await closeAllDatabaseConnections();
  await sshd?.stop();
  await jump?.stop();
});

describe('ssh tunnel', () => {
  test('PostgreSQL query and export go through the tunnel', async () => {
    const runner = makeRunner(configs({ pg: { url: pgUrl, ssh: viaSshd() } }), dir);
    const before = forwardsTo(sshd, pgUrl.port);
    const result = await runner.run('postgres', { operation: 'query', sql: "SELECT 41 + 1 AS answer, 'through' AS way" });
    expect(result.output).toContain('│ 42     │ through │');
    const exported = await runner.run('postgres', {
      operation: 'export_query',
      sql: 'SELECT i, i * 2 AS twice FROM generate_series(1, 3) AS i',
      output_path: 'pg.csv',
    });
    expect(exported.ok).toBe(true);
    expect(readFileSync(join(dir, 'pg.csv'), 'utf8')).toBe('i,twice\r\n1,2\r\n2,4\r\n3,6\r\n');
    expect(forwardsTo(sshd, pgUrl.port)).toBeGreaterThan(before);
    await closeAllDatabaseConnections();
  });

  test('MariaDB query through the tunnel; one SSH connection serves both databases', async () => {
    const logins = acceptedLogins(sshd);
    const runner = makeRunner(configs({ pg: { url: pgUrl, ssh: viaSshd() }, maria: { url: mysqlUrl, ssh: viaSshd() } }), dir);
    const maria = await runner.run('mysql', { operation: 'query', sql: 'SELECT 6 * 7 AS answer' });
    expect(maria.output).toContain('│ 42     │');
    const pg = await runner.run('postgres', { operation: 'query', sql: 'SELECT 1 AS one' });
    expect(pg.ok).toBe(true);
    expect(forwardsTo(sshd, mysqlUrl.port)).toBeGreaterThan(0);
    expect(acceptedLogins(sshd)).toBe(logins + 1);
    await closeAllDatabaseConnections();
  });

  test.skipIf(!process.env.QUARRY_TEST_CLICKHOUSE_URL)('ClickHouse over HTTP through the tunnel', async () => {
    const chUrl = new URL(process.env.QUARRY_TEST_CLICKHOUSE_URL!);
    const runner = makeRunner(configs({ ch: { url: chUrl, ssh: viaSshd() } }), dir);
    const result = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT 6 * 7 AS answer' });
    expect(result.output).toContain('│ 42     │');
    expect(forwardsTo(sshd, chUrl.port)).toBeGreaterThan(0);
    await closeAllDatabaseConnections();
  });

  test('a jump host: both servers log their hop', async () => {
    const ssh = viaSshd({ jump: [{ host: '127.0.0.1', port: jump.port, user: jump.user, identity_file: clientKey.privatePath }] });
    const runner = makeRunner(configs({ pgjump: { url: pgUrl, ssh } }), dir);
    const result = await runner.run('postgres', { operation: 'query', sql: 'SELECT 7 AS seven' });
    expect(result.output).toContain('│ 7     │');
    expect(forwardsTo(jump, sshd.port)).toBeGreaterThan(0);
    expect(forwardsTo(sshd, pgUrl.port)).toBeGreaterThan(0);
    await closeAllDatabaseConnections();
  });

  test('an unknown host key is refused, naming its fingerprint, before logging in', async () => {
    const empty = join(dir, 'empty_known_hosts');
    writeFileSync(empty, '# nothing known\n');
    const logins = acceptedLogins(sshd);
    const runner = makeRunner(configs({ unknown: { url: pgUrl, ssh: viaSshd({ known_hosts: empty }) } }), dir);
    const result = await runner.run('postgres', { operation: 'query', sql: 'SELECT 1' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain(`SSH host key of 127.0.0.1:${sshd.port} is unknown (ssh-ed25519 ${fingerprint(sshd.hostPublicKey)}`);
    expect(result.output).toContain(`accept it with: ssh-keyscan -t ssh-ed25519 -p ${sshd.port} 127.0.0.1 >> ${empty}`);
    expect(result.output.split('\n')).toHaveLength(1);
    expect(acceptedLogins(sshd)).toBe(logins);
    await closeAllDatabaseConnections();
  });

  test('a changed host key is refused with how to replace it', async () => {
    const other = generateKey(dir, 'other_host_key');
    const changed = join(dir, 'changed_known_hosts');
    writeFileSync(changed, `[127.0.0.1]:${sshd.port} ${other.publicKey}\n`);
    const runner = makeRunner(configs({ changed: { url: pgUrl, ssh: viaSshd({ known_hosts: changed }) } }), dir);
    const result = await runner.run('postgres', { operation: 'query', sql: 'SELECT 1' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain(`SSH host key of 127.0.0.1:${sshd.port} has CHANGED: it now shows ssh-ed25519 ${fingerprint(sshd.hostPublicKey)}`);
    expect(result.output).toContain(`ssh-keygen -R '[127.0.0.1]:${sshd.port}' -f ${changed}`);
    await closeAllDatabaseConnections();
  });

  test('a refused login is one line naming user@host:port', async () => {
    const runner = makeRunner(configs({ wrong: { url: pgUrl, ssh: viaSshd({ identity_file: wrongKey.privatePath }) } }), dir);
    const result = await runner.run('postgres', { operation: 'query', sql: 'SELECT 1' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain(`SSH login refused for ${sshd.user}@127.0.0.1:${sshd.port} (key ${wrongKey.privatePath})`);
    expect(result.output.split('\n')).toHaveLength(1);
    await closeAllDatabaseConnections();
  });

  test('sshd killed mid-query fails that call in one line; after a restart the next call reconnects', async () => {
    const runner = makeRunner(configs({ pgdrop: { url: pgUrl, ssh: viaSshd() } }), dir);
    expect((await runner.run('postgres', { operation: 'query', sql: 'SELECT 1 AS warm' })).ok).toBe(true);
    const running = runner.run('postgres', { operation: 'query', sql: 'SELECT pg_sleep(20) AS slept' });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const started = Date.now();
    await sshd.kill();
    const failed = await running;
    expect(failed.ok).toBe(false);
    expect(failed.output).toMatch(
      new RegExp(`^SSH tunnel ssh ${sshd.user}@127\\.0\\.0\\.1:${sshd.port} dropped during the call \\(.*\\); the next call reconnects$`),
    );
    expect(Date.now() - started).toBeLessThan(5000);
    await sshd.restart();
    const again = await runner.run('postgres', { operation: 'query', sql: 'SELECT 2 AS again' });
    expect(again.output).toContain('│ 2     │');
    await closeAllDatabaseConnections();
  });

  test('quarry db check reports tunnel and database apart; quarry tool exits and leaves no SSH session behind', async () => {
    const file = join(dir, 'cli.yaml');
    writeFileSync(file, yamlFor({ pg: { url: pgUrl, ssh: viaSshd() }, bad: { url: pgUrl, ssh: viaSshd({ identity_file: wrongKey.privatePath }) } }));
    const check = await runQuarry(['db', 'check', '--databases', file], { env: { HOME: dir } });
    expect(check.stdout).toContain(`ok  pg: tunnel ssh ${sshd.user}@127.0.0.1:${sshd.port} (`);
    expect(check.stdout).toMatch(/ok {2}pg: PostgreSQL \d+/);
    expect(check.stderr).toContain(`err bad: tunnel: SSH login refused for ${sshd.user}@127.0.0.1:${sshd.port}`);
    expect(check.stderr).toContain('err bad: database not checked (its SSH tunnel failed)');
    expect(check.code).toBe(1);
    const tool = await runQuarry(
      ['tool', 'postgres', '--databases', file, '--args', JSON.stringify({ database: 'pg', operation: 'query', sql: 'SELECT 5 AS five' })],
      {
        env: { HOME: dir },
      },
    );
    expect(tool.stdout).toContain('│ 5    │');
    expect(tool.code).toBe(0);
    // The client closed its SSH connection at exit: sshd's session process for it ends.
    const deadline = Date.now() + 5000;
    while (sshd.pids().length > 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sshd.pids()).toHaveLength(1);
  });
});
