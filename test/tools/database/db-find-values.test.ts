import { DuckDBInstance } from '@duckdb/node-api';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import type pg from 'pg';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EventEmitter } from 'node:events';
import { loadDatabaseConfigs } from '../../../src/config/databases.js';
import { findValues, formatFindValues } from '../../../src/tools/database/catalog/find-values.js';
import { indexLookup } from '../../../src/tools/database/values-index/lookup.js';
import { buildValueIndex } from '../../../src/tools/database/values-index/build.js';
import { indexPath } from '../../../src/tools/database/values-index/store.js';
import { ORACLE_BEGIN_READ_ONLY, OracleDriver } from '../../../src/tools/database/drivers/oracle.js';
import { VERTICA_BEGIN_READ_ONLY, VerticaDriver } from '../../../src/tools/database/drivers/vertica.js';
import { driverFor } from '../../../src/tools/database/connections.js';
import type { DatabaseConfig, Engine } from '../../../src/tools/database/types.js';
import { cliEnv, runCli } from '../../support/agent-cli.js';
import { REPO_ROOT } from '../../support/cli.js';
import { clickhouseAdmin } from '../../support/clickhouse.js';
import { makeTempDir } from '../../support/context.js';
import { seededRandom, testSeed } from '../../support/random.js';
import { recordingOracleConnection } from './recording-oracle.js';
import { configsFor, directoryFingerprint, freshPostgresDatabase, makeRunner, requireEnv } from './helpers.js';

/**
 * find_values (docs/guide/databases.md "Knowing the data") against real SQLite, PostgreSQL, MariaDB and DuckDB
 * files, all loaded with the sample database's customers, products and orders. The ground truth is
 * generated: values drawn (seeded) from the data's own text columns, asked exactly, lower-cased, as
 * a prefix, as a substring and with a typo; the right answer is every column that holds a matching
 * value, found here by brute force over the same rows. Then the awkward values (quotes, % and _,
 * NUL, unicode, 10 KB), a table the user may not read, the time budget, and the CLI.
 */

const dir = makeTempDir();
const SAMPLE = join(REPO_ROOT, 'fixtures', 'sample.db');
const TABLES = ['customers', 'products', 'orders'] as const;
const SEED = testSeed(20261127);

interface Loaded {
  columns: Record<string, { name: string; type: string }[]>;
  rows: Record<string, unknown[][]>;
}

function loadSample(): Loaded {
  const db = new Database(SAMPLE, { readonly: true });
  const loaded: Loaded = { columns: {}, rows: {} };
  for (const table of TABLES) {
    loaded.columns[table] = (db.prepare(`SELECT name, type FROM pragma_table_info(?)`).all(table) as { name: string; type: string }[]).map((c) => ({
      name: c.name,
      type: c.type,
    }));
    loaded.rows[table] = db.prepare(`SELECT * FROM ${table}`).raw(true).all() as unknown[][];
  }
  db.close();
  return loaded;
}
const sample = loadSample();

/** Plain Damerau (optimal string alignment) distance over the whole matrix: the test's own, not the module's. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

type Mode = 'exact' | 'lower' | 'prefix' | 'contains' | 'fuzzy';
interface Question {
  mode: Mode;
  value: string;
  truth: Set<string>;
}

/** The columns (table.column) holding a value that matches, by brute force over every row. */
function truthFor(value: string, mode: Mode): Set<string> {
  const wanted = value.toLowerCase();
  const allowance = [...wanted].length <= 3 ? 0 : [...wanted].length <= 7 ? 1 : Math.floor([...wanted].length / 4);
  const found = new Set<string>();
  for (const table of TABLES)
    sample.columns[table]!.forEach((column, index) => {
      if (column.type !== 'TEXT') return;
      for (const row of sample.rows[table]!) {
        const cell = row[index];
        if (typeof cell !== 'string') continue;
        const lower = cell.toLowerCase();
        const hit =
          mode === 'prefix'
            ? lower.startsWith(wanted)
            : mode === 'contains'
              ? lower.includes(wanted)
              : mode === 'fuzzy'
                ? distance(lower, wanted) <= allowance
                : lower === wanted;
        if (hit) {
          found.add(`${table}.${column.name}`);
          return;
        }
      }
    });
  return found;
}

