import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { estimateRows } from '../../../src/tools/database/catalog/explain.js';
import { driverFor } from '../../../src/tools/database/connections.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, directoryFingerprint, freshPostgresDatabase, makeRunner, requireEnv } from './helpers.js';

/**
 * Red-team cases for the schema operations (docs/guide/databases.md "Knowing the data") on SQLite: figures checked
 * against an independent computation of the same values, and everyday read-only calls that must
 * not be refused.
 */

const dir = makeTempDir();
const path = join(dir, 'figures.db');
let run: ReturnType<typeof makeRunner>['run'];

/** Sample standard deviation computed here, centred on the mean. */
function stddev(values: number[]): number {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  return Math.sqrt(values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (values.length - 1));
}

beforeAll(() => {
  const db = new Database(path);
  db.exec(`CREATE TABLE events (id INTEGER PRIMARY KEY, epoch_ms INTEGER, big_id INTEGER, label TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
    INSERT INTO events SELECT i, 1700000000000 + i % 3, 1000000000 + i % 2, 'e' || i FROM n;`);
  db.close();
  run = makeRunner(configsFor([`f=${path}`], dir), dir).run;
});

describe('profile figures against an independent computation', () => {
  test('standard deviation of large values with a small spread is not cancelled to 0; the mean keeps its decimals', async () => {
    const values = Array.from({ length: 1000 }, (_, index) => index + 1);
    const epoch = stddev(values.map((i) => 1700000000000 + (i % 3)));
    const big = stddev(values.map((i) => 1000000000 + (i % 2)));
    const result = await run('sqlite', { operation: 'profile', table_name: 'events', columns: ['epoch_ms', 'big_id'] });
    expect(result.ok).toBe(true);
    expect(result.output).toMatch(
      new RegExp(`│ epoch_ms +│ INTEGER │ 0% +│ 3 +│ 1700000000000 +│ 1700000000002 +│ 1,700,000,000,001 +│ ${epoch.toPrecision(6)} `),
    );
    // Beyond 2^53 a double holds no exact integer: exponent form, checked against Python's statistics (4.61619e+18, 6.51554e+18).
    const huge = await run('sqlite', { operation: 'profile', sql: 'SELECT 9007199254741993 AS big UNION ALL SELECT 9223372036854775000' });
    expect(huge.output).toMatch(/│ big +│ number │ 0% +│ 2 +│ 9007199254741993 │ 9223372036854775000 │ 4\.61619e\+18 │ 6\.51554e\+18 │/);
    expect(result.output).toMatch(
      new RegExp(`│ big_id +│ INTEGER │ 0% +│ 2 +│ 1000000000 +│ 1000000001 +│ 1000000000\\.5 +│ ${big.toPrecision(6).replace(/0+$/, '')} `),
    );
  });
});

describe('duckdb profile of doubles near the top of their range', () => {
  test("a standard deviation that overflows leaves the column's other figures; the mean is shown in exponent form, not as 300 digits", async () => {
    const csv = join(dir, 'huge.csv');
    writeFileSync(csv, 'id,amt\n1,10.5\n2,\n3,1e300\n');
    const duck = makeRunner(configsFor([`huge=${csv}`], dir), dir).run;
    const result = await duck('duckdb', { operation: 'profile', table_name: 'huge', columns: ['amt'] });
    expect(result.output).toMatch(/│ amt +│ DOUBLE │ 33\.3% │ 2 +│ 10\.5 │ 1e\+300 │ 5e\+299 │ +│ +│ 10\.5 \(1\), 1e\+300 \(1\) │/);
  });
});

describe.each([
  ['postgres', 'QUARRY_TEST_PG_URL', 'SELECT 1700000000000::bigint + i % 3 AS epoch_ms FROM generate_series(1, 1000) AS i'],
  [
    'mysql',
    'QUARRY_TEST_MYSQL_URL',
    'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT 1700000000000 + i % 3 AS epoch_ms FROM n',
  ],
])('%s profile of large values with a small spread', (engine, variable, sql) => {
  test("the standard deviation is the engine's own STDDEV_SAMP, not cancelled to 0", async () => {
    const expected = stddev(Array.from({ length: 1000 }, (_, index) => 1700000000000 + ((index + 1) % 3)));
    const server = makeRunner(configsFor([`srv=${requireEnv(variable)}`], dir), dir).run;
    const result = await server(engine, { operation: 'profile', sql });
    expect(result.ok).toBe(true);
    expect(result.output).toMatch(
      new RegExp(`│ epoch_ms +│ number[^│]*│ 0% +│ 3 +│ 1700000000000 +│ 1700000000002 +│ 1,700,000,000,001 +│ ${expected.toPrecision(6)} `),
    );
  });
});

