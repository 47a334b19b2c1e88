import { DuckDBInstance } from '@duckdb/node-api';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { spellerFor } from '../../../src/tools/database/catalog/names.js';
import { cliEnv, runCli } from '../../support/agent-cli.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, directoryFingerprint, freshPostgresDatabase, makeRunner, requireEnv } from './helpers.js';
import { seededRandom, testSeed } from '../../support/random.js';

/**
 * Name suggestions (docs/guide/databases.md "Knowing the data"), measured on a generated typo set: every table and
 * column name of two real schemas (the sample database in fixtures/ and a Chinook-like one in
 * CamelCase) misspelt five ways (a dropped letter, two letters swapped, snake_case against
 * CamelCase, singular against plural, another case), seeded; each statement goes through the
 * real tool on the real engine, and the answer must be among the engine error's suggestions.
 */

const SEED = testSeed(20261127);

type Schema = Record<string, string[]>;

/** fixtures/sample.db's tables (read from the file in beforeAll) and a Chinook-like schema. */
let SAMPLE: Schema = {};
const CHINOOK: Schema = {
  Artist: ['ArtistId', 'Name'],
  Album: ['AlbumId', 'Title', 'ArtistId'],
  Genre: ['GenreId', 'Name'],
  MediaType: ['MediaTypeId', 'Name'],
  Track: ['TrackId', 'Name', 'AlbumId', 'MediaTypeId', 'GenreId', 'Composer', 'Milliseconds', 'Bytes', 'UnitPrice'],
  Playlist: ['PlaylistId', 'Name'],
  PlaylistTrack: ['PlaylistId', 'TrackId'],
  Employee: ['EmployeeId', 'LastName', 'FirstName', 'Title', 'ReportsTo', 'BirthDate', 'HireDate', 'Address', 'City', 'Country', 'Phone', 'Email'],
  Customer: ['CustomerId', 'FirstName', 'LastName', 'Company', 'Address', 'City', 'State', 'Country', 'PostalCode', 'Phone', 'Email', 'SupportRepId'],
  Invoice: ['InvoiceId', 'CustomerId', 'InvoiceDate', 'BillingAddress', 'BillingCity', 'BillingCountry', 'BillingPostalCode', 'Total'],
  InvoiceLine: ['InvoiceLineId', 'InvoiceId', 'TrackId', 'UnitPrice', 'Quantity'],
};

const VARIANTS = ['dropped letter', 'transposition', 'snake/Camel', 'plural', 'wrong case'] as const;
type Variant = (typeof VARIANTS)[number];
/** Misspellings that are SQL keywords are syntax errors, not unknown names (orders -> order). */
const KEYWORDS = new Set(['order', 'group', 'select', 'table', 'user', 'from', 'where', 'limit', 'key', 'index', 'state', 'name', 'title', 'total']);

function snakeOrCamel(name: string): string {
  if (name.includes('_')) return name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()).replace(/^./, (first) => first.toUpperCase());
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

function misspell(name: string, variant: Variant, random: () => number): string {
  switch (variant) {
    case 'dropped letter': {
      const at = 1 + Math.floor(random() * (name.length - 1));
      return name.slice(0, at) + name.slice(at + 1);
    }
    case 'transposition': {
      if (name.length < 3) return name;
      const at = 1 + Math.floor(random() * (name.length - 2));
      return name.slice(0, at) + name[at + 1] + name[at] + name.slice(at + 2);
    }
    case 'snake/Camel':
      return snakeOrCamel(name);
    case 'plural':
      return name.endsWith('s') ? name.slice(0, -1) : name.endsWith('y') ? `${name.slice(0, -1)}ies` : `${name}s`;
    case 'wrong case':
      return name === name.toLowerCase() ? name.toUpperCase() : name.toLowerCase();
  }
}

interface Typo {
  schema: 'sample' | 'chinook';
  kind: 'table' | 'column';
  variant: Variant;
  table: string;
  written: string;
  /** The suggestion that is right: the table, or table.column. */
  expected: string;
  /** For a column: another table of the schema, joined in the statement's second form. */
  other?: string;
}

