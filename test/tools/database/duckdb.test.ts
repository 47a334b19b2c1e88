import { DuckDBInstance } from '@duckdb/node-api';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseCsvRecords } from '../../../src/tools/database/csv.js';
import { loadDatabaseConfigs } from '../../../src/config/databases.js';
import { DuckdbDriver } from '../../../src/tools/database/drivers/duckdb.js';
import type { DatabaseConfig, RunOptions } from '../../../src/tools/database/types.js';
import { makeTempDir } from '../../support/context.js';
import { directoryFingerprint, makeRunner } from './helpers.js';

let dir: string;
let configs: DatabaseConfig[];
let runner: ReturnType<typeof makeRunner>;
const engineOnly: DuckdbDriver[] = [];

/** Runs SQL in a separate, unrestricted DuckDB (the fixture writer and the reference). */
async function reference(sql: string): Promise<void> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(sql);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

beforeAll(async () => {
  dir = makeTempDir();
  const q = (name: string) => `'${join(dir, name)}'`;
  await reference(
    `COPY (SELECT range AS id, 'r' || (range % 5) AS region, (range * 1.25)::DECIMAL(12, 2) AS amount FROM range(1000)) TO ${q('sales.parquet')} (FORMAT ` +
      `parquet)`,
  );
  await reference(`COPY (SELECT 'r' || range AS region, 'Region ' || range AS label FROM range(5)) TO ${q('regions.csv')} (HEADER)`);
  await reference(`COPY (SELECT range AS id, range % 7 AS k FROM range(1000000)) TO ${q('big.csv')} (HEADER)`);
  await reference(`COPY (SELECT 42 AS secret) TO ${q('secret.csv')} (HEADER)`);
  await reference(
    `ATTACH ${q('data.duckdb')} AS d; CREATE TABLE d.items (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL); INSERT INTO d.items VALUES (1, 'one'), (2, 'two')`,
  );
  writeFileSync(
    join(dir, 'events.jsonl'),
    Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: i, region: `r${i % 5}`, kind: i % 2 ? 'click' : 'view' })).join('\n') + '\n',
  );
  writeFileSync(
    join(dir, 'lake.yaml'),
    `databases:\n  lake:\n    type: duckdb\n    files:\n      sales: sales.parquet\n      regions: regions.csv\n      events: events.jsonl\n      big: ` +
      `big.csv\n  slow:\n    type: duckdb\n    statement_timeout: 1\n    files:\n      regions: regions.csv\n`,
  );
  configs = loadDatabaseConfigs({
    dbFlags: ['data.duckdb', 'regions.csv', `parts=duckdb:${join(dir, 'r*.csv')}`],
    databasesFile: join(dir, 'lake.yaml'),
    env: {},
    cwd: dir,
  });
  runner = makeRunner(configs, dir);
}, 60_000);

afterAll(async () => {
  await Promise.all(engineOnly.map((driver) => driver.close()));
});

const config = (alias: string) => configs.find((candidate) => candidate.alias === alias)!;
const run = (args: Record<string, unknown>, signal?: AbortSignal) => runner.run('duckdb', { database: 'lake', ...args }, signal);

/** The engine layer alone: the driver in read-only mode, the statement check bypassed. */
async function engine(alias: string): Promise<DuckdbDriver> {
  const driver = new DuckdbDriver(config(alias), true);
  engineOnly.push(driver);
  await driver.connect();
  return driver;
}
const readOnly = (): RunOptions => ({ readOnly: true, signal: new AbortController().signal });