function questions(count: number): Question[] {
  const random = seededRandom(SEED);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const made: Question[] = [];
  while (made.length < count * 5) {
    const table = pick(TABLES);
    const textColumns = sample.columns[table]!.map((column, index) => ({ ...column, index })).filter((column) => column.type === 'TEXT');
    const column = pick(textColumns);
    const cell = pick(sample.rows[table]!)[column.index];
    if (typeof cell !== 'string' || cell.length < 4) continue;
    const half = Math.max(3, Math.floor(cell.length / 2));
    const start = Math.floor(random() * (cell.length - 3));
    const cut = 1 + Math.floor(random() * (cell.length - 2));
    const typo = random() < 0.5 ? cell.slice(0, cut) + cell.slice(cut + 1) : cell.slice(0, cut - 1) + cell[cut] + cell[cut - 1] + cell.slice(cut + 1);
    const variants: [Mode, string][] = [
      ['exact', cell],
      ['lower', cell.toLowerCase()],
      ['prefix', cell.slice(0, half)],
      ['contains', cell.slice(start, start + 3 + Math.floor(random() * 4))],
      ['fuzzy', typo],
    ];
    for (const [mode, value] of variants) made.push({ mode, value, truth: truthFor(value, mode) });
  }
  return made;
}

const QUESTIONS = questions(16);

/** Copies the sample's three tables into a server (names prefixed fv_), by the engine's own client. */
function createStatements(engine: 'postgres' | 'mysql' | 'duckdb'): string[] {
  const type = (declared: string) =>
    declared === 'TEXT' ? (engine === 'mysql' ? 'VARCHAR(255)' : 'TEXT') : declared === 'INTEGER' ? 'BIGINT' : 'DECIMAL(12, 2)';
  return TABLES.map((table) => `CREATE TABLE fv_${table} (${sample.columns[table]!.map((column) => `${column.name} ${type(column.type)}`).join(', ')})`);
}

function insertBatches(table: string, placeholder: (index: number) => string): [string, unknown[]][] {
  const rows = sample.rows[table]!;
  const width = sample.columns[table]!.length;
  const batches: [string, unknown[]][] = [];
  for (let start = 0; start < rows.length; start += 500) {
    const chunk = rows.slice(start, start + 500);
    let n = 0;
    const values = chunk.map(() => `(${Array.from({ length: width }, () => placeholder(++n)).join(', ')})`).join(', ');
    batches.push([`INSERT INTO fv_${table} VALUES ${values}`, chunk.flat().map((value) => (typeof value === 'bigint' ? Number(value) : value))]);
  }
  return batches;
}

interface Accuracy {
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
}

async function measure(engine: Engine, config: DatabaseConfig, prefix: string, withIndex = false): Promise<Record<Mode, Accuracy>> {
  const driver = await driverFor(config, true);
  await driver.connect(new AbortController().signal);
  const accuracy = {} as Record<Mode, Accuracy>;
  for (const question of QUESTIONS) {
    const options = { readOnly: true, signal: new AbortController().signal };
    const request = {
      value: question.value,
      match: question.mode === 'lower' ? ('exact' as const) : question.mode,
      limit: 100,
      ...(engine === 'mysql' || engine === 'clickhouse' ? { tablePattern: 'fv\\_%' } : {}),
    };
    const result = await findValues(
      { engine, driver, options, budgetSeconds: 60 },
      request,
      withIndex ? indexLookup(config, driver, options, request) : undefined,
    );
    if (withIndex) expect(result.coverage.indexNote).toMatch(/from the value index built/);
    expect(result.coverage.notReached).toEqual([]);
    // fv_secret is the table the PostgreSQL user may not read (tested below); fv_odd holds the awkward values, outside the sample.
    expect(result.coverage.skipped.filter((table) => !table.table.endsWith('fv_secret'))).toEqual([]);
    const sampled = result.matches.filter((match) => (TABLES as readonly string[]).includes(match.table.slice(prefix.length)));
    const got = new Set(sampled.map((match) => `${match.table.slice(prefix.length)}.${match.column}`));
    const entry = (accuracy[question.mode] ??= { truePositives: 0, falsePositives: 0, falseNegatives: 0 });
    for (const column of got) if (question.truth.has(column)) entry.truePositives++;
    for (const column of got) if (!question.truth.has(column)) entry.falsePositives++;
    for (const column of question.truth) if (!got.has(column)) entry.falseNegatives++;
    if (got.size !== question.truth.size || [...got].some((column) => !question.truth.has(column)))
      console.log(`${engine} ${question.mode} ${JSON.stringify(question.value)}: got ${[...got].join(', ')}; truth ${[...question.truth].join(', ')}`);
  }
  const line = (Object.entries(accuracy) as [Mode, Accuracy][])
    .map(([mode, a]) => {
      const recall = a.truePositives / (a.truePositives + a.falseNegatives);
      const precision = a.truePositives / Math.max(1, a.truePositives + a.falsePositives);
      return `${mode} recall ${recall.toFixed(3)} precision ${precision.toFixed(3)}`;
    })
    .join('; ');
  console.log(`find_values accuracy on ${engine}${withIndex ? ' with the value index' : ''} (seed ${SEED}, ${QUESTIONS.length / 5} values x 5 modes): ${line}`);
  return accuracy;
}