/** Every name of both schemas, each misspelt every way (seeded), less the misspellings that are names too. */
function typoSet(random: () => number): Typo[] {
  const typos: Typo[] = [];
  for (const [schemaName, schema] of [
    ['sample', SAMPLE],
    ['chinook', CHINOOK],
  ] as const) {
    const names = new Set(Object.entries(schema).flatMap(([table, columns]) => [table, ...columns].map((name) => name.toLowerCase())));
    const seen = new Set<string>();
    for (const [table, columns] of Object.entries(schema)) {
      for (const variant of VARIANTS) {
        const written = misspell(table, variant, random);
        if (
          written !== table &&
          (written.toLowerCase() === table.toLowerCase() || !names.has(written.toLowerCase())) &&
          !KEYWORDS.has(written.toLowerCase()) &&
          /^[A-Za-z_][A-Za-z0-9_]*$/.test(written)
        )
          typos.push({ schema: schemaName, kind: 'table', variant, table, written, expected: table });
        for (const column of columns) {
          const key = `${column}/${variant}`;
          if (seen.has(key)) continue;
          seen.add(key);
          const wrong = misspell(column, variant, random);
          if (
            wrong === column ||
            (wrong.toLowerCase() !== column.toLowerCase() && names.has(wrong.toLowerCase())) ||
            KEYWORDS.has(wrong.toLowerCase()) ||
            !/^[A-Za-z_][A-Za-z0-9_]*$/.test(wrong)
          )
            continue;
          const tables = Object.keys(schema);
          const other = tables[(tables.indexOf(table) + 1) % tables.length]!;
          typos.push({ schema: schemaName, kind: 'column', variant, table, written: wrong, expected: `${table}.${column}`, other });
        }
      }
    }
  }
  return typos;
}

function ddl(schema: Schema, quote: (name: string) => string): string[] {
  return Object.entries(schema).map(
    ([table, columns]) =>
      `CREATE TABLE ${quote(table)} (${columns.map((column) => `${quote(column)} ${/Id$|^id$|_id$/.test(column) ? 'INT' : 'VARCHAR(40)'}`).join(', ')})`,
  );
}

const dir = makeTempDir();
const dq = (name: string) => `"${name}"`;
const bq = (name: string) => `\`${name}\``;

interface EngineUnderTest {
  engine: 'sqlite' | 'postgres' | 'mysql' | 'duckdb';
  /** The tool's database alias for each schema. */
  runner: ReturnType<typeof makeRunner>;
  alias: Record<'sample' | 'chinook', string>;
  quote: (name: string) => string;
}

const engines: EngineUnderTest[] = [];
let myAdmin: mysql.Connection | null = null;
let filesBefore = '';

