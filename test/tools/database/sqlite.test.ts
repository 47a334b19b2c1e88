import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { wrapStatement } from '../../../src/tools/database/drivers/sqlite-export-protocol.js';
import { SqliteProcessDriver } from '../../../src/tools/database/drivers/sqlite-process.js';
import { isReadOnlyCall } from '../../../src/tools/core/types.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, directoryFingerprint, makeRunner, tableCells } from './helpers.js';
import { createSqliteFixture } from './sqlite-fixture.js';

let dir: string;
let runner: ReturnType<typeof makeRunner>;

beforeAll(() => {
  dir = makeTempDir();
  createSqliteFixture(dir);
  runner = makeRunner(configsFor(['shop.db'], dir), dir);
});

describe('sqlite query', () => {
  test('shows rows as a table with NULL, escaped newlines and a row count', async () => {
    const result = await runner.run('sqlite', { operation: 'query', sql: 'SELECT id, name, note FROM customers ORDER BY id' });
    expect(result.ok).toBe(true);
    expect(result.output).toBe(
      [
        '┌────┬───────────────┬────────────────────┐',
        '│ id │ name          │ note               │',
        '├────┼───────────────┼────────────────────┤',
        '│ 1  │ Ada           │ NULL               │',
        '│ 2  │ Bob           │ line one\\nline two │',
        '│ 3  │ Cyd "the kid" │ a, b               │',
        '└────┴───────────────┴────────────────────┘',
        '(3 rows)',
      ].join('\n'),
    );
    expect(result.metadata).toMatchObject({ database: 'shop', engine: 'sqlite', rows: 3, more: false, columns: ['id', 'name', 'note'] });
  });

  test('big integers, reals and blobs are exact; a long value of a few rows is shown whole, of many rows cut with an ellipsis', async () => {
    const result = await runner.run('sqlite', {
      operation: 'query',
      sql: "SELECT 9007199254740993 AS big, 0.1 + 0.2 AS r, x'00ff' AS b, printf('%.300c', 'x') AS long",
    });
    expect(result.ok).toBe(true);
    expect(result.output).toContain(`big  | 9007199254740993\nr    | 0.30000000000000004\nb    | \\x00ff\nlong | ${'x'.repeat(300)}\n`);
    const many = await runner.run('sqlite', {
      operation: 'query',
      sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 11) SELECT 9007199254740993 AS big, printf('%.300c', 'x') AS long FROM n",
    });
    expect(many.output).toContain(`│ 9007199254740993 │ ${'x'.repeat(199)}… │`);
  });

  test('fetches limit+1 rows and says more rows exist', async () => {
    const sql = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 5000) SELECT i FROM n';
    const result = await runner.run('sqlite', { operation: 'query', sql });
    expect(result.output.split('\n').filter((line) => line.startsWith('│ ')).length).toBe(101);
    expect(result.output.endsWith('(showing the first 100 rows; limit 100) more rows exist; use COUNT(*) or export_query')).toBe(true);
    expect(result.metadata).toMatchObject({ rows: 100, more: true });
    const bigger = await runner.run('sqlite', { operation: 'query', sql, row_limit: 1000 });
    expect(bigger.metadata).toMatchObject({ rows: 1000, more: true });
    const tooBig = await runner.run('sqlite', { operation: 'query', sql, row_limit: 1001 });
    expect(tooBig).toMatchObject({ ok: false, metadata: { error: 'invalid_arguments' } });
    const exact = await runner.run('sqlite', { operation: 'query', sql: 'SELECT i FROM (SELECT 1 AS i UNION ALL SELECT 2)', row_limit: 2 });
    expect(exact.metadata).toMatchObject({ rows: 2, more: false });
  });

  test('the limit is applied inside SQLite (a top-N sort), with the order and the column names of the statement', async () => {
    const queryDir = makeTempDir();
    const path = join(queryDir, 'sorted.db');
    const db = new Database(path);
    db.exec(
      'CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER, label TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 3000) INSERT ' +
        "INTO t SELECT i, (i * 7919) % 1000, 'row ' || i FROM n",
    );
    const sql = 'SELECT a.id, b.id, a.k FROM t a JOIN t b ON b.id = a.id ORDER BY a.k DESC, a.id';
    const expected = db.prepare(sql).raw(true).all().slice(0, 5) as unknown[][];
    // What SQLite runs for the call: the statement wrapped with LIMIT; its ORDER BY survives the wrapping.
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${wrapStatement(sql, 3, () => 'SELECT * FROM quarry_statement LIMIT 6')}`).all() as { detail: string }[];
    db.close();
    expect(plan.map((row) => row.detail).join(' | ')).toContain('USE TEMP B-TREE FOR ORDER BY');
    const result = await makeRunner(configsFor([path], queryDir), queryDir).run('sqlite', { operation: 'query', sql, row_limit: 5 });
    expect(result.metadata).toMatchObject({ rows: 5, more: true, columns: ['id', 'id', 'k'] });
    const shown = tableCells(result.output).map((row) => row.map(Number));
    expect(shown).toEqual(expected);
  });

  test('statements that cannot be wrapped still run: PRAGMA, and WITH … INSERT … RETURNING in mutations mode', async () => {
    const pragma = await runner.run('sqlite', { operation: 'query', sql: 'PRAGMA table_info(customers)', row_limit: 2 });
    expect(pragma.metadata).toMatchObject({ rows: 2, more: true });
    const mutableDir = makeTempDir();
    const path = createSqliteFixture(mutableDir);
    const evalRunner = makeRunner(configsFor([`m=${path}`], mutableDir), mutableDir, 'eval');
    const result = await evalRunner.run('sqlite', {
      operation: 'query',
      sql: "WITH n(v) AS (SELECT 'Eve') INSERT INTO customers (name) SELECT v FROM n RETURNING name",
    });
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain('│ Eve  │');
  });

  test('a SQL error is reported without a stack trace', async () => {
    const result = await runner.run('sqlite', { operation: 'query', sql: 'SELECT * FROM nope' });
    expect(result).toMatchObject({ ok: false, output: 'sqlite error (shop): no such table: nope', metadata: { error: 'database_error' } });
  });
});

describe('sqlite list_tables and describe', () => {
  test('list_tables lists tables and views, filtered by a LIKE pattern', async () => {
    const all = await runner.run('sqlite', { operation: 'list_tables' });
    expect(all.output).toContain('│ main   │ big_spenders │ view  │');
    expect(all.metadata.tables).toBe(3);
    const filtered = await runner.run('sqlite', { operation: 'list_tables', table_pattern: 'cust%' });
    expect(filtered.metadata.tables).toBe(1);
    expect(filtered.output).toContain('customers');
  });

  test('describe shows columns, primary key, foreign keys and indexes', async () => {
    const result = await runner.run('sqlite', { operation: 'describe', table_name: 'audit_log' });
    expect(result.ok).toBe(true);
    expect(result.output).toContain('│ update_count │ INTEGER │ no       │ 0       │     │');
    expect(result.output).toContain('primary key: id');
    expect(result.output).toContain('foreign keys: \n  customer_id -> customers(id) ON DELETE CASCADE');
    expect(result.output).toContain('indexes: \n  audit_log_action (action, customer_id)');
    const missing = await runner.run('sqlite', { operation: 'describe', table_name: 'nope' });
    expect(missing.output).toBe('no such table or view: nope; use operation list_tables to see the tables');
  });
});

describe('sqlite read-only: the engine layer alone (statement check bypassed)', () => {
  const writes = [
    'DELETE FROM customers',
    "UPDATE customers SET name = 'x'",
    "INSERT INTO customers (name) VALUES ('x')",
    'DROP TABLE audit_log',
    'CREATE TABLE evil (id INTEGER)',
    'BEGIN IMMEDIATE',
    "ATTACH DATABASE 'evil.db' AS evil",
  ];
  const connectionChanges = ["VACUUM INTO 'copy.db'", 'PRAGMA query_only = 0', 'PRAGMA user_version = 7', 'DETACH DATABASE main'];
  const options = { readOnly: true, signal: new AbortController().signal };

  async function openDriver(): Promise<SqliteProcessDriver> {
    const [config] = configsFor(['shop.db'], dir);
    const driver = new SqliteProcessDriver(config!, true);
    await driver.connect();
    return driver;
  }

  test.each([...writes, ...connectionChanges])('SQLite itself classifies %j as not a read-only query', async (sql) => {
    const driver = await openDriver();
    const before = directoryFingerprint(dir);
    await expect(driver.query(sql, 10, options)).rejects.toThrow('refused by SQLite: this statement is not a read-only query');
    await driver.close();
    expect(directoryFingerprint(dir)).toBe(before);
  });

  test.each(writes)('even without that classification, the read-only connection refuses %j', async (sql) => {
    const driver = await openDriver();
    const before = directoryFingerprint(dir);
    await expect(driver.query(sql, 10, { ...options, readOnly: false })).rejects.toThrow(/readonly|read-only|query_only|unable to open/i);
    await driver.close();
    expect(directoryFingerprint(dir)).toBe(before);
    expect(readdirSync(dir).filter((name) => name.startsWith('evil') || name.startsWith('copy'))).toEqual([]);
  });
});

describe('sqlite export_query', () => {
  test('streams every row to an RFC 4180 CSV with a header and reports a preview', async () => {
    const exportDir = makeTempDir();
    const dbPath = join(exportDir, 'many.db');
    const db = new Database(dbPath);
    db.exec(
      "CREATE TABLE t (id INTEGER, label TEXT, amount REAL, big INTEGER, raw BLOB); INSERT INTO t VALUES (1, 'plain', 1.5, 9007199254740993, x'0a0b'), (2, " +
        "'comma, \"quote\"', NULL, -1, NULL), (3, 'two\r\nlines', 0.1, 0, NULL)",
    );
    db.exec("WITH RECURSIVE n(i) AS (SELECT 4 UNION ALL SELECT i + 1 FROM n LIMIT 12342) INSERT INTO t SELECT i, 'row ' || i, i / 4.0, i * 1000, NULL FROM n");
    db.close();
    const local = makeRunner(configsFor([`many=${dbPath}`], exportDir), exportDir);
    const result = await local.run('sqlite', { operation: 'export_query', sql: 'SELECT * FROM t ORDER BY id DESC', output_path: 'out/rows.csv' });
    expect(result.ok).toBe(true);
    const csv = readFileSync(join(exportDir, 'out/rows.csv'), 'utf8');
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe('id,label,amount,big,raw');
    expect(lines[1]).toBe('12345,row 12345,3086.25,12345000,');
    expect(csv.endsWith('3,"two\r\nlines",0.1,0,\r\n2,"comma, ""quote""",,-1,\r\n1,plain,1.5,9007199254740993,\\x0a0b\r\n')).toBe(true);
    expect(result.metadata).toMatchObject({ rows: 12345, bytes: Buffer.byteLength(csv), columns: ['id', 'label', 'amount', 'big', 'raw'] });
    expect(result.output.split('\n')[0]).toBe(`Exported 12,345 rows (${result.output.split('(')[1]!.split(',')[0]}, 5 columns) to out/rows.csv`);
    expect(result.output).toContain('first 5 rows:');
    expect(result.output).toContain('│ 12345 │ row 12345 │ 3086.25 │ 12345000 │     │');
    expect(readdirSync(join(exportDir, 'out'))).toEqual(['rows.csv']);
  });

  test('statements SQLite cannot wrap (PRAGMA) are encoded by quarry the same way', async () => {
    const result = await runner.run('sqlite', { operation: 'export_query', sql: 'PRAGMA table_info(customers)', output_path: 'pragma.csv' });
    expect(result.ok).toBe(true);
    expect(readFileSync(join(dir, 'pragma.csv'), 'utf8').split('\r\n')[0]).toBe('cid,name,type,notnull,dflt_value,pk');
  });

  test('never overwrites: an existing file is left byte for byte', async () => {
    const target = join(dir, 'exists.csv');
    writeFileSync(target, 'keep me');
    const result = await runner.run('sqlite', { operation: 'export_query', sql: 'SELECT * FROM customers', output_path: 'exists.csv' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('already exists');
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });

  test('an error part-way leaves no file and no temporary file', async () => {
    const exportDir = makeTempDir();
    const dbPath = join(exportDir, 'e.db');
    const db = new Database(dbPath);
    db.exec(
      'CREATE TABLE t (v TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 20000) INSERT INTO t SELECT CASE WHEN i = 19000 THEN ' +
        "'bad' ELSE '{\"a\":1}' END FROM n",
    );
    db.close();
    const before = readdirSync(exportDir).sort();
    const local = makeRunner(configsFor([`e=${dbPath}`], exportDir), exportDir);
    const result = await local.run('sqlite', { operation: 'export_query', sql: "SELECT json_extract(v, '$.a') FROM t", output_path: 'broken.csv' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('malformed JSON');
    expect(readdirSync(exportDir).sort()).toEqual(before);
  });

  test('a cancel part-way leaves no file', async () => {
    const exportDir = makeTempDir();
    const dbPath = join(exportDir, 'c.db');
    const db = new Database(dbPath);
    db.exec('CREATE TABLE t (v INTEGER); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 300000) INSERT INTO t SELECT i FROM n');
    db.close();
    const local = makeRunner(configsFor([`c=${dbPath}`], exportDir), exportDir);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 5);
    const result = await local.run(
      'sqlite',
      { operation: 'export_query', sql: 'SELECT a.v, b.v FROM t a, t b', output_path: 'cancelled.csv' },
      controller.signal,
    );
    expect(result.ok).toBe(false);
    expect(result.metadata.error).toBe('cancelled');
    expect(readdirSync(exportDir).sort()).toEqual(['c.db']);
  });

  test('paths outside the allowed places are refused (docs/guide/tools.md "Writes")', async () => {
    const result = await runner.run('sqlite', { operation: 'export_query', sql: 'SELECT 1', output_path: '/etc/quarry-export.csv' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('/etc/ is a system directory');
    expect(existsSync('/etc/quarry-export.csv')).toBe(false);
  });
});

describe('sqlite tool shape and modes', () => {
  test('export_query is not a read-only call (approval and concurrency follow); the other operations are', () => {
    const tool = runner.registry.get('sqlite')!;
    expect(isReadOnlyCall(tool, { operation: 'query', sql: 'SELECT 1' })).toBe(true);
    expect(isReadOnlyCall(tool, { operation: 'export_query', sql: 'SELECT 1', output_path: 'x.csv' })).toBe(false);
    expect(tool.parameters.properties.database).toEqual({ type: 'string', enum: ['shop'], description: 'Alias of the database: shop' });
    expect(tool.parameters.required).toEqual(['operation']);
  });

  test('with several databases the alias is required and checked', async () => {
    const second = createSqliteFixture(dir, 'other.db');
    const both = makeRunner(configsFor(['shop.db', `b=${second}`], dir), dir);
    expect(both.registry.get('sqlite')!.parameters.required).toEqual(['database', 'operation']);
    const missing = await both.run('sqlite', { operation: 'query', sql: 'SELECT 1' });
    expect(missing.ok).toBe(false);
    const wrong = await both.run('sqlite', { database: 'nope', operation: 'query', sql: 'SELECT 1' });
    expect(wrong).toMatchObject({ ok: false, metadata: { error: 'invalid_arguments' } });
    const right = await both.run('sqlite', { database: 'b', operation: 'query', sql: 'SELECT count(*) AS n FROM customers' });
    expect(right.output).toContain('│ 3 │');
  });

  test('mutations mode (eval profile) runs writes and commits them', async () => {
    const mutableDir = makeTempDir();
    const path = createSqliteFixture(mutableDir);
    const evalRunner = makeRunner(configsFor([path], mutableDir), mutableDir, 'eval');
    const result = await evalRunner.run('sqlite', { operation: 'query', sql: "UPDATE customers SET name = 'Zed' WHERE id = 1;" });
    expect(result.output).toBe('The statement ran and returned no rows (1 row affected).');
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT name FROM customers WHERE id = 1').pluck().get()).toBe('Zed');
    db.close();
  });
});