/** Builds the value index of the fv_ tables through the driver (in a QUARRY_HOME of its own), then expects find_values perfect from it. */
async function measureWithIndex(engine: Engine, config: DatabaseConfig): Promise<Awaited<ReturnType<typeof buildValueIndex>>> {
  const previous = process.env.QUARRY_HOME;
  process.env.QUARRY_HOME = makeTempDir('quarry-home-');
  try {
    const driver = await driverFor(config, true);
    await driver.connect(new AbortController().signal);
    const summary = await buildValueIndex(config, driver, { readOnly: true, signal: new AbortController().signal }, { tablePattern: 'fv\\_%' });
    expectPerfect(await measure(engine, config, 'fv_', true));
    return summary;
  } finally {
    if (previous === undefined) delete process.env.QUARRY_HOME;
    else process.env.QUARRY_HOME = previous;
  }
}

function expectPerfect(accuracy: Record<Mode, Accuracy>): void {
  for (const [mode, a] of Object.entries(accuracy)) {
    expect({ mode, falseNegatives: a.falseNegatives, falsePositives: a.falsePositives }).toEqual({ mode, falseNegatives: 0, falsePositives: 0 });
  }
}

/** Awkward values, one per row of fv_odd.label; each must be found exactly where it is, and % and _ must not act as wildcards. */
const TEN_KB = `${'long value '.repeat(930)}end`;
const ODD = [`O'Brien "the" ; --`, '100%', '100 percent', 'a_b', 'axb', 'naïve café 東京 🚀', TEN_KB, 'NUL\0inside'];

async function checkOddValues(run: (args: Record<string, unknown>) => Promise<{ output: string; metadata: Record<string, unknown> }>, nul: boolean) {
  for (const value of ODD) {
    if (value.includes('\0') && !nul) continue;
    const found = await run({ operation: 'find_values', value, table_pattern: 'fv_odd' });
    expect(found.metadata.columns, JSON.stringify(value.slice(0, 30))).toEqual([expect.stringMatching(/fv_odd\.label$/)]);
    expect(found.output).toMatch(/│ 1 of \d+ +│/);
  }
  const percent = await run({ operation: 'find_values', value: '%', match: 'contains', table_pattern: 'fv_odd' });
  expect(percent.output).toMatch(/"100%" \(1\)/);
  expect(percent.output).not.toMatch(/100 percent/);
  const underscore = await run({ operation: 'find_values', value: 'a_', match: 'prefix', table_pattern: 'fv_odd' });
  expect(underscore.output).toMatch(/"a_b" \(1\)/);
  expect(underscore.output).not.toMatch(/axb/);
}