describe('duckdb configuration', () => {
  test('files become views named after them; a glob is one view; a .duckdb file is opened as a database', () => {
    expect(config('regions')).toMatchObject({ engine: 'duckdb', files: { regions: join(dir, 'regions.csv') } });
    // With an alias, the one view takes the alias's name; without, a glob's view is named after its folder.
    expect(config('parts')).toMatchObject({ engine: 'duckdb', files: { parts: join(dir, 'r*.csv') } });
    const unnamed = loadDatabaseConfigs({ dbFlags: [`duckdb:${join(dir, 'r*.csv')}`], env: {}, cwd: dir })[0]!;
    expect(unnamed.files).toEqual({
      [dir
        .split('/')
        .pop()!
        .replace(/[^A-Za-z0-9_]/g, '_')]: join(dir, 'r*.csv'),
    });
    expect(config('data')).toMatchObject({ engine: 'duckdb', path: join(dir, 'data.duckdb') });
    expect(config('lake').files).toEqual({
      sales: join(dir, 'sales.parquet'),
      regions: join(dir, 'regions.csv'),
      events: join(dir, 'events.jsonl'),
      big: join(dir, 'big.csv'),
    });
    expect(config('slow').statementTimeoutMs).toBe(1000);
  });

  test('bad configurations say what to fix', () => {
    const load = (dbFlags: string[]) => () => loadDatabaseConfigs({ dbFlags, env: {}, cwd: dir });
    expect(load(['missing.csv'])).toThrow(/no such file: .*missing\.csv/);
    expect(load(['duckdb:nowhere/*.csv'])).toThrow(/folder of the glob does not exist/);
    expect(load(['duckdb:*.txt'])).toThrow(/not a CSV, Parquet or JSON file/);
    writeFileSync(join(dir, 'bad.yaml'), 'databases:\n  x:\n    type: duckdb\n');
    expect(() => loadDatabaseConfigs({ databasesFile: join(dir, 'bad.yaml'), env: {}, cwd: dir })).toThrow(/needs "path".*and\/or "files"/);
  });
});

describe('duckdb queries over CSV, Parquet and JSON lines', () => {
  test('each file is queryable and joins across them work', async () => {
    const result = await run({
      operation: 'query',
      sql: `SELECT r.label, count(DISTINCT s.id) AS sales, sum(s.amount) AS total, count(DISTINCT e.id) AS events
            FROM sales s JOIN regions r USING (region) JOIN events e USING (region) GROUP BY ALL ORDER BY 1`,
    });
    expect(result.ok).toBe(true);
    // sales: ids with id % 5 = k, amount 1.25 * id; events: 10 per region.
    const expected = [0, 1, 2, 3, 4].map((k) => {
      const ids = Array.from({ length: 200 }, (_, i) => i * 5 + k);
      return `│ Region ${k} │ 200   │ ${(ids.reduce((a, b) => a + b, 0) * 1.25 * 10).toFixed(2)} │ 10     │`;
    });
    for (const line of expected) expect(result.output).toContain(line);
    expect(result.metadata).toMatchObject({ rows: 5, more: false, engine: 'duckdb' });
  });

  test('a 1,000,000-row CSV aggregate is exact', async () => {
    const result = await run({ operation: 'query', sql: 'SELECT k, count(*) AS n, sum(id) AS s FROM big GROUP BY k ORDER BY k' });
    expect(result.ok).toBe(true);
    for (let k = 0; k < 7; k++) {
      let n = 0;
      let s = 0;
      for (let id = k; id < 1_000_000; id += 7) {
        n++;
        s += id;
      }
      expect(result.output).toContain(`│ ${k} │ ${n} │ ${s} │`);
    }
  });

  test('the limit is inside the statement and "more rows" is exact', async () => {
    const five = await run({ operation: 'query', sql: 'SELECT * FROM regions', row_limit: 5 });
    expect(five.metadata).toMatchObject({ rows: 5, more: false });
    const four = await run({ operation: 'query', sql: 'SELECT * FROM regions ORDER BY region DESC', row_limit: 4 });
    expect(four.metadata).toMatchObject({ rows: 4, more: true });
    expect(four.output).toContain('│ r4     │ Region 4 │');
    expect(four.output).not.toContain('r0');
    const big = await run({ operation: 'query', sql: 'FROM big ORDER BY id DESC', row_limit: 3 });
    expect(big.output).toContain('│ 999999 │');
    expect(big.metadata).toMatchObject({ rows: 3, more: true });
  });

  test('list_tables, describe and DESCRIBE/SHOW/PRAGMA/CALL reads', async () => {
    const tables = await run({ operation: 'list_tables' });
    for (const name of ['sales', 'regions', 'events', 'big']) expect(tables.output).toMatch(new RegExp(`│ main +│ ${name} +│ view │`));
    const described = await run({ operation: 'describe', table_name: 'sales' });
    expect(described.output).toContain('│ amount │ DECIMAL(12,2) │');
    const items = await runner.run('duckdb', { database: 'data', operation: 'describe', table_name: 'items' });
    expect(items.output).toContain('primary key: id');
    expect(items.output).toMatch(/│ name +│ VARCHAR +│ no /);
    for (const sql of [
      'DESCRIBE sales',
      'SHOW TABLES',
      "PRAGMA table_info('sales')",
      'CALL duckdb_settings()',
      'SUMMARIZE regions',
      `SELECT * FROM read_csv('${join(dir, 'regions.csv')}')`,
    ]) {
      const result = await run({ operation: 'query', sql });
      expect(result.ok, `${sql}: ${result.output}`).toBe(true);
    }
  });
});

