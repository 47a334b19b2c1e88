import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { bindParameters, ClickhouseDriver } from '../../../src/tools/database/drivers/clickhouse.js';
import { clickhouseAdmin } from '../../support/clickhouse.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, makeRunner } from './helpers.js';

/**
 * ClickHouse (docs/guide/databases.md "ClickHouse") against the suite's real clickhouse-server (Debian 12: 18.16),
 * started by test/support/database-servers.global.ts where the binary is installed.
 */

const url = process.env.QUARRY_TEST_CLICKHOUSE_URL;
let dir: string;
let runner: ReturnType<typeof makeRunner>;

/** A statement as the admin (default user, not read-only), answered as text. */
const adminQuery = (sql: string) => clickhouseAdmin(sql);

/** What read-only mode must never change: every table and its row count. */
async function state(): Promise<string> {
  return adminQuery("SELECT database, name, engine FROM system.tables WHERE database NOT IN ('system') ORDER BY database, name FORMAT TSV").then(
    async (tables) => `${tables}#${await adminQuery('SELECT count() FROM quarry.sales')}#${await adminQuery('SELECT count() FROM quarry.big')}`,
  );
}

async function runningQueries(marker: string): Promise<number> {
  return Number(await adminQuery(`SELECT count() FROM system.processes WHERE query LIKE '%${marker}%' AND query NOT LIKE '%system.processes%'`));
}