describe('sqlite', () => {
  const path = join(dir, 'sample.db');
  let config: DatabaseConfig;

  beforeAll(() => {
    copyFileSync(SAMPLE, path);
    const db = new Database(path);
    db.exec('CREATE TABLE fv_odd (id INTEGER PRIMARY KEY, label TEXT)');
    const insert = db.prepare('INSERT INTO fv_odd (label) VALUES (?)');
    for (const value of ODD) insert.run(value);
    db.close();
    config = configsFor([`s=${path}`], dir)[0]!;
  });

  test(`generated values (seed ${SEED}): every column that holds each value, nothing else, and nothing written`, async () => {
    const before = directoryFingerprint(dir);
    expectPerfect(await measure('sqlite', config, ''));
    expect(directoryFingerprint(dir)).toBe(before);
  });

  test('quotes, % and _, NUL, unicode and 10 KB values through the tool', async () => {
    const { run } = makeRunner([config], dir);
    await checkOddValues((args) => run('sqlite', args), true);
  });

  test('ranked exact before other case before partial; numbers and dates where the value is one; a table pattern that matches nothing', async () => {
    const { run } = makeRunner([config], dir);
    const found = await run('sqlite', { operation: 'find_values', value: 'Brazil', match: 'prefix' });
    const rows = found.output.split('\n').filter((line) => line.startsWith('│ main.'));
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => / exact /.test(row))).toBe(true);
    const lower = await run('sqlite', { operation: 'find_values', value: 'brazil' });
    expect(lower.output).toMatch(/│ case-insensitive │/);
    const number = await run('sqlite', { operation: 'find_values', value: '12', table_pattern: 'products' });
    expect(number.output).toMatch(/│ main\.products +│ id +│ INTEGER │ exact +│ 1 of 120/);
    const none = await run('sqlite', { operation: 'find_values', value: 'x', table_pattern: 'nosuch%' });
    expect(none.output).toBe('No table matches "nosuch%" with a column that could hold "x" (exact, any case).');
  });

  test('a budget that runs out names the tables not searched instead of answering "nowhere"', async () => {
    const driver = await driverFor(config, true);
    await driver.connect(new AbortController().signal);
    const result = await findValues(
      { engine: 'sqlite', driver, options: { readOnly: true, signal: new AbortController().signal }, budgetSeconds: 0 },
      { value: 'Brazil', match: 'exact', limit: 20 },
    );
    expect(result.matches).toEqual([]);
    expect(result.coverage.notReached.map((table) => table.table).sort()).toEqual(['main.customers', 'main.fv_odd', 'main.orders', 'main.products']);
  });

  test('the value index: built by quarry db index, answers as the scan does (a column over the limit is left to the scan), unused after a schema change', async () => {
    const home = makeTempDir('quarry-home-');
    const previous = process.env.QUARRY_HOME;
    process.env.QUARRY_HOME = home;
    try {
      const indexed = join(dir, 'indexed.db');
      copyFileSync(SAMPLE, indexed);
      const indexedConfig = configsFor([`s=${indexed}`], dir)[0]!;
      const built = await runCli(['db', 'index', 's', '--db', `s=${indexed}`, '--max-distinct', '500'], { env: cliEnv(home) });
      expect(built.code, built.stderr).toBe(0);
      // The columns with more than 500 distinct values (counted here) keep none; no progress bar without a terminal.
      const over = TABLES.flatMap((table) =>
        sample.columns[table]!.filter((column, index) => column.type === 'TEXT' && new Set(sample.rows[table]!.map((row) => row[index])).size > 500),
      ).length;
      expect(over).toBeGreaterThan(0);
      expect(built.stdout).toContain(`Indexed s: 3 tables, 13 text columns (${over} with more distinct values than the limit, left to the scan)`);
      expect(built.stdout).toMatch(/ values from 4,720 rows in [\d.]+ s\n/);
      expect(built.stderr).toBe('');
      const path = indexPath(indexedConfig);
      expect(built.stdout).toContain(path);
      const before = directoryFingerprint(dir);
      expectPerfect(await measure('sqlite', indexedConfig, '', true));
      expect(directoryFingerprint(dir)).toBe(before);
      const db = new Database(indexed);
      db.exec(`ALTER TABLE products ADD COLUMN origin TEXT; UPDATE products SET origin = 'Brazil' WHERE id = 1`);
      db.close();
      const { run } = makeRunner([indexedConfig], dir);
      const after = await run('sqlite', { operation: 'find_values', value: 'Brazil' });
      expect(after.output).toMatch(/the value index \(built [^)]+\) is out of date: the tables or columns changed since; rebuild it with quarry db index s/);
      expect(after.metadata.columns).toContain('main.products.origin');
    } finally {
      if (previous === undefined) delete process.env.QUARRY_HOME;
      else process.env.QUARRY_HOME = previous;
    }
  });

  test('through quarry tool and in an agent run with the scripted model', async () => {
    const home = makeTempDir('quarry-home-');
    const tool = await runCli(['tool', 'sqlite', '--db', path, '--args', JSON.stringify({ operation: 'find_values', value: 'são paulo' })], {
      env: cliEnv(home),
    });
    expect(tool.code).toBe(0);
    expect(tool.stdout).toMatch(/│ main\.customers │ city +│ TEXT │ case-insensitive │ \d+ of 600 │/);
    const script = join(dir, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { text: 'Where is Brazil?', tool_calls: [{ name: 'sqlite', arguments: { operation: 'find_values', value: 'Brazil' } }] },
          { text: 'Brazil is in customers.country and orders.shipping_country.' },
        ],
      }),
    );
    const agent = await runCli(['-m', `script:${script}`, '--db', path, 'Which customers are in Brazil?'], { env: cliEnv(home), cwd: dir });
    expect(agent.code, agent.stderr).toBe(0);
    expect(agent.stderr).toMatch(/^ok sqlite find_values/m);
    expect(agent.stdout).toContain('Brazil is in customers.country');
  });
});

