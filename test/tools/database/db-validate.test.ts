import { DuckDBInstance } from '@duckdb/node-api';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import type pg from 'pg';
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cliEnv, collect, runCli, spawnCli } from '../../support/agent-cli.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, directoryFingerprint, freshPostgresDatabase, makeRunner, requireEnv } from './helpers.js';

/**
 * validate {sql} (docs/guide/databases.md "Knowing the data"): the statement check, the engine's own parse and
 * names, suggestions and the query guard's estimate, without running anything: through the built
 * CLI, an agent run with the scripted provider, and the real engines.
 */

const dir = makeTempDir();
const home = makeTempDir('quarry-home-');
const lite = join(dir, 'shop.db');
let pgAdmin: pg.Client;
let pgUrl: string;
let myAdmin: mysql.Connection;
let myUrl: string;

beforeAll(async () => {
  copyFileSync(join(process.cwd(), 'fixtures/sample.db'), lite);
  ({ admin: pgAdmin, url: pgUrl } = await freshPostgresDatabase('quarry_validate'));
  await pgAdmin.query(`CREATE TABLE big (id int PRIMARY KEY, customer_name text); INSERT INTO big SELECT i, 'c' || i FROM generate_series(1, 20000) i;
    ANALYZE big; GRANT SELECT, INSERT ON big TO quarry_test`);
  myAdmin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  await myAdmin.query(`DROP DATABASE IF EXISTS quarry_validate; CREATE DATABASE quarry_validate;
    CREATE TABLE quarry_validate.orders (id INT PRIMARY KEY, shipping_country VARCHAR(40));
    INSERT INTO quarry_validate.orders VALUES (1, 'Brazil'), (2, 'Chile');
    GRANT SELECT ON quarry_validate.* TO 'quarry_test'@'127.0.0.1'`);
  const url = new URL(requireEnv('QUARRY_TEST_MYSQL_URL'));
  url.pathname = '/quarry_validate';
  myUrl = url.toString();
}, 60_000);

afterAll(async () => {
  await pgAdmin?.end();
  await myAdmin?.end();
});