describe('duckdb schema operations (docs/guide/databases.md "Knowing the data")', () => {
  test("search, sample, profile and explain over file views; values in DuckDB's own text; an unconfigured file is refused in profile and explain", async () => {
    const found = await run({ operation: 'search', pattern: 'region' });
    expect(found.output).toMatch(/│ column │ main +│ events +│ region +│ VARCHAR │/);
    expect(found.output).toMatch(/│ column │ main +│ sales +│ region +│ VARCHAR │/);
    const sampled = await run({ operation: 'sample', table_name: 'sales', row_limit: 5 });
    expect(sampled.metadata.rows).toBe(5);
    expect(sampled.output).toContain('DuckDB reservoir sampling (USING SAMPLE)');
    expect(sampled.output).toMatch(/│ \d+ +│ r\d +│ \d+\.\d\d +│/);
    const profiled = await run({ operation: 'profile', table_name: 'sales' });
    expect(profiled.output).toContain('Profile of main.sales: 3 of 3 columns, from all 1,000 rows');
    expect(profiled.output).toMatch(/│ region │ VARCHAR +│ 0% +│ 5 +│ r0 +│ r4 +│ +│ +│ 2–2 +│ r0 \(200\), r1 \(200\), r2 \(200\), r3 \(200\), r4 \(200\) │/);
    expect(profiled.output).toMatch(/│ amount │ DECIMAL\(12,2\) │ 0% +│ 1,000 +│ 0\.00 +│ 1248\.75 +│ 624\.375 │/);
    const plan = await run({ operation: 'explain', sql: 'SELECT region, count(*) FROM sales GROUP BY region' });
    expect(plan.output).toContain('HASH_GROUP_BY');
    for (const operation of ['explain', 'profile']) {
      const outside = await run({ operation, sql: `SELECT * FROM read_text('/etc/passwd')` });
      expect(outside.ok, operation).toBe(false);
      expect(outside.output).toMatch(/refused/);
    }
  });
});

/** Every refusal of the statement check; `engine` says what the engine alone does with it. */
/** refuses: the read-only settings stop it; errors: DuckDB cannot even bind it here; no effect: runs, but changes no data or file. */
const CORPUS: { sql: string; engine: 'refuses' | 'errors' | 'no effect' }[] = [
  { sql: "COPY sales TO 'copied.csv'", engine: 'refuses' },
  { sql: "COPY (SELECT 1) TO 'copied.parquet' (FORMAT parquet)", engine: 'refuses' },
  { sql: "EXPORT DATABASE 'exported'", engine: 'refuses' },
  { sql: "IMPORT DATABASE 'exported'", engine: 'refuses' },
  { sql: "ATTACH 'other.duckdb' AS o", engine: 'refuses' },
  { sql: 'DETACH memory', engine: 'refuses' },
  { sql: 'INSTALL httpfs', engine: 'refuses' },
  { sql: 'LOAD httpfs', engine: 'refuses' },
  { sql: 'SET enable_external_access = true', engine: 'refuses' },
  { sql: 'SET threads = 1', engine: 'refuses' },
  { sql: 'RESET lock_configuration', engine: 'refuses' },
  { sql: 'PRAGMA enable_profiling', engine: 'refuses' },
  { sql: 'PRAGMA threads = 1', engine: 'refuses' },
  { sql: 'CREATE TABLE t AS SELECT 1 AS x', engine: 'refuses' },
  { sql: 'CREATE TEMP VIEW v AS SELECT 1', engine: 'refuses' },
  { sql: 'CREATE MACRO m() AS 1', engine: 'refuses' },
  { sql: 'DROP VIEW sales', engine: 'refuses' },
  { sql: 'INSERT INTO sales VALUES (3, 3, 3)', engine: 'errors' },
  { sql: 'WITH x AS (SELECT 1) SELECT * INTO t FROM x', engine: 'errors' },
  { sql: 'BEGIN TRANSACTION', engine: 'refuses' },
  { sql: 'SELECT 1; SELECT 2', engine: 'refuses' },
  { sql: 'CALL checkpoint()', engine: 'no effect' },
  { sql: 'CALL enable_logging()', engine: 'no effect' },
  { sql: "SELECT * FROM query('SELECT 1')", engine: 'no effect' },
  { sql: "SELECT * FROM read_csv('secret.csv')", engine: 'refuses' },
  { sql: "SELECT * FROM read_text('/etc/passwd')", engine: 'refuses' },
  { sql: "SELECT * FROM read_blob('secret.csv')", engine: 'refuses' },
  { sql: "SELECT * FROM glob('*')", engine: 'refuses' },
  { sql: "SELECT * FROM read_parquet(['sales.parquet', 'secret.csv'])", engine: 'refuses' },
  { sql: "SELECT * FROM sniff_csv('secret.csv')", engine: 'refuses' },
  { sql: "SELECT * FROM 'secret.csv'", engine: 'refuses' },
  { sql: 'SELECT * FROM "secret.csv"', engine: 'refuses' },
  { sql: "SELECT * FROM regions, 'secret.csv'", engine: 'refuses' },
  { sql: "SELECT * FROM read_csv('secr' || 'et.csv')", engine: 'refuses' },
];