describe('postgres', () => {
  let admin: pg.Client;
  let config: DatabaseConfig;

  beforeAll(async () => {
    const fresh = await freshPostgresDatabase('quarry_find_values');
    admin = fresh.admin;
    for (const statement of createStatements('postgres')) await admin.query(statement);
    for (const table of TABLES) for (const [sql, params] of insertBatches(table, (n) => `$${n}`)) await admin.query(sql, params);
    await admin.query('CREATE TABLE fv_odd (id serial PRIMARY KEY, label text)');
    for (const value of ODD) if (!value.includes('\0')) await admin.query('INSERT INTO fv_odd (label) VALUES ($1)', [value]);
    await admin.query(`GRANT SELECT ON ${TABLES.map((table) => `fv_${table}`).join(', ')}, fv_odd TO quarry_test`);
    // Not granted: the test user may not read it.
    await admin.query(`CREATE TABLE fv_secret (id int, country text); INSERT INTO fv_secret VALUES (1, 'Brazil')`);
    config = configsFor([`p=${fresh.url}`], dir)[0]!;
  }, 120_000);

  afterAll(async () => {
    await admin?.end();
  });

  test(`generated values (seed ${SEED}): every column that holds each value, nothing else`, async () => {
    expectPerfect(await measure('postgres', config, 'fv_'));
  });

  test('the value index built through the driver (GROUP BY per column, read-only) answers as the scan does', async () => {
    const summary = await measureWithIndex('postgres', config);
    // fv_secret cannot be read: skipped and named, the rest indexed.
    expect(summary).toMatchObject({ tables: 5, overLimit: 0, rows: 4720 + ODD.length - 1 });
    expect(summary.skipped).toEqual([{ table: 'public.fv_secret', reason: 'permission denied for table fv_secret' }]);
  });

  test('awkward values; a NUL byte (which PostgreSQL text cannot hold) answers without an error', async () => {
    const { run } = makeRunner([config], dir);
    await checkOddValues((args) => run('postgres', args), false);
    const nul = await run('postgres', { operation: 'find_values', value: 'a\0b', table_pattern: 'fv_odd' });
    expect(nul.output).toMatch(/^No column holds "a\\u0000b"/);
  });

  test('a decimal value against integer and decimal columns: compared as numbers, no error', async () => {
    const { run } = makeRunner([config], dir);
    const price = String(sample.rows.products![0]![sample.columns.products!.findIndex((column) => column.name === 'unit_price')]);
    const found = await run('postgres', { operation: 'find_values', value: price, table_pattern: 'fv\\_products' });
    expect(found.metadata.skipped).toBe(0);
    expect(found.metadata.columns).toContain('public.fv_products.unit_price');
    // A day against date, timestamp and time-of-day columns: the day's range where it can be compared, no error.
    await admin.query(
      `CREATE TABLE fv_times (d date, ts timestamptz, t time); INSERT INTO fv_times VALUES ('2024-03-05', '2024-03-05 10:00:00+00', '10:00'); ` +
        'GRANT SELECT ON fv_times TO quarry_test',
    );
    const day = await run('postgres', { operation: 'find_values', value: '2024-03-05', table_pattern: 'fv\\_times' });
    expect(day.metadata.skipped).toBe(0);
    expect(day.metadata.columns).toEqual(expect.arrayContaining(['public.fv_times.d']));
    expect(day.metadata.columns).not.toContain('public.fv_times.t');
  });

  test('a table the user may not read is skipped and said so; nothing in the database changes', async () => {
    const { run } = makeRunner([config], dir);
    const found = await run('postgres', { operation: 'find_values', value: 'Brazil' });
    expect(found.output).toMatch(/│ public\.fv_customers │ country +│ text +│ exact/);
    expect(found.output).toMatch(/Skipped 1 table that could not be read: public\.fv_secret \(permission denied for table fv_secret\)/);
    const { rows } = await admin.query('SELECT count(*)::int AS n FROM fv_secret');
    expect(rows[0].n).toBe(1);
  });
});

