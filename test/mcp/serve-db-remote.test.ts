import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickhouseAdmin } from '../support/clickhouse.js';
import { makeTempDir } from '../support/context.js';
import { cancelStopsOnServer, type ServedQuarry, serveQuarryMcp, toolText } from '../support/mcp-served.js';
import { clickhouseClient, crlfRecords, psqlCsv } from '../support/engine-truth.js';
import { TEST_DB_PASSWORD, TEST_DB_USER } from '../support/servers.js';
import { forwardedTo, generateKey, startSshd, type RunningSshd } from '../support/sshd.js';

/**
 * `quarry mcp` (a real server process, driven by the MCP SDK's Client over stdio) serving the
 * database tool for a PostgreSQL reached only through an SSH tunnel (README "SSH tunnels") and for
 * ClickHouse (README "ClickHouse"): a query, an export, a refused write, and a client's
 * cancellation that stops the query on the server.
 */

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the database servers did not start`);
  return value;
}

const chUrl = process.env.QUARRY_TEST_CLICKHOUSE_URL;

let home: string;
let work: string;
let sshd: RunningSshd;
let pgUrl: string;
let pgAdmin: pg.Client;
const clients: Client[] = [];

const chAdminQuery = (sql: string) => clickhouseAdmin(sql);

async function serve(args: string[]): Promise<ServedQuarry> {
  const served = await serveQuarryMcp(home, work, args);
  clients.push(served.client);
  return served;
}

const text = toolText;

function forwardsTo(port: string): number {
  return forwardedTo(sshd, port);
}

beforeAll(async () => {
  home = makeTempDir('quarry-mcp-remote-home-');
  work = makeTempDir('quarry-mcp-remote-work-');
  const key = generateKey(home, 'client_key');
  sshd = await startSshd(home, [key.publicKey], 'bastion');
  writeFileSync(join(home, 'known_hosts'), `[127.0.0.1]:${sshd.port} ${sshd.hostPublicKey}\n`);
  pgUrl = requireEnv('QUARRY_TEST_PG_URL');
  pgAdmin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
  await pgAdmin.connect();
  await pgAdmin.query(`DROP TABLE IF EXISTS mcp_remote_items; CREATE TABLE mcp_remote_items (id int PRIMARY KEY, name text, price numeric(10, 2));
    INSERT INTO mcp_remote_items VALUES (1, 'a, b', 1.50), (2, 'c"d', NULL); ALTER TABLE mcp_remote_items OWNER TO ${TEST_DB_USER};`);
  const ssh = JSON.stringify({ host: '127.0.0.1', port: sshd.port, user: sshd.user, identity_file: key.privatePath, known_hosts: join(home, 'known_hosts') });
  const lines = ['databases:', `  remote_pg: {url: ${JSON.stringify(pgUrl)}, ssh: ${ssh}}`];
  if (chUrl) {
    await chAdminQuery('DROP DATABASE IF EXISTS mcp_ch');
    await chAdminQuery('CREATE DATABASE mcp_ch');
    await chAdminQuery('CREATE TABLE mcp_ch.events (id UInt64, kind String, note Nullable(String)) ENGINE = MergeTree ORDER BY id');
    await chAdminQuery(
      "INSERT INTO mcp_ch.events SELECT number, concat('k', toString(number % 3)), if(number % 5 = 0, NULL, 'x,y') FROM system.numbers LIMIT 1000",
    );
    lines.push(`  events_ch: {url: ${JSON.stringify(chUrl.replace(/\/default$/, '/mcp_ch'))}}`);
  }
  writeFileSync(join(home, 'config.yaml'), `${lines.join('\n')}\n`);
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await pgAdmin?.query('DROP TABLE IF EXISTS mcp_remote_items');
  await pgAdmin?.end();
  if (chUrl) await chAdminQuery('DROP DATABASE IF EXISTS mcp_ch');
  await sshd?.stop();
});

describe('quarry mcp with a tunnelled PostgreSQL', () => {
  it('queries and exports through the tunnel, refuses a write with no effect, and closes the tunnel when the client goes', async () => {
    const before = forwardsTo(new URL(pgUrl).port);
    const served = await serve(['--yes']);
    const names = (await served.client.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('postgres');
    const query = await served.client.callTool({
      name: 'postgres',
      arguments: { operation: 'query', sql: 'SELECT id, name, price FROM mcp_remote_items ORDER BY id' },
    });
    expect(query.isError, text(query)).toBeFalsy();
    expect(text(query)).toMatch(/│ 1 +│ a, b +│ 1\.50 +│\n│ 2 +│ c"d +│ NULL +│/);
    const exportSql = 'SELECT * FROM mcp_remote_items ORDER BY id';
    const exported = await served.client.callTool({ name: 'postgres', arguments: { operation: 'export_query', sql: exportSql, output_path: 'remote-pg.csv' } });
    expect(exported.isError, text(exported)).toBeFalsy();
    expect(readFileSync(join(work, 'remote-pg.csv'), 'utf8')).toBe(psqlCsv(pgUrl, exportSql));
    const refused = await served.client.callTool({ name: 'postgres', arguments: { operation: 'query', sql: 'DELETE FROM mcp_remote_items' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^refused: /);
    expect((await pgAdmin.query('SELECT count(*)::int AS n FROM mcp_remote_items')).rows[0].n).toBe(2);
    expect(forwardsTo(new URL(pgUrl).port)).toBeGreaterThan(before);
    // While served, sshd holds a session process for quarry's tunnel; once the client goes, quarry exits and closes it.
    expect(sshd.pids().length).toBeGreaterThan(1);
    await served.client.close();
    await served.exited;
    const until = Date.now() + 5000;
    while (sshd.pids().length > 1 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sshd.pids()).toHaveLength(1);
  });

  it("a client's cancellation stops the query on the server through the tunnel", async () => {
    const served = await serve([]);
    const sleeping = async () =>
      (
        await pgAdmin.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%tunnel_cancel_me%' AND state = 'active' AND pid <> pg_backend_pid()",
        )
      ).rows[0].n as number;
    await cancelStopsOnServer(
      served.client,
      { name: 'postgres', arguments: { operation: 'query', sql: 'SELECT pg_sleep(60), 1 AS tunnel_cancel_me' } },
      sleeping,
    );
    const after = await served.client.callTool({ name: 'postgres', arguments: { operation: 'query', sql: 'SELECT 7 AS seven' } });
    expect(text(after)).toMatch(/│ 7 +│/);
  }, 60_000);
});

describe.skipIf(!chUrl)(`quarry mcp with ClickHouse${chUrl ? '' : ' (skipped: clickhouse-server is not installed)'}`, () => {
  it('queries, exports byte-exact against clickhouse-client, and refuses a write with the row count unchanged', async () => {
    const served = await serve(['--yes']);
    const query = await served.client.callTool({
      name: 'clickhouse',
      arguments: { operation: 'query', sql: 'SELECT kind, count() AS n FROM events GROUP BY kind ORDER BY kind' },
    });
    expect(query.isError, text(query)).toBeFalsy();
    expect(text(query)).toMatch(/│ k0 +│ 334 +│\n│ k1 +│ 333 +│\n│ k2 +│ 333 +│/);
    const exportSql = 'SELECT * FROM events ORDER BY id';
    const exported = await served.client.callTool({ name: 'clickhouse', arguments: { operation: 'export_query', sql: exportSql, output_path: 'events.csv' } });
    expect(exported.isError, text(exported)).toBeFalsy();
    expect(text(exported)).toMatch(/^Exported 1,000 rows/);
    const own = clickhouseClient(
      { tcpPort: Number(requireEnv('QUARRY_TEST_CLICKHOUSE_TCP_PORT')), user: TEST_DB_USER, password: TEST_DB_PASSWORD, database: 'mcp_ch' },
      exportSql,
      'CSVWithNames',
    );
    expect(readFileSync(join(work, 'events.csv'), 'utf8')).toBe(crlfRecords(own, '\\N'));
    for (const sql of ["INSERT INTO events VALUES (5000, 'evil', NULL)", 'TRUNCATE TABLE events', 'KILL QUERY WHERE 1']) {
      const refused = await served.client.callTool({ name: 'clickhouse', arguments: { operation: 'query', sql } });
      expect(refused.isError, sql).toBe(true);
      expect(text(refused)).toMatch(/^refused: /);
    }
    expect((await chAdminQuery('SELECT count() FROM mcp_ch.events')).trim()).toBe('1000');
    expect(existsSync(join(work, 'events.csv'))).toBe(true);
    expect(readdirSync(work).filter((name) => name.includes('.quarry-'))).toEqual([]);
  });

  it("a client's cancellation kills a long ClickHouse query on the server", async () => {
    const served = await serve([]);
    const running = async () =>
      Number(await chAdminQuery("SELECT count() FROM system.processes WHERE query LIKE '%mcp_cancel_me%' AND query NOT LIKE '%system.processes%'"));
    await cancelStopsOnServer(
      served.client,
      { name: 'clickhouse', arguments: { operation: 'query', sql: 'SELECT sum(number) AS mcp_cancel_me FROM system.numbers' } },
      running,
    );
    expect(await running()).toBe(0);
    const after = await served.client.callTool({ name: 'clickhouse', arguments: { operation: 'query', sql: 'SELECT 6 * 7 AS answer' } });
    expect(text(after)).toMatch(/│ 42 +│/);
  }, 60_000);
});