describe('duckdb read-only: two layers', () => {
  test.each(CORPUS)('statement check refuses: $sql', async ({ sql }) => {
    const before = directoryFingerprint(dir);
    const result = await run({ operation: 'query', sql });
    expect(result.ok, result.output).toBe(false);
    expect(result.metadata).toMatchObject({ error: 'read_only_violation' });
    expect(result.output).toMatch(/^refused: /);
    expect(directoryFingerprint(dir)).toBe(before);
  });

  test.each(CORPUS)('engine layer alone: $sql', async ({ sql, engine: expected }) => {
    const before = directoryFingerprint(dir);
    const driver = await engine('lake');
    const attempt = driver.query(sql, 10, readOnly());
    if (expected === 'refuses') await expect(attempt).rejects.toThrow(/refused|Permission Error|disabled by configuration|read-only|No files found/i);
    else if (expected === 'errors') await expect(attempt).rejects.toThrow();
    else await attempt.catch(() => undefined);
    // Nothing on disk changed and the views are still there, unchanged.
    expect(directoryFingerprint(dir)).toBe(before);
    expect(readdirSync(dir).some((name) => /^copied|^exported|^other/.test(name))).toBe(false);
    const tables = await driver.catalog(
      'SELECT table_name FROM duckdb_tables() WHERE NOT internal UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal',
      [],
      readOnly(),
    );
    expect(tables.map(([name]) => name).sort()).toEqual(['big', 'events', 'regions', 'sales']);
    const setting = await driver.query("SELECT current_setting('enable_external_access'), current_setting('lock_configuration')", 1, readOnly());
    expect(setting.rows).toEqual([['false', 'true']]);
  });

  test('the engine opens a .duckdb file read-only and refuses writes to it', async () => {
    const before = readFileSync(join(dir, 'data.duckdb'));
    const driver = await engine('data');
    const mode = await driver.query(
      "SELECT current_setting('access_mode'), current_setting('autoload_known_extensions'), current_setting('autoinstall_known_extensions')",
      1,
      readOnly(),
    );
    expect(mode.rows).toEqual([['read_only', 'false', 'false']]);
    await expect(driver.query("INSERT INTO items VALUES (3, 'three')", 1, readOnly())).rejects.toThrow(/refused/);
    // Even in mutations mode on a read-only handle, DuckDB itself refuses.
    const writer = new DuckdbDriver(config('data'), true);
    engineOnly.push(writer);
    await writer.connect();
    await expect(writer.query("INSERT INTO items VALUES (3, 'three')", 1, { readOnly: false, signal: new AbortController().signal })).rejects.toThrow(
      /read-only/i,
    );
    expect(readFileSync(join(dir, 'data.duckdb')).equals(before)).toBe(true);
    const rows = await driver.query('SELECT count(*) FROM items', 1, readOnly());
    expect(rows.rows).toEqual([['2']]);
  });

  test('a configured file is readable through its path too, by both layers', async () => {
    const result = await run({ operation: 'query', sql: `SELECT count(*) FROM read_parquet('${join(dir, 'sales.parquet')}')` });
    expect(result.output).toMatch(/│ 1000 +│/);
  });
});