describe('mariadb', () => {
  let admin: mysql.Connection;
  let config: DatabaseConfig;

  beforeAll(async () => {
    admin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
    await admin.query(`DROP TABLE IF EXISTS ${TABLES.map((table) => `fv_${table}`).join(', ')}, fv_odd`);
    for (const statement of createStatements('mysql')) await admin.query(`${statement} CHARACTER SET utf8mb4`);
    for (const table of TABLES) for (const [sql, params] of insertBatches(table, () => '?')) await admin.query(sql, params);
    await admin.query('CREATE TABLE fv_odd (id INT AUTO_INCREMENT PRIMARY KEY, label TEXT) CHARACTER SET utf8mb4');
    for (const value of ODD) await admin.query('INSERT INTO fv_odd (label) VALUES (?)', [value]);
    config = configsFor([`m=${requireEnv('QUARRY_TEST_MYSQL_URL')}`], dir)[0]!;
  }, 120_000);

  afterAll(async () => {
    await admin?.query(`DROP TABLE IF EXISTS ${TABLES.map((table) => `fv_${table}`).join(', ')}, fv_odd`);
    await admin?.end();
  });

  test(`generated values (seed ${SEED}): every column that holds each value, nothing else (case told apart despite the collation)`, async () => {
    expectPerfect(await measure('mysql', config, 'fv_'));
    const { run } = makeRunner([config], dir);
    const lower = await run('mysql', { operation: 'find_values', value: 'brazil', table_pattern: 'fv\\_customers' });
    expect(lower.output).toMatch(/│ case-insensitive │/);
  });

  test('quotes, % and _, NUL, unicode and 10 KB values', async () => {
    const { run } = makeRunner([config], dir);
    await checkOddValues((args) => run('mysql', args), true);
  });
});

describe('duckdb', () => {
  let config: DatabaseConfig;

  beforeAll(async () => {
    const path = join(dir, 'sample.duckdb');
    const instance = await DuckDBInstance.create(path);
    const connection = await instance.connect();
    for (const statement of createStatements('duckdb')) await connection.run(statement);
    for (const table of TABLES) for (const [sql, params] of insertBatches(table, (n) => `$${n}`)) await connection.run(sql, params as never);
    connection.closeSync();
    instance.closeSync();
    config = configsFor([`d=${path}`], dir)[0]!;
  }, 120_000);

  test(`generated values (seed ${SEED}): every column that holds each value, nothing else`, async () => {
    expectPerfect(await measure('duckdb', config, 'fv_'));
  });
});

const clickhouseUrl = process.env.QUARRY_TEST_CLICKHOUSE_URL;