describe.skipIf(!url)(`clickhouse${url ? '' : ' (skipped: clickhouse-server is not installed; apt-get install clickhouse-server)'}`, () => {
  beforeAll(async () => {
    await adminQuery('DROP DATABASE IF EXISTS quarry');
    await adminQuery('CREATE DATABASE quarry');
    await adminQuery(
      'CREATE TABLE quarry.sales (id UInt64, region String, amount Decimal(18, 4), big Int64, note Nullable(String), day Date) ENGINE = MergeTree ORDER BY id',
    );
    await adminQuery(
      "INSERT INTO quarry.sales VALUES (1, 'north', 12345678901234.5678, 9223372036854775807, NULL, '2024-01-02'), " +
        "(2, 'so\"uth, east', 0.1, -1, 'line\\ntwo', '2024-02-03'), (3, 'west\\\\x', -5, 0, '', '2024-03-04')",
    );
    await adminQuery('CREATE TABLE quarry.big (n UInt64, label String) ENGINE = MergeTree ORDER BY n');
    await adminQuery("INSERT INTO quarry.big SELECT number, concat('row ', toString(number)) FROM system.numbers LIMIT 200000");
    dir = makeTempDir();
    runner = makeRunner(configsFor([`ch=${url!.replace(/\/default$/, '/quarry')}`], dir), dir);
  });

  test('query: values exact as text, NULL shown, limit pushed down to the server', async () => {
    const result = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT id, amount, big, note, day FROM sales ORDER BY id' });
    expect(result.output).toContain('│ 1  │ 12345678901234.5678 │ 9223372036854775807 │ NULL      │ 2024-01-02 │');
    expect(result.output).toContain('│ 2  │ 0.1000              │ -1                  │ line\\ntwo │ 2024-02-03 │');
    // system.numbers never ends: only a limit the server applies lets this return.
    const endless = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT number FROM system.numbers', row_limit: 5 });
    expect(endless.metadata).toMatchObject({ rows: 5, more: true });
    expect(endless.output).toContain('more rows exist');
  });

  test('read-only: the statement check refuses writes and server actions; nothing changes', async () => {
    const before = await state();
    const corpus = [
      'INSERT INTO sales VALUES (9, 9)',
      "INSERT INTO FUNCTION file('x.csv', 'CSV', 'a String') VALUES ('a')",
      'ALTER TABLE sales DELETE WHERE id = 1',
      'ALTER TABLE sales UPDATE region = 1 WHERE 1',
      'DROP TABLE sales',
      'TRUNCATE TABLE sales',
      'CREATE TABLE t (a Int8) ENGINE = Memory',
      'RENAME TABLE sales TO s2',
      'OPTIMIZE TABLE sales FINAL',
      'SYSTEM DROP MARK CACHE',
      'KILL QUERY WHERE 1',
      'SET readonly = 0',
      "SELECT * FROM sales INTO OUTFILE '/tmp/x.csv'",
      "SELECT * FROM file('/etc/passwd', 'CSV', 'a String')",
      "SELECT * FROM url('http://127.0.0.1:1/', 'CSV', 'a String')",
      "SELECT * FROM remote('127.0.0.1', system.one)",
      "SELECT * FROM s3('http://x/y', 'CSV', 'a String')",
      'SELECT 1; DROP TABLE sales',
      'SELECT * FROM sales SETTINGS readonly = 0',
      'SELECT * FROM sales FORMAT JSON',
      'WITH 1 AS x SELECT x FROM sales /* ; */ ; DROP TABLE big',
      'SELECT * FROM "sal\\"es"; DROP TABLE sales',
    ];
    for (const sql of corpus) {
      const result = await runner.run('clickhouse', { operation: 'query', sql });
      expect(result.ok, sql).toBe(false);
      expect(result.output, sql).toMatch(/^(refused|syntax error)/);
    }
    expect(await state()).toBe(before);
  });

  test('read-only: the server refuses writes too (readonly=1 on every request)', async () => {
    const [config] = configsFor([`ch=${url!.replace(/\/default$/, '/quarry')}`], dir);
    const driver = new ClickhouseDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await state();
    for (const sql of [
      'CREATE TABLE quarry.t (a Int8) ENGINE = Memory',
      'INSERT INTO quarry.sales (id) VALUES (9)',
      'DROP TABLE quarry.big',
      'TRUNCATE TABLE quarry.sales',
    ]) {
      await expect(driver.query(sql, 10, { readOnly: true, signal }), sql).rejects.toThrow(/readonly mode|Cannot execute query in readonly mode/);
    }
    expect(await state()).toBe(before);
    await driver.close();
  });

  test('export_query: byte-exact with ClickHouse CSVWithNames, records ended by CRLF, NULL empty', async () => {
    const sql = 'SELECT * FROM sales ORDER BY id';
    const result = await runner.run('clickhouse', { operation: 'export_query', sql, output_path: 'sales.csv' });
    expect(result.ok).toBe(true);
    const own = await adminQuery(`SELECT * FROM quarry.sales ORDER BY id FORMAT CSVWithNames`);
    // ClickHouse's lines, joined into records where a quoted field holds a newline, ended by CRLF; NULL (\N) empty.
    const records: string[] = [];
    for (const line of own.slice(0, -1).split('\n')) {
      const last = records.length - 1;
      if (last >= 0 && (records[last]!.match(/"/g)?.length ?? 0) % 2 === 1) records[last] += `\n${line}`;
      else records.push(line);
    }
    const expected =
      records
        .map((record) =>
          record
            .split(',')
            .map((field) => (field === '\\N' ? '' : field))
            .join(','),
        )
        .join('\r\n') + '\r\n';
    expect(readFileSync(join(dir, 'sales.csv'), 'utf8')).toBe(expected);
    expect(expected).toContain('1,"north",12345678901234.5678,9223372036854775807,,"2024-01-02"\r\n');
    const big = await runner.run('clickhouse', { operation: 'export_query', sql: 'SELECT * FROM big ORDER BY n', output_path: 'big.csv' });
    expect(big.metadata).toMatchObject({ rows: 200000 });
    const text = readFileSync(join(dir, 'big.csv'), 'utf8');
    expect(text.startsWith('"n","label"\r\n0,"row 0"\r\n')).toBe(true);
    expect(text.endsWith('199999,"row 199999"\r\n')).toBe(true);
  });

  test('catalogue: list_tables with row counts, describe, search, sample, profile; explain where the server has it', async () => {
    const tables = await runner.run('clickhouse', { operation: 'list_tables' });
    // Other test files' databases may be listed too (the suite's files run at once): the widths vary.
    expect(tables.output).toMatch(/│ quarry +│ big +│ table │ ~200,000/);
    expect(tables.output).toMatch(/│ quarry +│ sales +│ table │ ~3 /);
    const described = await runner.run('clickhouse', { operation: 'describe', table_name: 'sales' });
    expect(described.output).toContain('primary key: id');
    expect(described.output).toMatch(/│ note +│ Nullable\(String\) +│ yes/);
    const search = await runner.run('clickhouse', { operation: 'search', pattern: 'regio' });
    expect(search.output).toContain('│ column │ quarry │ sales │ region │ String │');
    const sample = await runner.run('clickhouse', { operation: 'sample', table_name: 'big', row_limit: 5 });
    expect(sample.ok).toBe(true);
    expect(sample.output).toMatch(/row \d+/);
    const profile = await runner.run('clickhouse', { operation: 'profile', table_name: 'sales' });
    expect(profile.output).toMatch(/│ amount +│ Decimal\(18, 4\) +│ 0% +│ 3 +│ -5\.0000 +│ 12345678901234\.5678/);
    const version = await adminQuery('SELECT version()');
    const explain = await runner.run('clickhouse', { operation: 'explain', sql: 'SELECT count() FROM big' });
    if (Number(version.split('.')[0]) < 20)
      expect(explain.output).toBe('explain: this ClickHouse server has no EXPLAIN (it needs 20.6 or newer); count or sample rows instead');
    else expect(explain.ok).toBe(true);
  });

  test('catalogue values: query parameters where the server has them, escaped literals where not; either way they come back unchanged', async () => {
    const awkward = "O'Brien \\ \\' \0 '); DROP TABLE sales; --\n東京";
    expect(bindParameters('SELECT ? WHERE x = ? AND n = ?', [awkward, 12, 1.5], true)).toEqual({
      statement: 'SELECT {p0:String} WHERE x = {p1:Int64} AND n = {p2:Float64}',
      values: { p0: awkward, p1: 12, p2: 1.5 },
    });
    expect(bindParameters('SELECT ?', ["a'b\\c\0"], false)).toEqual({ statement: "SELECT 'a\\'b\\\\c\\0'" });
    const [config] = configsFor([`ch=${url!.replace(/\/default$/, '/quarry')}`], dir);
    const driver = new ClickhouseDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const rows = await driver.catalog('SELECT ?, length(?), count() FROM sales WHERE region = ?', [awkward, awkward, 'north'], { readOnly: true, signal });
    expect(rows).toEqual([[awkward, String(Buffer.byteLength(awkward)), '1']]);
    await driver.close();
  });

  test('validate resolves names without running; misspelt tables and columns get a suggestion', async () => {
    const before = await state();
    const valid = await runner.run('clickhouse', { operation: 'validate', sql: 'SELECT region, count() AS n FROM sales GROUP BY region' });
    expect(valid.output).toMatch(/^valid; nothing was run\n/);
    expect(valid.output).toContain('- engine: ClickHouse parsed the statement and resolved every name');
    const column = await runner.run('clickhouse', { operation: 'validate', sql: 'SELECT regoin FROM sales' });
    expect(column.ok).toBe(false);
    expect(column.output).toMatch(/^not valid: .*Unknown identifier: regoin.*; did you mean sales\.region\?/);
    const table = await runner.run('clickhouse', { operation: 'validate', sql: 'SELECT * FROM sals' });
    expect(table.output).toMatch(/^not valid: .*; did you mean sales\?/);
    // Another database on the same server with a column of the same name: the statement's own table wins.
    await adminQuery('CREATE DATABASE IF NOT EXISTS quarry_elsewhere');
    await adminQuery('CREATE TABLE IF NOT EXISTS quarry_elsewhere.ledger (amount Int64, amout_note String) ENGINE = Memory');
    try {
      const queried = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT amout FROM sales' });
      expect(queried.output).toMatch(/did you mean sales\.amount\?$/);
      // A column elsewhere that is closer than the statement's own: named too (after them), with its database.
      const elsewhere = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT amout_not FROM sales' });
      expect(elsewhere.output).toMatch(/did you mean sales\.amount or quarry_elsewhere\.ledger\.amout_note\?$/);
    } finally {
      await adminQuery('DROP DATABASE IF EXISTS quarry_elsewhere');
    }
    const described = await runner.run('clickhouse', { operation: 'describe', table_name: 'sale' });
    expect(described.output).toBe('clickhouse: no table "sale" in database quarry; use list_tables or search; did you mean sales?');
    const write = await runner.run('clickhouse', { operation: 'validate', sql: 'ALTER TABLE sales DELETE WHERE 1' });
    expect(write.output).toMatch(/^not valid: the read-only statement check refuses it\n/);
    expect(write.output).toContain('- engine: not asked');
    expect(await state()).toBe(before);
  });

  test("a syntax error is one line that points into the statement as written, not into quarry's LIMIT and FORMAT", async () => {
    const inside = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT id FROM sales WHERE id = = 2' });
    expect(inside.ok).toBe(false);
    expect(inside.output).toMatch(/Syntax error: failed at position 33: = 2\. Expected /);
    const atEnd = await runner.run('clickhouse', { operation: 'query', sql: 'SELECT 1 +' });
    expect(atEnd.output).toMatch(/Syntax error: failed at the end of the statement\. Expected /);
    const exported = await runner.run('clickhouse', { operation: 'export_query', sql: 'SELECT id FROM sales WHERE id = = 2', output_path: 'bad.csv' });
    expect(exported.output).toMatch(/Syntax error: failed at position 33: = 2\. Expected /);
    expect(existsSync(join(dir, 'bad.csv'))).toBe(false);
    for (const result of [inside, atEnd, exported]) {
      expect(result.output.split('\n')).toHaveLength(1);
      expect(result.output).not.toMatch(/LIMIT|FORMAT|line \d+, col/);
    }
  });

  test('the most frequent values come first: profile top values and the values find_values shows', async () => {
    // 60 kinds, kind k on k rows: ClickHouse before 22.x reads ORDER BY 2 as ordering by the constant 2.
    await adminQuery('DROP TABLE IF EXISTS quarry.skewed');
    await adminQuery('CREATE TABLE quarry.skewed (id UInt64, kind String) ENGINE = MergeTree ORDER BY id');
    await adminQuery(
      "INSERT INTO quarry.skewed SELECT number, concat('kind', toString(k)) FROM (SELECT arrayJoin(arrayMap(x -> x + 1, range(60))) AS k) ARRAY JOIN range(k) AS number",
    );
    const profile = await runner.run('clickhouse', { operation: 'profile', table_name: 'skewed' });
    expect(profile.output).toMatch(/kind60 \(60\), kind59 \(59\), kind58 \(58\)/);
    const found = await runner.run('clickhouse', { operation: 'find_values', value: 'kind', match: 'prefix', table_pattern: 'skewed' });
    expect(found.output).toMatch(/"kind60" \(60\), "kind59" \(59\), "kind58" \(58\), "kind57" \(57\), "kind56" \(56\)/);
    // Fuzzy reads its candidates (at most 20,000 a column) in the same order.
    const fuzzy = await runner.run('clickhouse', { operation: 'find_values', value: 'kinq60', match: 'fuzzy', table_pattern: 'skewed' });
    expect(fuzzy.output).toMatch(/"kind60" \(60\)/);
    await adminQuery('DROP TABLE quarry.skewed');
  });

  test('cancel stops the query on the server; a timeout too', async () => {
    const controller = new AbortController();
    const running = runner.run('clickhouse', { operation: 'query', sql: 'SELECT sum(number) AS quarry_cancel_me FROM system.numbers' }, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await runningQueries('quarry_cancel_me')).toBe(1);
    controller.abort();
    const cancelled = await running;
    expect(cancelled.ok).toBe(false);
    const deadline = Date.now() + 5000;
    while ((await runningQueries('quarry_cancel_me')) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await runningQueries('quarry_cancel_me')).toBe(0);

    const quick = makeRunner(configsFor([`ch=${url!.replace(/\/default$/, '/quarry')}?statement_timeout=1`], dir), dir);
    const started = Date.now();
    const timedOut = await quick.run('clickhouse', { operation: 'query', sql: 'SELECT sum(number) AS quarry_time_me_out FROM system.numbers' });
    expect(timedOut.ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(5000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await runningQueries('quarry_time_me_out')).toBe(0);
  });
});
