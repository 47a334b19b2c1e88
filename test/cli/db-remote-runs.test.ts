import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cliEnv } from '../support/agent-cli.js';
import { runQuarry } from '../support/cli.js';
import { clickhouseAdmin } from '../support/clickhouse.js';
import { makeTempDir } from '../support/context.js';
import { clickhouseClient, crlfRecords, mariadbCsv, mariadbRows, psqlCsv, psqlRows, tableCells } from '../support/engine-truth.js';
import { processesMatching } from '../support/processes.js';
import { TEST_DB_PASSWORD, TEST_DB_USER } from '../support/servers.js';
import { forwardedTo, generateKey, startSshd, type RunningSshd, type SshKeyPair } from '../support/sshd.js';

/**
 * Agent runs of the built CLI (scripted model, several tool calls per message) against databases
 * that are not on this machine's doorstep: PostgreSQL and MariaDB reached only through an SSH
 * tunnel (README "SSH tunnels"; sshd's DEBUG1 log names every forwarding), and ClickHouse (README
 * "ClickHouse"). The answers the model received and the exported files are compared with what
 * the engines' own clients (psql, mariadb, clickhouse-client) print.
 */

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the database servers did not start`);
  return value;
}

interface TraceMessage {
  type: string;
  message?: { role: string; name?: string; content?: string; toolCallId?: string };
}

/** The tool results of a run's session, in order, as the model received them. */
function toolResults(home: string, sessionId: string): string[] {
  return readFileSync(join(home, 'sessions', sessionId, 'trace.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TraceMessage)
    .filter((event) => event.type === 'message' && event.message?.role === 'tool')
    .map((event) => event.message!.content ?? '');
}

interface RunSummary {
  status: string;
  text: string;
  session_id: string;
  tool_calls: number;
}

async function scriptedRun(
  home: string,
  work: string,
  calls: unknown[],
  answer: string,
): Promise<{ code: number | null; summary: RunSummary; stderr: string }> {
  const script = join(home, `script-${Date.now()}.json`);
  writeFileSync(script, JSON.stringify({ turns: [{ text: 'Looking.', tool_calls: calls }, { text: answer }] }));
  const result = await runQuarry(['--model', `script:${script}`, '--yes', '--format', 'json', '-w', work, 'What do the orders say?'], {
    env: cliEnv(home),
    cwd: work,
    timeoutMs: 90_000,
  });
  expect(result.stderr).not.toMatch(/\n\s+at /);
  // The run's process exited on its own (runQuarry kills it after the timeout: the code would be null).
  expect(result.code, result.stderr).not.toBeNull();
  // And nothing it started is left: the script's path is on the command line of quarry and anything it spawned.
  expect(processesMatching(script)).toEqual([]);
  return { code: result.code, summary: JSON.parse(result.stdout) as RunSummary, stderr: result.stderr };
}

describe('an agent run through an SSH tunnel to PostgreSQL and MariaDB', () => {
  let dir: string;
  let sshd: RunningSshd;
  let clientKey: SshKeyPair;
  let pgUrl: string;
  let mysqlUrl: string;

  const forwardsTo = (port: string) => forwardedTo(sshd, port);

  beforeAll(async () => {
    dir = makeTempDir('quarry-tunnel-run-');
    clientKey = generateKey(dir, 'client_key');
    sshd = await startSshd(dir, [clientKey.publicKey], 'bastion');
    pgUrl = requireEnv('QUARRY_TEST_PG_URL');
    mysqlUrl = requireEnv('QUARRY_TEST_MYSQL_URL');
    const admin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
    await admin.connect();
    await admin.query(`DROP TABLE IF EXISTS tunnel_orders; CREATE TABLE tunnel_orders (id int PRIMARY KEY, customer text, amount numeric(12, 2), note text);
      INSERT INTO tunnel_orders VALUES (1, 'Ada, Ltd.', 1234.50, 'first "big" order'), (2, 'Zoë', 0.10, NULL), (3, 'Bob', -7.00, E'two\\nlines');
      ALTER TABLE tunnel_orders OWNER TO ${TEST_DB_USER};`);
    await admin.end();
    const my = await mysql.createConnection(requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'));
    await my.query('DROP TABLE IF EXISTS tunnel_orders');
    await my.query('CREATE TABLE tunnel_orders (id int PRIMARY KEY, customer varchar(40), amount decimal(12, 2), note varchar(40))');
    await my.query(`INSERT INTO tunnel_orders VALUES (1, 'Ada, Ltd.', 1234.50, 'first "big" order'), (2, 'Zoë', 0.10, NULL), (3, 'Bob', -7.00, 'two\\nlines')`);
    await my.end();
  });

  afterAll(async () => {
    await sshd?.stop();
    const admin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
    await admin.connect();
    await admin.query('DROP TABLE IF EXISTS tunnel_orders');
    await admin.end();
    const my = await mysql.createConnection(requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'));
    await my.query('DROP TABLE IF EXISTS tunnel_orders');
    await my.end();
  });

  test('queries and exports go through the tunnel, match psql and mariadb, and the run leaves no process', async () => {
    const home = join(dir, 'home');
    const work = makeTempDir('quarry-tunnel-work-');
    const ssh = JSON.stringify({
      host: '127.0.0.1',
      port: sshd.port,
      user: sshd.user,
      identity_file: clientKey.privatePath,
      known_hosts: join(dir, 'known_hosts'),
    });
    writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${sshd.port} ${sshd.hostPublicKey}\n`);
    mkdirSync(home, { recursive: true });
    writeFileSync(
      join(home, 'config.yaml'),
      ['databases:', `  orders_pg: {url: ${JSON.stringify(pgUrl)}, ssh: ${ssh}}`, `  orders_maria: {url: ${JSON.stringify(mysqlUrl)}, ssh: ${ssh}}`, ''].join(
        '\n',
      ),
    );
    const querySql = 'SELECT id, customer, amount FROM tunnel_orders ORDER BY id';
    const exportSql = 'SELECT * FROM tunnel_orders ORDER BY id';
    const [pgBefore, mariaBefore] = [forwardsTo(new URL(pgUrl).port), forwardsTo(new URL(mysqlUrl).port)];
    const loginsBefore = sshd.log().split('Accepted publickey').length;
    const { code, summary } = await scriptedRun(
      home,
      work,
      [
        { name: 'postgres', arguments: { operation: 'query', sql: querySql } },
        { name: 'postgres', arguments: { operation: 'export_query', sql: exportSql, output_path: 'orders-pg.csv' } },
        { name: 'mysql', arguments: { operation: 'query', sql: querySql } },
        { name: 'mysql', arguments: { operation: 'export_query', sql: exportSql, output_path: 'orders-maria.csv' } },
      ],
      'Ada, Ltd. ordered 1234.50.',
    );
    expect(code).toBe(0);
    expect(summary).toMatchObject({ status: 'completed', tool_calls: 4, text: 'Ada, Ltd. ordered 1234.50.' });
    const [pgQuery, pgExport, mariaQuery, mariaExport] = toolResults(home, summary.session_id);
    // What the model read is what the engines' own clients print.
    expect(tableCells(pgQuery!)).toEqual([['id', 'customer', 'amount'], ...psqlRows(pgUrl, querySql)]);
    expect(tableCells(mariaQuery!)).toEqual([['id', 'customer', 'amount'], ...mariadbRows(mysqlUrl, querySql)]);
    expect(psqlRows(pgUrl, querySql)[1]).toEqual(['2', 'Zoë', '0.10']);
    expect(pgExport).toMatch(/^Exported 3 rows .* to orders-pg\.csv/);
    expect(mariaExport).toMatch(/^Exported 3 rows .* to orders-maria\.csv/);
    // The files, byte for byte.
    expect(readFileSync(join(work, 'orders-pg.csv'), 'utf8')).toBe(psqlCsv(pgUrl, exportSql));
    expect(readFileSync(join(work, 'orders-maria.csv'), 'utf8')).toBe(mariadbCsv(mysqlUrl, exportSql));
    expect(psqlCsv(pgUrl, exportSql)).toContain('1,"Ada, Ltd.",1234.50,"first ""big"" order"\r\n2,Zoë,0.10,\r\n3,Bob,-7.00,"two\nlines"\r\n');
    expect(readdirSync(work).sort()).toEqual(['orders-maria.csv', 'orders-pg.csv']);
    // Through the tunnel: sshd forwarded to both servers, on one login for the whole run.
    expect(forwardsTo(new URL(pgUrl).port)).toBeGreaterThan(pgBefore);
    expect(forwardsTo(new URL(mysqlUrl).port)).toBeGreaterThan(mariaBefore);
    expect(sshd.log().split('Accepted publickey').length - loginsBefore).toBe(1);
    // quarry closed the tunnel at exit: sshd's session process for it is gone, only the listener is left.
    const until = Date.now() + 5000;
    while (sshd.pids().length > 1 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sshd.pids()).toHaveLength(1);
  });
});