describe.skipIf(!clickhouseUrl)(`clickhouse${clickhouseUrl ? '' : ' (skipped: clickhouse-server is not installed)'}`, () => {
  let config: DatabaseConfig;

  const admin = clickhouseAdmin;

  beforeAll(async () => {
    await admin('DROP DATABASE IF EXISTS quarry_fv');
    await admin('CREATE DATABASE quarry_fv');
    const type = (declared: string) => (declared === 'TEXT' ? 'Nullable(String)' : declared === 'INTEGER' ? 'Int64' : 'Decimal(12, 2)');
    for (const table of TABLES) {
      const columns = sample.columns[table]!;
      await admin(
        `CREATE TABLE quarry_fv.fv_${table} (${columns.map((column) => `${column.name} ${type(column.type)}`).join(', ')}) ENGINE = MergeTree ORDER BY id`,
      );
      const rows = sample.rows[table]!.map((row) =>
        JSON.stringify(Object.fromEntries(columns.map((column, index) => [column.name, typeof row[index] === 'bigint' ? Number(row[index]) : row[index]]))),
      );
      await admin(`INSERT INTO quarry_fv.fv_${table} FORMAT JSONEachRow`, rows.join('\n'));
    }
    await admin('CREATE TABLE quarry_fv.fv_odd (id UInt64, label String) ENGINE = MergeTree ORDER BY id');
    await admin('INSERT INTO quarry_fv.fv_odd FORMAT JSONEachRow', ODD.map((label, id) => JSON.stringify({ id, label })).join('\n'));
    config = configsFor([`c=${clickhouseUrl!.replace(/\/default$/, '/quarry_fv')}`], dir)[0]!;
  }, 120_000);

  afterAll(async () => {
    await admin('DROP DATABASE IF EXISTS quarry_fv');
  });

  test('generated values: every column that holds each value, nothing else', async () => {
    expectPerfect(await measure('clickhouse', config, 'fv_'));
  });

  test('the value index built through the driver (GROUP BY per column, readonly=1) answers as the scan does', async () => {
    const summary = await measureWithIndex('clickhouse', config);
    expect(summary).toMatchObject({ tables: 4, overLimit: 0, rows: 4720 + ODD.length, skipped: [] });
  });

  test('quotes, % and _, NUL, unicode and 10 KB values through the tool; nothing written', async () => {
    const before = await admin("SELECT name, total_rows FROM system.tables WHERE database = 'quarry_fv' ORDER BY name FORMAT TSV").catch(() =>
      admin("SELECT table, sum(rows) FROM system.parts WHERE database = 'quarry_fv' AND active GROUP BY table ORDER BY table FORMAT TSV"),
    );
    const { run } = makeRunner([config], dir);
    await checkOddValues((args) => run('clickhouse', args), true);
    const upper = await run('clickhouse', { operation: 'find_values', value: 'SÃO PAULO', table_pattern: 'fv\\_customers' });
    expect(upper.output).toMatch(/│ quarry_fv\.fv_customers │ city +│ Nullable\(String\) │ case-insensitive │ \d+ of 600 │/);
    const number = await run('clickhouse', { operation: 'find_values', value: '12', table_pattern: 'fv\\_products' });
    expect(number.output).toMatch(/│ quarry_fv\.fv_products +│ id +│ Int64 +│ exact +│ 1 of 120/);
    const after = await admin("SELECT name, total_rows FROM system.tables WHERE database = 'quarry_fv' ORDER BY name FORMAT TSV").catch(() =>
      admin("SELECT table, sum(rows) FROM system.parts WHERE database = 'quarry_fv' AND active GROUP BY table ORDER BY table FORMAT TSV"),
    );
    expect(after).toBe(before);
  });

  test('accents folded, enums as text, decimals and integers as numbers, days against Date and DateTime: found, nothing skipped', async () => {
    await admin(
      "CREATE TABLE quarry_fv.fv_kinds (label String, e Enum8('Alpha' = 1, 'beta' = 2), price Decimal(12, 2), n Int64, d Date, ts DateTime) ENGINE = MergeTree ORDER BY n",
    );
    await admin(
      "INSERT INTO quarry_fv.fv_kinds VALUES ('ÉCOLE', 'Alpha', 12.50, 12, '2024-03-05', '2024-03-05 10:00:00'), ('x', 'beta', 7, 7, '2024-03-06', '2024-03-06 00:00:00')",
    );
    const { run } = makeRunner([config], dir);
    const cases: [string, string[]][] = [
      ['école', ['quarry_fv.fv_kinds.label']],
      ['alpha', ['quarry_fv.fv_kinds.e']],
      ['12.5', ['quarry_fv.fv_kinds.price']],
      ['12', ['quarry_fv.fv_kinds.n']],
      ['7', ['quarry_fv.fv_kinds.n', 'quarry_fv.fv_kinds.price']],
      ['2024-03-05', ['quarry_fv.fv_kinds.d', 'quarry_fv.fv_kinds.ts']],
      ['2024-03-05 10:00', ['quarry_fv.fv_kinds.ts']],
    ];
    for (const [value, columns] of cases) {
      const found = await run('clickhouse', { operation: 'find_values', value, table_pattern: 'fv\\_kinds' });
      expect(found.metadata.skipped, `${value}: ${found.output}`).toBe(0);
      expect((found.metadata.columns as string[]).sort(), value).toEqual(columns);
    }
    const folded = await run('clickhouse', { operation: 'find_values', value: 'école', table_pattern: 'fv\\_kinds' });
    expect(folded.output).toMatch(/│ label +│ String +│ case-insensitive │ 1 of 2 /);
  });
});

/**
 * Oracle and Vertica: no server can run here, so recording connections answer the catalogue with
 * one table (a text, a number and a date column) and the scan with counts; the test checks what
 * the real drivers send: the value only as a bind, each statement inside the read-only
 * transaction and rolled back.
 */
function catalogueAnswer(sql: string, schema: string, types: [string, string, string]): unknown[][] {
  if (/all_tab_columns|v_catalog\.columns/.test(sql))
    return [
      ['table', schema, 'CUSTOMERS', null, null],
      ['column', schema, 'CUSTOMERS', 'COUNTRY', types[0]],
      ['column', schema, 'CUSTOMERS', 'ID', types[1]],
      ['column', schema, 'CUSTOMERS', 'SIGNED_UP', types[2]],
    ];
  if (sql.startsWith('SELECT COUNT(*), SUM')) return [['600', '0', '72', '72']];
  if (sql.startsWith('SELECT COUNT(DISTINCT')) return [['8']];
  return [];
}