describe('validate through quarry tool (SQLite)', () => {
  test('a valid statement, an unknown name with suggestions and a refused write; the file is unchanged', async () => {
    const before = directoryFingerprint(dir);
    const tool = (sql: string) => runCli(['tool', 'sqlite', '--db', lite, '--args', JSON.stringify({ operation: 'validate', sql })], { env: cliEnv(home) });
    const valid = await tool('SELECT c.name, count(*) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name');
    expect(valid.code, valid.stderr).toBe(0);
    expect(valid.stdout).toBe(
      'valid; nothing was run\n- statement check: passed (one read-only statement)\n- engine: SQLite parsed the statement and resolved every name (prepared as ' +
        'EXPLAIN QUERY PLAN; nothing was run)\n- query guard: not applied on SQLite (no cheap row estimate)\n',
    );
    const typo = await tool('SELECT c.nmae FROM customers c JOIN orders o ON o.customer_id = c.id');
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/^not valid: no such column: c\.nmae; did you mean customers\.name\?\n- statement check: passed/);
    expect(typo.stderr).toContain('- engine: SQLite rejected it (prepared as EXPLAIN QUERY PLAN; nothing was run)');
    const write = await tool("UPDATE customers SET name = 'x'");
    expect(write.code).toBe(1);
    expect(write.stderr).toMatch(/^not valid: the read-only statement check refuses it\n- statement check: refused: UPDATE statements are not allowed/);
    expect(directoryFingerprint(dir)).toBe(before);
  });

  test('under database: mutations an INSERT is checked by the engine and not run', async () => {
    const copy = join(makeTempDir(), 'mutable.db');
    copyFileSync(lite, copy);
    const result = await runCli(
      ['tool', 'sqlite', '-p', 'eval', '--db', copy, '--args', JSON.stringify({ operation: 'validate', sql: "INSERT INTO customers (name) VALUES ('x')" })],
      { env: cliEnv(home) },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('statement check: not applied (database: mutations');
    const db = new Database(copy, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM customers').pluck().get()).toBe(600);
    db.close();
  });
});

describe('validate on the server engines and DuckDB', () => {
  test('PostgreSQL: the guard estimate in the same EXPLAIN, the name suggestions with the HINT; an INSERT under mutations runs nothing', async () => {
    const runner = makeRunner(configsFor([`pgs=${pgUrl}`], dir), dir);
    const valid = await runner.run('postgres', { operation: 'validate', sql: 'SELECT * FROM big WHERE id < 100' });
    expect(valid.ok, valid.output).toBe(true);
    expect(valid.output).toMatch(/^valid; nothing was run\n.*\n- engine: PostgreSQL parsed the statement and resolved every name \(EXPLAIN without ANALYZE/);
    expect(valid.output).toMatch(/- query guard: the plan estimates \d+ rows read from big, within this profile's limit of 10,000,000$/);
    const typo = await runner.run('postgres', { operation: 'validate', sql: 'SELECT custmer_name FROM big' });
    expect(typo.ok).toBe(false);
    expect(typo.output).toMatch(/^not valid: column "custmer_name" does not exist; did you mean big\.customer_name\?\nHINT: /);
    const mutations = makeRunner(configsFor([`pgs=${pgUrl}`], dir), dir, 'eval');
    const insert = await mutations.run('postgres', { operation: 'validate', sql: "INSERT INTO big VALUES (0, 'x')" });
    expect(insert.ok, insert.output).toBe(true);
    expect((await pgAdmin.query('SELECT count(*)::int AS n FROM big')).rows[0].n).toBe(20000);
  });

  test('PostgreSQL in an agent run: validate reports a guard that would refuse, and the query is then refused as it said', async () => {
    const calls = [
      { name: 'postgres', arguments: { operation: 'validate', sql: 'SELECT count(*) FROM big' } },
      { name: 'sqlite', arguments: { operation: 'validate', sql: 'SELECT emial FROM customers' } },
      { name: 'postgres', arguments: { operation: 'query', sql: 'SELECT count(*) FROM big' } },
    ];
    const script = join(dir, 'validate-script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ text: 'Checking first.', tool_calls: calls }, { text: 'Done.' }] }));
    const profile = join(dir, 'guarded.yaml');
    writeFileSync(profile, 'query_guard: {max_estimated_rows: 1000, action: refuse}\n');
    const args = ['--model', `script:${script}`, '--profile', profile, '--format', 'stream-json', '-w', dir, '--db', `pgs=${pgUrl}`, '--db', `lite=${lite}`];
    const before = directoryFingerprint(dir);
    const run = await collect(spawnCli([...args, 'go'], { env: cliEnv(home) }), 60_000);
    expect(run.code, run.stderr).toBe(0);
    const ends = run.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; name?: string; ok?: boolean; output?: string })
      .filter((event) => event.type === 'tool_end');
    const pgEnd = ends.find((event) => event.name === 'postgres' && event.output?.startsWith('valid'))!;
    expect(pgEnd.ok).toBe(true);
    expect(pgEnd.output).toMatch(
      /^valid, but query and export_query would be refused by the query guard; nothing was run\n[\s\S]*- query guard: the plan estimates 20,000 rows read from big, over this profile's limit of 1,000: query and export_query would be refused$/,
    );
    const liteEnd = ends.find((event) => event.name === 'sqlite')!;
    expect(liteEnd.ok).toBe(false);
    expect(liteEnd.output).toContain('no such column: emial; did you mean customers.email?');
    const queryEnd = ends.find((event) => event.name === 'postgres' && event !== pgEnd)!;
    expect(queryEnd.ok).toBe(false);
    expect(queryEnd.output).toMatch(/^refused by the query guard: the plan estimates 20,000 rows read from big/);
    // The run's session files live under home; the working directory holds only what the test wrote.
    expect(directoryFingerprint(dir)).toBe(before);
    expect(readdirSync(join(home, 'sessions')).length).toBeGreaterThan(0);
  }, 90_000);

  test('MariaDB and DuckDB: parse, names and estimate; a statement the engine cannot explain says what was checked', async () => {
    const runner = makeRunner(configsFor([`my=${myUrl}`], dir), dir);
    const valid = await runner.run('mysql', { operation: 'validate', sql: "SELECT id FROM orders WHERE shipping_country = 'Brazil'" });
    expect(valid.ok, valid.output).toBe(true);
    expect(valid.output).toMatch(/- query guard: the plan estimates \d rows read from orders, within this profile's limit of 10,000,000$/);
    const typo = await runner.run('mysql', { operation: 'validate', sql: 'SELECT o.shippingCountry FROM orders o' });
    expect(typo.output).toMatch(/^not valid: Unknown column 'o\.shippingCountry' in '[^']+'; did you mean orders\.shipping_country\?/);
    const show = await runner.run('mysql', { operation: 'validate', sql: 'SHOW TABLES' });
    expect(show.ok).toBe(true);
    expect(show.output).toMatch(/^valid as far as checked; nothing was run\n.*\n- engine: not checked: MySQL\/MariaDB cannot check this kind of statement/);

    const duck = join(makeTempDir(), 'shop.duckdb');
    const instance = await DuckDBInstance.create(duck);
    const connection = await instance.connect();
    await connection.run('CREATE TABLE invoices (invoice_id INT, billing_city VARCHAR)');
    connection.closeSync();
    instance.closeSync();
    const duckRunner = makeRunner(configsFor([`duck=${duck}`], dir), dir);
    const duckTypo = await duckRunner.run('duckdb', { operation: 'validate', sql: 'SELECT BillingCity FROM invoice' });
    expect(duckTypo.output).toMatch(/^not valid: Catalog Error: Table with name invoice does not exist!; did you mean invoices\?/);
    const duckValid = await duckRunner.run('duckdb', { operation: 'validate', sql: 'SELECT billing_city FROM invoices' });
    expect(duckValid.output).toContain('- engine: DuckDB parsed the statement and resolved every name (EXPLAIN without ANALYZE; nothing was run)');
  });
});