describe('duckdb export_query', () => {
  test("matches DuckDB's own COPY output record for record, is atomic and never overwrites", async () => {
    const sql = `SELECT s.id, s.amount, r.label, e.kind, s.id / 7 AS ratio, TIMESTAMP '2024-02-29 13:45:00' + INTERVAL (s.id) MINUTE AS at,
                   CASE WHEN s.id % 3 = 0 THEN NULL WHEN s.id % 3 = 1 THEN 'a "quoted", value' ELSE E'line\\nbreak' END AS tricky, [s.id, 2] AS list
                 FROM sales s JOIN regions r USING (region) LEFT JOIN events e ON e.id = s.id ORDER BY s.id DESC`;
    const result = await run({ operation: 'export_query', sql, output_path: 'export.csv' });
    expect(result.ok, result.output).toBe(true);
    expect(result.metadata).toMatchObject({ rows: 1000 });
    const ours = readFileSync(join(dir, 'export.csv'), 'utf8');
    expect(ours.split('\r\n').length).toBeGreaterThan(1000);
    const views = Object.entries(config('lake').files!)
      .map(([view, path]) => `CREATE VIEW ${view} AS SELECT * FROM '${path}';`)
      .join('');
    await reference(`${views} COPY (${sql}) TO '${join(dir, 'reference.out')}' (HEADER, FORMAT csv)`);
    const theirs = readFileSync(join(dir, 'reference.out'), 'utf8');
    expect(parseCsvRecords(ours, 2000)).toEqual(parseCsvRecords(theirs, 2000));
    const again = await run({ operation: 'export_query', sql: 'SELECT 1', output_path: 'export.csv' });
    expect(again.ok).toBe(false);
    expect(readFileSync(join(dir, 'export.csv'), 'utf8')).toBe(ours);
    expect(readdirSync(dir).filter((name) => name.includes('.tmp') || name.startsWith('.'))).toEqual([]);
  });

  test('lines short enough for DuckDB to keep inline, long ones and multi-byte text come out byte for byte over many chunks', async () => {
    const sql =
      "SELECT range AS id, CASE WHEN range % 3 = 0 THEN NULL WHEN range % 3 = 1 THEN repeat('é', (range % 40)::INTEGER) || ',' ELSE 'x' END AS t, CASE WHEN " +
      'range % 5 = 0 THEN NULL ELSE range END AS n FROM range(10000)';
    const result = await run({ operation: 'export_query', sql, output_path: 'mixed.csv' });
    expect(result.ok, result.output).toBe(true);
    const line = (i: number) => (i % 3 === 0 ? `${i},` : i % 3 === 1 ? `${i},"${'é'.repeat(i % 40)},"` : `${i},x`);
    const expected = `id,t,n\r\n${Array.from({ length: 10000 }, (_, i) => `${line(i)},${i % 5 === 0 ? '' : i}\r\n`).join('')}`;
    expect(readFileSync(join(dir, 'mixed.csv')).equals(Buffer.from(expected, 'utf8'))).toBe(true);
  });

  test('a failing export leaves no file', async () => {
    const result = await run({ operation: 'export_query', sql: "SELECT CAST('x' AS INTEGER) FROM big", output_path: 'failed.csv' });
    expect(result.ok).toBe(false);
    expect(existsSync(join(dir, 'failed.csv'))).toBe(false);
  });
});

describe('duckdb cancellation and timeout', () => {
  const LONG = 'SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b';

  test('cancelling interrupts a long query', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 300);
    const result = await run({ operation: 'query', sql: LONG }, controller.signal);
    expect(result.ok).toBe(false);
    expect(result.metadata).toMatchObject({ error: 'cancelled' });
    expect(Date.now() - started).toBeLessThan(20_000);
    const after = await run({ operation: 'query', sql: 'SELECT count(*) FROM regions' });
    expect(after.output).toContain('│ 5 ');
  });

  test('the statement timeout stops a long query', async () => {
    const started = Date.now();
    const result = await runner.run('duckdb', { database: 'slow', operation: 'query', sql: LONG });
    expect(result.ok).toBe(false);
    expect(result.metadata).toMatchObject({ error: 'timeout' });
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