describe('everyday read-only calls', () => {
  test('explain of a plan longer than 1,000 rows says that it is cut (it ended silently at row 1,000)', async () => {
    const sql = `SELECT ${Array.from({ length: 700 }, (_, i) => `(SELECT max(epoch_ms) FROM events WHERE label = 'v${i}') AS c${i}`).join(', ')}`;
    const plan = await run('sqlite', { operation: 'explain', sql });
    expect(plan.ok).toBe(true);
    expect(plan.output.split('\n').filter((line) => line.includes('SCALAR SUBQUERY'))).toHaveLength(500);
    expect(plan.output).toMatch(/\n└─ SCALAR SUBQUERY 500\n\(plan cut at its first 1,000 rows: explain a smaller part of the statement to see the rest\)$/);
  });

  test('describe, sample and profile take schema.table as list_tables and profile show it (main.events)', async () => {
    const before = directoryFingerprint(dir);
    const described = await run('sqlite', { operation: 'describe', table_name: 'main.events' });
    expect(described.output).toMatch(/^main\.events: 4 columns\nprimary key: id/);
    const sampled = await run('sqlite', { operation: 'sample', table_name: 'main.events', row_limit: 3 });
    expect(sampled.output).toMatch(/\(3 rows: /);
    const profiled = await run('sqlite', { operation: 'profile', table_name: 'main.events', columns: ['label'] });
    expect(profiled.output).toMatch(/│ label +│ TEXT +│ 0% +│ 1,000 +│ e1 +│ e999 /);
    expect((await run('sqlite', { operation: 'describe', table_name: 'nowhere.events' })).output).toBe(
      'no such table or view: nowhere.events; use operation list_tables to see the tables; did you mean main.events?',
    );
    expect(directoryFingerprint(dir)).toBe(before);
  });
});

describe('postgres query guard', () => {
  test("a sequential scan of a table outside the search path is judged by that table's own estimate, not the filter's or a same-named table's", async () => {
    const { admin, url } = await freshPostgresDatabase('quarry_hred');
    await admin.query(`CREATE SCHEMA hidden; CREATE TABLE hidden.facts AS SELECT i AS id, md5(i::text) AS label FROM generate_series(1, 300000) AS i;
      CREATE TABLE public.facts (id int); INSERT INTO public.facts VALUES (1); ANALYZE hidden.facts; ANALYZE public.facts;
      GRANT USAGE ON SCHEMA hidden TO quarry_test; GRANT SELECT ON ALL TABLES IN SCHEMA hidden, public TO quarry_test;`);
    await admin.end();
    const driver = await driverFor(configsFor([`pgh=${url}`], dir)[0]!, true);
    const options = { readOnly: true, signal: new AbortController().signal };
    await driver.connect(options.signal);
    const estimate = await estimateRows('postgres', driver, "SELECT * FROM hidden.facts WHERE md5(label) = 'x'", options);
    expect(estimate).toEqual({ rows: 300_000, table: 'hidden.facts' });
    // A LIMIT reads a few pages, not the table: the everyday first look is not refused; a sort before the LIMIT still reads it all.
    const limited = await estimateRows('postgres', driver, 'SELECT * FROM hidden.facts LIMIT 10', options);
    expect(limited!.rows).toBeLessThan(100);
    expect(await estimateRows('postgres', driver, 'SELECT * FROM hidden.facts ORDER BY label LIMIT 10', options)).toEqual({
      rows: 300_000,
      table: 'hidden.facts',
    });
    expect(await estimateRows('postgres', driver, 'SELECT count(*) FROM (SELECT * FROM hidden.facts LIMIT 200000) AS s', options)).toEqual({
      rows: 200_000,
      table: 'hidden.facts',
    });
  });
});