const chUrl = process.env.QUARRY_TEST_CLICKHOUSE_URL;

describe.skipIf(!chUrl)(`an agent run against ClickHouse${chUrl ? '' : ' (skipped: clickhouse-server is not installed)'}`, () => {
  const target = () => ({
    tcpPort: Number(requireEnv('QUARRY_TEST_CLICKHOUSE_TCP_PORT')),
    user: TEST_DB_USER,
    password: TEST_DB_PASSWORD,
    database: 'runs_ch',
  });

  const admin = (sql: string) => clickhouseAdmin(sql);

  beforeAll(async () => {
    await admin('DROP DATABASE IF EXISTS runs_ch');
    await admin('CREATE DATABASE runs_ch');
    await admin('CREATE TABLE runs_ch.ch_orders (id UInt64, area String, total Decimal(18, 4), remark Nullable(String)) ENGINE = MergeTree ORDER BY id');
    await admin(
      "INSERT INTO runs_ch.ch_orders VALUES (1, 'north', 12345678901234.5678, NULL), (2, 'so\"uth, east', 0.1, 'line\\ntwo'), (3, 'west\\\\x', -5, '')",
    );
    await admin(
      "INSERT INTO runs_ch.ch_orders SELECT number + 4, concat('r', toString(number % 7)), toDecimal64(number / 8, 4), NULL FROM system.numbers LIMIT 5000",
    );
  });

  afterAll(async () => {
    await admin('DROP DATABASE IF EXISTS runs_ch');
  });

  test('query, list_tables, describe and export match clickhouse-client; a write is refused and changes nothing', async () => {
    const home = makeTempDir('quarry-ch-run-home-');
    const work = makeTempDir('quarry-ch-run-work-');
    writeFileSync(join(home, 'config.yaml'), `databases:\n  sales_ch: {url: ${JSON.stringify(chUrl!.replace(/\/default$/, '/runs_ch'))}}\n`);
    const querySql = 'SELECT id, area, total FROM ch_orders WHERE id <= 3 ORDER BY id';
    const exportSql = 'SELECT * FROM ch_orders ORDER BY id';
    const countBefore = await admin('SELECT count() FROM runs_ch.ch_orders');
    const { code, summary } = await scriptedRun(
      home,
      work,
      [
        { name: 'clickhouse', arguments: { operation: 'query', sql: querySql } },
        { name: 'clickhouse', arguments: { operation: 'list_tables' } },
        { name: 'clickhouse', arguments: { operation: 'describe', table_name: 'ch_orders' } },
        { name: 'clickhouse', arguments: { operation: 'export_query', sql: exportSql, output_path: 'sales.csv' } },
        { name: 'clickhouse', arguments: { operation: 'query', sql: "INSERT INTO ch_orders VALUES (99, 'evil', 1, NULL)" } },
        { name: 'clickhouse', arguments: { operation: 'query', sql: 'ALTER TABLE ch_orders DELETE WHERE id > 0' } },
        { name: 'clickhouse', arguments: { operation: 'find_values', value: 'SO"UTH, EAST', table_pattern: 'ch\\_orders' } },
      ],
      'North sold the most.',
    );
    expect(code).toBe(0);
    expect(summary).toMatchObject({ status: 'completed', tool_calls: 7 });
    const [query, tables, described, exported, insert, alter, found] = toolResults(home, summary.session_id);
    const tsv = clickhouseClient(target(), querySql, 'TSV')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t').map((field) => field.replace(/\\(.)/g, (_, ch: string) => (ch === '\\' ? '\\' : `\\${ch}`))));
    expect(tableCells(query!)).toEqual([['id', 'area', 'total'], ...tsv]);
    expect(tableCells(query!)[1]).toEqual(['1', 'north', '12345678901234.5678']);
    expect(tables).toMatch(/│ runs_ch +│ ch_orders +│ table +│ ~5,003/);
    expect(described).toContain('primary key: id');
    expect(described).toMatch(/│ total +│ Decimal\(18, 4\) +│ no/);
    expect(exported).toMatch(/^Exported 5,003 rows .* to sales\.csv/);
    const own = clickhouseClient(target(), exportSql, 'CSVWithNames');
    const file = readFileSync(join(work, 'sales.csv'), 'utf8');
    expect(file).toBe(crlfRecords(own, '\\N'));
    expect(file).toContain('1,"north",12345678901234.5678,\r\n2,"so""uth, east",0.1000,"line\ntwo"\r\n');
    expect(insert).toMatch(/^refused: /);
    expect(alter).toMatch(/^refused: /);
    expect(found).toMatch(/│ runs_ch\.ch_orders │ area +│ String │ case-insensitive │ 1 of 5,003 │/);
    expect(await admin('SELECT count() FROM runs_ch.ch_orders')).toBe(countBefore);
    expect(countBefore.trim()).toBe('5003');
    expect(readdirSync(work)).toEqual(['sales.csv']);
  });
  test('a ClickHouse query is counted in the report and re-run by quarry refresh, which sees the new row', async () => {
    const home = makeTempDir('quarry-ch-refresh-home-');
    const work = makeTempDir('quarry-ch-refresh-work-');
    writeFileSync(join(home, 'config.yaml'), `databases:\n  sales_ch: {url: ${JSON.stringify(chUrl!.replace(/\/default$/, '/runs_ch'))}}\n`);
    await admin('CREATE TABLE runs_ch.ch_refresh (area String, total Int64) ENGINE = MergeTree ORDER BY area');
    try {
      await admin("INSERT INTO runs_ch.ch_refresh VALUES ('north', 10), ('south', 5)");
      const sql = 'SELECT area, sum(total) AS total FROM ch_refresh GROUP BY area ORDER BY area';
      const { code, summary } = await scriptedRun(home, work, [{ name: 'clickhouse', arguments: { operation: 'query', sql } }], 'North leads with 10.');
      expect(code).toBe(0);
      const report = await runQuarry(['report', summary.session_id, '-o', join(work, 'report.html')], { env: cliEnv(home), cwd: work, timeoutMs: 60_000 });
      expect(report.code, report.stderr).toBe(0);
      const page = readFileSync(join(work, 'report.html'), 'utf8');
      expect(page).toMatch(/1 query\b/);
      expect(page).toContain('SELECT area, sum(total) AS total FROM ch_refresh');
      await admin("INSERT INTO runs_ch.ch_refresh VALUES ('west', 7)");
      const refreshed = await runQuarry(['refresh', summary.session_id, '--fail-on-change', '--format', 'json'], {
        env: cliEnv(home),
        cwd: work,
        timeoutMs: 60_000,
      });
      expect(refreshed.code, refreshed.stderr).toBe(3);
      const steps = (JSON.parse(refreshed.stdout) as { steps: { tool: string; operation: string; status: string; appeared: string[][] }[] }).steps;
      expect(steps.map((step) => `${step.tool} ${step.operation} ${step.status}`)).toEqual(['clickhouse query changed']);
      expect(steps[0]!.appeared).toEqual([['west', '7']]);
    } finally {
      await admin('DROP TABLE IF EXISTS runs_ch.ch_refresh');
    }
  });
});