beforeAll(async () => {
  const sample = new Database(join(process.cwd(), 'fixtures/sample.db'), { readonly: true });
  const tables = sample.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name`).pluck().all() as string[];
  SAMPLE = Object.fromEntries(tables.map((table) => [table, sample.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]]));
  sample.close();

  // SQLite: the fixture itself (copied) and a Chinook-like file.
  copyFileSync(join(process.cwd(), 'fixtures/sample.db'), join(dir, 'sample.db'));
  const chinook = new Database(join(dir, 'chinook.db'));
  for (const statement of ddl(CHINOOK, dq)) chinook.exec(statement);
  chinook.close();
  engines.push({
    engine: 'sqlite',
    runner: makeRunner(configsFor([`sample=${join(dir, 'sample.db')}`, `chinook=${join(dir, 'chinook.db')}`], dir), dir),
    alias: { sample: 'sample', chinook: 'chinook' },
    quote: dq,
  });

  // DuckDB: both schemas in one file each.
  for (const [name, schema] of [
    ['sample', SAMPLE],
    ['chinook', CHINOOK],
  ] as const) {
    const instance = await DuckDBInstance.create(join(dir, `${name}.duckdb`));
    const connection = await instance.connect();
    for (const statement of ddl(schema, dq)) await connection.run(statement);
    connection.closeSync();
    instance.closeSync();
  }
  filesBefore = directoryFingerprint(dir);
  engines.push({
    engine: 'duckdb',
    runner: makeRunner(configsFor([`sample=${join(dir, 'sample.duckdb')}`, `chinook=${join(dir, 'chinook.duckdb')}`], dir), dir),
    alias: { sample: 'sample', chinook: 'chinook' },
    quote: dq,
  });

  // PostgreSQL: Chinook with quoted CamelCase names, as its PostgreSQL port has them.
  const pgSample = await freshPostgresDatabase('quarry_names_sample');
  for (const statement of ddl(SAMPLE, dq)) await pgSample.admin.query(statement);
  await pgSample.admin.query('GRANT SELECT ON ALL TABLES IN SCHEMA public TO quarry_test');
  await pgSample.admin.end();
  const pgChinook = await freshPostgresDatabase('quarry_names_chinook');
  for (const statement of ddl(CHINOOK, dq)) await pgChinook.admin.query(statement);
  await pgChinook.admin.query('GRANT SELECT ON ALL TABLES IN SCHEMA public TO quarry_test');
  await pgChinook.admin.end();
  engines.push({
    engine: 'postgres',
    runner: makeRunner(configsFor([`sample=${pgSample.url}`, `chinook=${pgChinook.url}`], dir), dir),
    alias: { sample: 'sample', chinook: 'chinook' },
    quote: dq,
  });

  // MariaDB: a database per schema, readable by the test user.
  myAdmin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  const myUrls: Record<string, string> = {};
  for (const [name, schema] of [
    ['sample', SAMPLE],
    ['chinook', CHINOOK],
  ] as const) {
    const database = `quarry_names_${name}`;
    await myAdmin.query(`DROP DATABASE IF EXISTS ${database}; CREATE DATABASE ${database}`);
    for (const statement of ddl(schema, bq)) await myAdmin.query(`USE ${database}; ${statement}`);
    await myAdmin.query(`GRANT SELECT ON ${database}.* TO 'quarry_test'@'127.0.0.1'`);
    const url = new URL(requireEnv('QUARRY_TEST_MYSQL_URL'));
    url.pathname = `/${database}`;
    myUrls[name] = url.toString();
  }
  engines.push({
    engine: 'mysql',
    runner: makeRunner(configsFor([`sample=${myUrls.sample}`, `chinook=${myUrls.chinook}`], dir), dir),
    alias: { sample: 'sample', chinook: 'chinook' },
    quote: bq,
  });
}, 120_000);

afterAll(async () => {
  // Other test files list the test user's tables: leave no databases of this file behind.
  await myAdmin?.query('DROP DATABASE IF EXISTS quarry_names_sample; DROP DATABASE IF EXISTS quarry_names_chinook');
  await myAdmin?.end();
});

function suggestionsIn(output: string): string[] {
  const list = /; did you mean (.+?)\?/.exec(output)?.[1];
  if (!list) return [];
  return list.split(/, | or /);
}

describe('name suggestions on a generated typo set, through the real engines', () => {
  test(`top-1 and top-3 accuracy per engine (seed ${SEED})`, async () => {
    const typos = typoSet(seededRandom(SEED));
    expect(typos.length).toBeGreaterThan(200);
    const report: string[] = [];
    const misses: string[] = [];
    for (const { engine, runner, alias, quote } of engines) {
      let asked = 0;
      let top1 = 0;
      let top3 = 0;
      let accepted = 0;
      const perVariant = new Map<string, [number, number]>();
      // Each column typo twice: alone with its table, and qualified by an alias in a join with another table.
      const statements = typos.flatMap((typo) =>
        typo.kind === 'table'
          ? [{ typo, sql: `SELECT * FROM ${typo.written}` }]
          : [
              { typo, sql: `SELECT ${typo.written} FROM ${quote(typo.table)}` },
              { typo, sql: `SELECT t.${typo.written} FROM ${quote(typo.other!)} o JOIN ${quote(typo.table)} t ON 1 = 1` },
            ],
      );
      for (const { typo, sql } of statements) {
        const result = await runner.run(engine, { database: alias[typo.schema], operation: 'query', sql });
        // Names in another case that the engine resolves itself are not errors.
        if (result.ok) {
          accepted++;
          continue;
        }
        asked++;
        const suggestions = suggestionsIn(result.output);
        // PostgreSQL needs CamelCase names quoted, and the suggestions say so.
        const spell = spellerFor(engine);
        const at = suggestions.indexOf(typo.expected.split('.').map(spell).join('.'));
        const counts = perVariant.get(typo.variant) ?? [0, 0];
        counts[0]++;
        if (at === 0) top1++;
        if (at >= 0 && at < 3) {
          top3++;
          counts[1]++;
        } else misses.push(`${engine} ${typo.variant}: ${sql} -> ${result.output.split('\n')[0]} (expected ${typo.expected})`);
        perVariant.set(typo.variant, counts);
      }
      const percent = (value: number) => `${((100 * value) / Math.max(asked, 1)).toFixed(1)}%`;
      report.push(
        `${engine.padEnd(8)} ${asked} rejected (${accepted} accepted by the engine): top-1 ${percent(top1)}, top-3 ${percent(top3)}; ` +
          [...perVariant].map(([variant, [n, ok]]) => `${variant} ${ok}/${n}`).join(', '),
      );
      expect(asked, `${engine} rejected no typo`).toBeGreaterThan(100);
      expect(top3 / asked, `${engine} top-3 (seed ${SEED}); misses:\n${misses.join('\n')}`).toBeGreaterThanOrEqual(0.95);
      expect(top1 / asked, `${engine} top-1 (seed ${SEED})`).toBeGreaterThanOrEqual(0.8);
    }
    console.log(`name suggestions (seed ${SEED}, ${typos.length} typos):\n${report.join('\n')}\nmisses:\n${misses.slice(0, 40).join('\n')}`);
    // Nothing was written: the SQLite and DuckDB files are byte for byte as before.
    expect(directoryFingerprint(dir)).toBe(filesBefore);
  }, 300_000);
});

describe('what the error says', () => {
  const run = (engine: EngineUnderTest['engine'], args: Record<string, unknown>) => {
    const target = engines.find((candidate) => candidate.engine === engine)!;
    return target.runner.run(engine, { database: 'chinook', ...args });
  };

  test("PostgreSQL's own HINT is kept after the suggestions", async () => {
    const result = await run('postgres', { operation: 'query', sql: 'SELECT t."name" FROM "Track" t' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(
      /^postgres error \(chinook\): column t\.name does not exist; did you mean "Track"\."Name"\?\nHINT: Perhaps you meant to reference the column "t\.Name"\.$/,
    );
  });

  test('an unknown function gets functions that exist, on each engine that lists them', async () => {
    for (const engine of ['sqlite', 'postgres', 'duckdb'] as const) {
      const result = await run(engine, { operation: 'query', sql: 'SELECT lowr("Name") FROM "Artist"' });
      expect(result.ok, engine).toBe(false);
      expect(suggestionsIn(result.output), `${engine}: ${result.output}`).toContain('lower');
    }
  });

  test('describe, sample and profile resolve names in any case where the engine does, and suggest on a miss', async () => {
    for (const engine of ['sqlite', 'duckdb'] as const) {
      for (const operation of ['describe', 'sample', 'profile']) {
        const found = await run(engine, { operation, table_name: 'invoiceline' });
        expect(found.ok, `${engine} ${operation}: ${found.output}`).toBe(true);
        expect(found.output).toContain('InvoiceLineId');
      }
    }
    for (const { engine } of engines) {
      for (const operation of ['describe', 'sample', 'profile']) {
        const missed = await run(engine, { operation, table_name: 'InvoiceLines' });
        expect(missed.ok).toBe(false);
        expect(missed.output, `${engine} ${operation}`).toMatch(/^no such table or view: InvoiceLines; .*; did you mean "?InvoiceLine"?(,| or|\?)/);
      }
    }
  });
});

describe('case on the server engines', () => {
  test('PostgreSQL folds an unquoted name as its SQL does (a miss suggests the quoted CamelCase table); MariaDB resolves as its lower_case_table_names says', async () => {
    const pg = engines.find((candidate) => candidate.engine === 'postgres')!;
    const folded = await pg.runner.run('postgres', { database: 'chinook', operation: 'describe', table_name: 'invoiceline' });
    expect(folded.output).toMatch(/^no such table or view: invoiceline; .*; did you mean "InvoiceLine"(\?| or)/);
    const quoted = await pg.runner.run('postgres', { database: 'chinook', operation: 'sample', table_name: '"InvoiceLine"' });
    expect(quoted.ok, quoted.output).toBe(true);
    const my = engines.find((candidate) => candidate.engine === 'mysql')!;
    const [[setting]] = (await myAdmin!.query('SELECT @@lower_case_table_names AS v')) as unknown as [[{ v: number }]];
    for (const operation of ['describe', 'sample', 'profile']) {
      const result = await my.runner.run('mysql', { database: 'chinook', operation, table_name: 'invoiceline' });
      if (setting.v === 0) expect(result.output, operation).toMatch(/^no such table or view: invoiceline; .*; did you mean InvoiceLine(\?| or)/);
      else expect(result.ok, `${operation}: ${result.output}`).toBe(true);
    }
  });
});

describe('through quarry tool', () => {
  test('SQLite describe, sample and profile take a table name in any case, as SQLite does; a miss suggests and exits 1', async () => {
    const home = makeTempDir('quarry-home-');
    const tool = (args: Record<string, unknown>) =>
      runCli(['tool', 'sqlite', '--db', join(dir, 'sample.db'), '--args', JSON.stringify(args)], { env: cliEnv(home) });
    const described = await tool({ operation: 'describe', table_name: 'Order_Items' });
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/^main\.order_items: 6 columns\n/);
    const sampled = await tool({ operation: 'sample', table_name: 'MAIN.CUSTOMERS', row_limit: 2 });
    expect(sampled.code, sampled.stderr).toBe(0);
    expect(sampled.stdout).toMatch(/\(2 rows: /);
    const profiled = await tool({ operation: 'profile', table_name: 'Products', columns: ['category'] });
    expect(profiled.code, profiled.stderr).toBe(0);
    expect(profiled.stdout).toMatch(/^Profile of main\.products: 1 of 6 columns/);
    const missed = await tool({ operation: 'describe', table_name: 'OrderItem' });
    expect(missed.code).toBe(1);
    expect(missed.stderr).toBe('no such table or view: OrderItem; use operation list_tables to see the tables; did you mean order_items or orders?\n');
    expect(directoryFingerprint(dir)).toBe(filesBefore);
  });
});
