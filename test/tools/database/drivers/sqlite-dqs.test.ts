import Database from 'better-sqlite3';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { SqliteProcessDriver } from '../../../../src/tools/database/drivers/sqlite-process.js';
import { checkReadOnlyStatement } from '../../../../src/tools/database/sql/statement-check.js';
import { makeTempDir } from '../../../support/context.js';
import { configsFor, directoryFingerprint, makeRunner } from '../helpers.js';

/**
 * Double-quoted string literals (sqlite-dqs.ts) against the reference: the `sqlite3` program,
 * which accepts them. Every statement goes through the read-only statement check first.
 */

const hasSqlite3 = spawnSync('sqlite3', ['-version']).status === 0;
let dir: string;
let path: string;

beforeAll(() => {
  dir = makeTempDir();
  path = join(dir, 'world.db');
  const db = new Database(path);
  db.exec(`
    CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT, continent TEXT, GovernmentForm TEXT, population INTEGER);
    CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT, countrycode TEXT, population INTEGER);
    CREATE TABLE "Republic" (a INTEGER);
    INSERT INTO country VALUES ('FRA', 'France', 'Europe', 'Republic', 67), ('NLD', 'Netherlands', 'Europe', 'Constitutional Monarchy', 17),
      ('ABW', 'Aruba', 'North America', 'Nonmetropolitan Territory of The Netherlands', 0), ('USA', 'United States', 'North America', 'Federal Republic', 331),
      ('BRA', 'Brazil', 'South America', 'Federal Republic', 214), ('it''s', 'Quote "land"', 'Nowhere', 'a"b', NULL);
    INSERT INTO city VALUES (1, 'Paris', 'FRA', 2), (2, 'Amsterdam', 'NLD', 1), (3, 'Oranjestad', 'ABW', 0), (4, 'Lyon', 'FRA', 1), (5, 'name', 'USA', 9);
    INSERT INTO "Republic" VALUES (7);
  `);
  db.close();
});

/** What the sqlite3 program prints for each statement: rows as a|b|c, NULL as NULL, or ERROR. */
function reference(statements: string[]): string[] {
  const script = ['.nullvalue NULL', ...statements.flatMap((sql) => [`${sql};`, "SELECT '@@end@@';"])].join('\n');
  const out = spawnSync('sqlite3', ['-batch', path], { input: script, encoding: 'utf8' });
  const chunks = `${out.stdout}`.split('@@end@@\n');
  // Errors go to stderr in order; a statement whose chunk is empty and that errored is marked by the stderr count.
  const errors = `${out.stderr}`.split('\n').filter((line) => /error/i.test(line));
  return statements.map((_sql, index) => {
    const chunk = chunks[index] ?? '';
    const failed = errors.some((line) => line.includes(`line ${index * 2 + 2}:`));
    return failed ? 'ERROR' : chunk;
  });
}

async function quarry(driver: SqliteProcessDriver, sql: string): Promise<string> {
  try {
    const checked = checkReadOnlyStatement(sql, 'sqlite').sql;
    const result = await driver.query(checked, 1000, { readOnly: true, signal: new AbortController().signal });
    return result.rows.map((row) => `${row.map((value) => (value === null ? 'NULL' : String(value))).join('|')}\n`).join('');
  } catch {
    return 'ERROR';
  }
}

