import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../../support/agent-cli.js';
import { CLI_PATH, REPO_ROOT, runQuarry } from '../../support/cli.js';
import { makeTempDir } from '../../support/context.js';

/**
 * Verified queries against the real PostgreSQL and MariaDB servers: `quarry knowledge add`
 * records them, `check` passes, then rows are deleted and a column renamed, and `check` flags
 * exactly the affected queries with the engine's error; and `quarry mcp` serves the knowledge tool.
 */

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the database servers did not start`);
  return value;
}

interface Engine {
  name: 'postgres' | 'mysql';
  url: () => string;
  exec: (sql: string) => Promise<void>;
  missingColumn: RegExp;
}

let pgAdmin: pg.Client;
let my: mysql.Connection;
let home: string;

const SETUP = [
  'DROP TABLE IF EXISTS kn_orders',
  'DROP TABLE IF EXISTS kn_customers',
  'CREATE TABLE kn_customers (id int PRIMARY KEY, name varchar(40), country varchar(40))',
  'CREATE TABLE kn_orders (id int PRIMARY KEY, customer_id int, status varchar(20), amount numeric(10,2))',
  "INSERT INTO kn_customers VALUES (1, 'Ana', 'Spain'), (2, 'Ben', 'France'), (3, 'Chloe', 'France'), (4, 'Dan', 'Spain'), (5, 'Eve', 'Italy')",
  "INSERT INTO kn_orders VALUES (1, 1, 'delivered', 10.50), (2, 1, 'pending', 7.25), (3, 2, 'delivered', 99.99), (4, 3, 'refunded', 12.00), " +
    "(5, 4, 'pending', 3.10), (6, 5, 'delivered', 45.00), (7, 5, 'shipped', 8.80)",
];

/** Verified queries an analyst would keep for these tables, by id. */
const QUERIES: Record<string, [string, string]> = {
  orders_by_status: ['How many orders are in each status?', 'SELECT status, COUNT(*) AS orders FROM kn_orders GROUP BY status'],
  customers_by_country: ['How many customers per country?', 'SELECT country, COUNT(*) AS customers FROM kn_customers GROUP BY country'],
  delivered_revenue: [
    'What is revenue from delivered and shipped orders?',
    "SELECT SUM(amount) AS revenue FROM kn_orders WHERE status IN ('delivered', 'shipped')",
  ],
  customer_count: ['How many customers are there?', 'SELECT COUNT(*) AS customers FROM kn_customers'],
  top_customer: [
    'Who spent the most on delivered orders?',
    "SELECT c.name, SUM(o.amount) AS spent FROM kn_orders o JOIN kn_customers c ON c.id = o.customer_id WHERE o.status = 'delivered' GROUP BY c.name ORDER BY spent DESC LIMIT 1",
  ],
};

const engines: Engine[] = [
  {
    name: 'postgres',
    url: () => requireEnv('QUARRY_TEST_PG_URL'),
    exec: async (sql) => {
      await pgAdmin.query(sql);
      if (/^CREATE TABLE (\w+)/.test(sql)) await pgAdmin.query(`ALTER TABLE ${/^CREATE TABLE (\w+)/.exec(sql)![1]} OWNER TO quarry_test`);
    },
    missingColumn: /postgres error \(db\): column "country" does not exist/,
  },
  {
    name: 'mysql',
    url: () => requireEnv('QUARRY_TEST_MYSQL_URL'),
    exec: async (sql) => {
      await my.query(sql);
    },
    missingColumn: /mysql error \(db\): Unknown column 'country'/,
  },
];

beforeAll(async () => {
  home = makeTempDir('quarry-home-');
  pgAdmin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
  await pgAdmin.connect();
  my = await mysql.createConnection(requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'));
});

afterAll(async () => {
  for (const engine of engines) await engine.exec('DROP TABLE IF EXISTS kn_orders').catch(() => undefined);
  for (const engine of engines) await engine.exec('DROP TABLE IF EXISTS kn_customers').catch(() => undefined);
  await pgAdmin?.end();
  await my?.end();
});

for (const engine of engines) {
  describe(`verified queries on ${engine.name}`, () => {
    it('records them with add, passes check, and flags exactly the queries that deleted rows and a renamed column affect', async () => {
      for (const sql of SETUP) await engine.exec(sql);
      const folder = join(makeTempDir(), 'knowledge');
      mkdirSync(folder);
      writeFileSync(
        join(folder, 'metrics.yaml'),
        'delivered_revenue:\n  description: Revenue of delivered orders\n  table: kn_orders\n  sql: SUM(amount)\n  filters: ["status = \'delivered\'"]\n',
      );
      const db = `db=${engine.url()}`;
      for (const [id, [question, sql]] of Object.entries(QUERIES)) {
        const added = await runQuarry(['knowledge', 'add', '--knowledge', folder, '--db', db, '--id', id, '--question', question, '--sql', sql], {
          env: cliEnv(home),
        });
        expect(added.stderr).toBe('');
        expect(added.code).toBe(0);
      }
      expect(readdirSync(join(folder, 'queries')).sort()).toEqual(
        Object.keys(QUERIES)
          .map((id) => `${id}.yaml`)
          .sort(),
      );
      expect((parse(readFileSync(join(folder, 'queries', 'orders_by_status.yaml'), 'utf8')) as { expect: { rows: number } }).expect.rows).toBe(4);
      const clean = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', db], { env: cliEnv(home) });
      expect(clean.stdout).toMatch(/6 checked: 6 ok, 0 changed, 0 failed/);
      expect(clean.code).toBe(0);

      // Drift: the pending orders are deleted and kn_customers.country is renamed.
      await engine.exec("DELETE FROM kn_orders WHERE status = 'pending'");
      await engine.exec('ALTER TABLE kn_customers RENAME COLUMN country TO nation');
      const drifted = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', db, '--format', 'json'], { env: cliEnv(home) });
      expect(drifted.code).toBe(1);
      const results = (
        JSON.parse(drifted.stdout) as { results: Array<{ kind: string; id: string; status: string; error?: string; actual?: { rows: number } }> }
      ).results;
      const byId = Object.fromEntries(results.map((result) => [`${result.kind} ${result.id}`, result]));
      expect(results.filter((result) => result.status !== 'ok').map((result) => `${result.kind} ${result.id}`)).toEqual([
        'query customers_by_country',
        'query orders_by_status',
      ]);
      expect(byId['query orders_by_status']).toMatchObject({ status: 'changed', expected: { rows: 4 }, actual: { rows: 3 } });
      expect(byId['query customers_by_country']!.error).toMatch(engine.missingColumn);
      expect(byId['metric delivered_revenue']!.status).toBe('ok');
    });
  });
}

describe('quarry mcp with a knowledge folder', () => {
  it('serves the knowledge tool, read-only, and answers it', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI_PATH, 'mcp', '--knowledge', join(REPO_ROOT, 'fixtures', 'knowledge')],
      cwd: makeTempDir(),
      env: cliEnv(home) as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'quarry-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      const tool = tools.find((candidate) => candidate.name === 'knowledge');
      expect(tool?.annotations).toMatchObject({ readOnlyHint: true });
      const result = await client.callTool({ name: 'knowledge', arguments: { query: 'typical basket size', kind: 'metric', limit: 1 } });
      const text = (result.content as Array<{ text: string }>).map((part) => part.text).join('');
      expect(text).toMatch(/^metric average_order_value: /);
      expect(text).toContain('SELECT ROUND(AVG(total), 2) AS average_order_value\nFROM order_totals');
    } finally {
      await client.close();
    }
  });
});