describe('oracle and vertica (recording connections)', () => {
  const request = { value: "Bra'zil", match: 'exact' as const, limit: 20 };

  test('oracle: the value is a bind; each statement runs in SET TRANSACTION READ ONLY and is rolled back', async () => {
    const log: string[] = [];
    const binds: unknown[][] = [];
    const connection = recordingOracleConnection(log, async (sql: string, bound?: unknown[]) => {
      log.push(sql);
      if (bound) binds.push(bound);
      return { rows: catalogueAnswer(sql, 'SCOTT', ['VARCHAR2', 'NUMBER', 'DATE']) };
    });
    const [config] = loadDatabaseConfigs({ dbFlags: ['ora=oracle://scott:tiger@127.0.0.1:1/XE'], env: {}, cwd: dir });
    const driver = new OracleDriver(config!, true, async () => connection);
    await driver.connect(new AbortController().signal);
    const setup = log.length;
    const result = await findValues(
      { engine: 'oracle', driver, options: { readOnly: true, signal: new AbortController().signal }, budgetSeconds: 10 },
      request,
    );
    const sent = log.slice(setup);
    expect(sent.filter((_, i) => i % 3 === 0).every((sql) => sql === ORACLE_BEGIN_READ_ONLY)).toBe(true);
    expect(sent.filter((_, i) => i % 3 === 2).every((sql) => sql === 'ROLLBACK')).toBe(true);
    expect(sent.join('\n')).not.toContain('zil');
    // The number and date columns are not compared with a text value; the text column twice (exact, then any case).
    expect(sent[4]).toBe(
      'SELECT COUNT(*), SUM(CASE WHEN "COUNTRY" = :1 THEN 1 ELSE 0 END), SUM(CASE WHEN LOWER("COUNTRY") = LOWER(:2) THEN 1 ELSE 0 END) FROM "SCOTT"."CUSTOMERS"',
    );
    expect(binds).toContainEqual(["Bra'zil", "bra'zil"]);
    expect(formatFindValues(result, request, 10)).toMatch(/│ SCOTT\.CUSTOMERS │ COUNTRY │ VARCHAR2 │ case-insensitive │ 72 of 600 │ 8 +│/);
    // A date: the date column, compared as a range of timestamps.
    log.length = 0;
    await findValues(
      { engine: 'oracle', driver, options: { readOnly: true, signal: new AbortController().signal }, budgetSeconds: 10 },
      { ...request, value: '2024-03-05' },
    );
    expect(log.join('\n')).toContain(`"SIGNED_UP" >= TO_TIMESTAMP(:3, 'YYYY-MM-DD HH24:MI:SS') AND "SIGNED_UP" < TO_TIMESTAMP(:4, 'YYYY-MM-DD HH24:MI:SS')`);
    expect(binds.at(-2)).toEqual(['2024-03-05', '2024-03-05', '2024-03-05 00:00:00', '2024-03-06 00:00:00']);
  });

  test('vertica: the same inside START TRANSACTION READ ONLY ... ROLLBACK', async () => {
    const log: string[] = [];
    const values: unknown[][] = [];
    class Client extends EventEmitter {
      processID = 1;
      async connect(): Promise<void> {}
      async end(): Promise<void> {}
      cancel(): void {}
      query(query: string | { text: string; values?: unknown[] }): Promise<unknown> {
        const text = typeof query === 'string' ? query : query.text;
        log.push(text);
        if (typeof query !== 'string' && query.values) values.push(query.values);
        return Promise.resolve({ rows: catalogueAnswer(text, 'public', ['Varchar(80)', 'Int', 'Date']), fields: [] });
      }
    }
    const [config] = loadDatabaseConfigs({ dbFlags: ['vdb=vertica://u:pw@127.0.0.1:1/vdb'], env: {}, cwd: dir });
    const driver = new VerticaDriver(config!, true, () => new Client() as never);
    await driver.connect(new AbortController().signal);
    const setup = log.length;
    const result = await findValues(
      { engine: 'vertica', driver, options: { readOnly: true, signal: new AbortController().signal }, budgetSeconds: 10 },
      { ...request, match: 'prefix' },
    );
    const sent = log.slice(setup);
    expect(sent.filter((_, i) => i % 3 === 0).every((sql) => sql === VERTICA_BEGIN_READ_ONLY)).toBe(true);
    expect(sent.filter((_, i) => i % 3 === 2).every((sql) => sql === 'ROLLBACK')).toBe(true);
    expect(sent.join('\n')).not.toContain('zil');
    expect(sent[4]).toContain('SUM(CASE WHEN INSTR(LOWER("COUNTRY"), LOWER(?)) = 1 THEN 1 ELSE 0 END) FROM "public"."CUSTOMERS"');
    expect(values[1]).toEqual(["Bra'zil", "bra'zil", "bra'zil"]);
    expect(result.matches.map((match) => `${match.schema}.${match.table}.${match.column}`)).toEqual(['public.CUSTOMERS.COUNTRY']);
  });
});