describe.runIf(hasSqlite3)('SQLite double-quoted string literals, compared with the sqlite3 program', () => {
  test('Spider-style statements give the rows sqlite3 gives, through the statement check', async () => {
    const statements = [
      'SELECT name FROM country WHERE GovernmentForm = "Republic"',
      'SELECT count(*) FROM country WHERE continent = "Europe" AND GovernmentForm != "Republic"',
      'SELECT name FROM country WHERE GovernmentForm LIKE "%Republic%" ORDER BY name',
      'SELECT T1.name FROM city AS T1 JOIN country AS T2 ON T1.countrycode = T2.code WHERE T2.name = "France" ORDER BY T1.name',
      'SELECT "name", "population" FROM city ORDER BY id',
      'SELECT name FROM city WHERE name = "name"',
      'SELECT "name" FROM city WHERE name IN ("Paris", "Lyon", "nowhere") ORDER BY 1',
      'SELECT strftime("%Y", "2024-03-04"), "Republic", "it\'s", "a""b"',
      'SELECT code FROM country WHERE GovernmentForm = "a""b"',
      'SELECT a FROM "Republic"',
      'SELECT (SELECT "a" FROM "Republic"), "a" FROM city WHERE id = 1',
      'SELECT name AS "label" FROM city ORDER BY "label" LIMIT 2',
      'SELECT city.name, "zz" FROM city WHERE city.id < 3 ORDER BY 1',
      'SELECT city."zz" FROM city',
      'SELECT "nosuch" FROM nosuchtable',
      'SELECT count(*) FROM country GROUP BY "continent" ORDER BY 1',
      'SELECT continent, count(*) FROM country GROUP BY continent HAVING continent <> "Europe" ORDER BY 1',
      'SELECT max(population) FROM city WHERE countrycode = "FRA"',
      'WITH x AS (SELECT "Europe" AS c) SELECT name FROM country, x WHERE continent = x.c ORDER BY name',
      "SELECT name FROM country WHERE GovernmentForm = 'Republic'",
    ];
    const [config] = configsFor([path], dir);
    const driver = new SqliteProcessDriver(config!, true);
    await driver.connect();
    const expected = reference(statements);
    for (const [index, sql] of statements.entries()) {
      expect(await quarry(driver, sql), sql).toBe(expected[index]);
    }
    await driver.close();
    // The plain Spider case really returns rows.
    expect(expected[0]).toBe('France\n');
  });

  test('random statements mixing names and double-quoted words agree with sqlite3', async () => {
    const words = ['name', 'code', 'population', 'Europe', 'FRA', 'Republic', '%a%', 'a', 'zz', "it's", 'a""b', 'id'];
    let seed = 20;
    const pick = <T>(list: T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return list[seed % list.length]!;
    };
    const q = () => `"${pick(words)}"`;
    const templates = [
      () => `SELECT ${q()} FROM city WHERE name = ${q()} ORDER BY 1`,
      () => `SELECT ${q()}, (SELECT ${q()} FROM country ORDER BY code LIMIT 1) FROM city ORDER BY id LIMIT 3`,
      () => `SELECT count(*) FROM country WHERE name LIKE ${q()} OR ${q()} = continent`,
      () => `SELECT city.name, ${q()} FROM city JOIN country ON city.countrycode = country.code ORDER BY city.id`,
      () => `SELECT ${q()} AS ${q()} FROM city ORDER BY 1 LIMIT 2`,
      () => `SELECT name FROM country WHERE ${q()} IN (${q()}, ${q()}) ORDER BY 1`,
      () => `SELECT ${q()} FROM country GROUP BY ${q()} ORDER BY 1`,
      () => `SELECT upper(${q()}) || ${q()} FROM city WHERE id = 1`,
    ];
    const statements = Array.from({ length: 300 }, () => pick(templates)());
    const [config] = configsFor([path], dir);
    const driver = new SqliteProcessDriver(config!, true);
    await driver.connect();
    const expected = reference(statements);
    let strings = 0;
    for (const [index, sql] of statements.entries()) {
      const got = await quarry(driver, sql);
      expect(got, sql).toBe(expected[index]);
      if (got !== 'ERROR') strings++;
    }
    await driver.close();
    expect(strings).toBeGreaterThan(200);
  });

  test('through the tool: query and export_query accept double-quoted strings; writes with them stay refused; the file is unchanged', async () => {
    const runner = makeRunner(configsFor([path], dir), dir);
    const before = directoryFingerprint(dir);
    const result = await runner.run('sqlite', { operation: 'query', sql: 'SELECT name FROM country WHERE GovernmentForm = "Federal Republic" ORDER BY name' });
    expect(result.output).toContain('│ Brazil        │\n│ United States │');
    for (const sql of [
      'DELETE FROM country WHERE GovernmentForm = "Republic"',
      'UPDATE country SET name = "x"',
      'SELECT 1 WHERE "a" = "a"; DELETE FROM city',
    ]) {
      const refused = await runner.run('sqlite', { operation: 'query', sql });
      expect(refused.output).toMatch(/^refused/);
    }
    expect(directoryFingerprint(dir)).toBe(before);
    const exported = await runner.run('sqlite', {
      operation: 'export_query',
      sql: 'SELECT code, name FROM country WHERE continent = "Europe" ORDER BY code',
      output_path: 'europe.csv',
    });
    expect(exported.ok, exported.output).toBe(true);
    // quarry writes RFC 4180 line ends; sqlite3 3.40 writes "\n" to a pipe.
    const csv = execFileSync('sqlite3', ['-csv', '-header', path, "SELECT code, name FROM country WHERE continent = 'Europe' ORDER BY code"], {
      encoding: 'utf8',
    });
    expect(readFileSync(join(dir, 'europe.csv'), 'utf8')).toBe(csv.replaceAll('\r\n', '\n').replaceAll('\n', '\r\n'));
  });
});

describe('SQLite double-quoted strings: bounded work', () => {
  test('up to 100 distinct double-quoted strings are rewritten; beyond, SQLite reports its own error, promptly', async () => {
    const runner = makeRunner(configsFor([path], dir), dir);
    const list = (n: number) => Array.from({ length: n }, (_, i) => `"w${i}"`).join(', ');
    const hundred = await runner.run('sqlite', { operation: 'query', sql: `SELECT count(*) FROM city WHERE name IN (${list(99)}, "Paris")` });
    expect(hundred.output).toContain('│ 1        │');
    const started = performance.now();
    const tooMany = await runner.run('sqlite', { operation: 'query', sql: `SELECT count(*) FROM city WHERE name IN (${list(3000)})` });
    expect(tooMany.output).toBe('sqlite error (world): no such column: "w0" - should this be a string literal in single-quotes?');
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});
