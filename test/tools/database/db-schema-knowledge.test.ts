import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import type pg from 'pg';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import type { Profile } from '../../../src/profiles/schema.js';
import { estimateRows } from '../../../src/tools/database/catalog/explain.js';
import { listTables, searchCatalog } from '../../../src/tools/database/catalog/search.js';
import { driverFor } from '../../../src/tools/database/connections.js';
import type { DatabaseConfig, DatabaseDriver, RunOptions } from '../../../src/tools/database/types.js';
import { MAX_TOOL_OUTPUT_BYTES } from '../../../src/tools/core/sanitize.js';
import type { ToolContext } from '../../../src/tools/core/types.js';
import { cliEnv, collect, spawnCli } from '../../support/agent-cli.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { configsFor, freshPostgresDatabase, requireEnv } from './helpers.js';

/**
 * The schema operations (docs/guide/databases.md "Knowing the data") against real engines: a 20,000-table schema
 * (search and list_tables bounded, one catalogue statement), a 1,500-column table (describe
 * bounded, keys kept), a 2,000,000-row table (sample without a full scan, shown by the engine's
 * own plan of the statement quarry ran; profile marked as sampled), comments and foreign keys in
 * both directions, and the query guard asking and refusing. Each server test uses a database of
 * its own, so the big schema never shows in other files' listings.
 */

const dir = makeTempDir();
const readOnly = (): RunOptions => ({ readOnly: true, signal: new AbortController().signal });
const TABLES = 20_000;

function runnerFor(databases: DatabaseConfig[], profile: Profile, extra: Partial<ToolContext> = {}) {
  const registry = buildToolRegistry(profile, { databases });
  return (tool: string, args: Record<string, unknown>) => registry.run(tool, args, { ...makeToolContext({ workingDir: dir }), ...extra });
}

/** A driver whose catalog() statements are counted. */
function counting(driver: DatabaseDriver): { driver: DatabaseDriver; statements: string[] } {
  const statements: string[] = [];
  const wrapped = new Proxy(driver, {
    get(target, property) {
      if (property === 'catalog') {
        return (sql: string, params: readonly unknown[], options: RunOptions) => {
          statements.push(sql);
          return target.catalog(sql, params, options);
        };
      }
      const value = Reflect.get(target, property) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { driver: wrapped, statements };
}

function lines(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('│ '))
    .slice(1);
}

describe('sqlite', () => {
  const path = join(dir, 'schema.db');
  let run: ReturnType<typeof runnerFor>;
  let config: DatabaseConfig;

  beforeAll(() => {
    const db = new Database(path);
    db.exec(`CREATE TABLE customer_accounts (id INTEGER PRIMARY KEY, email_address TEXT NOT NULL, region TEXT);
      CREATE TABLE invoices (id INTEGER PRIMARY KEY, account_id INTEGER REFERENCES customer_accounts(id), amount NUMERIC);
      CREATE TABLE big (id INTEGER PRIMARY KEY, grp INTEGER, label TEXT);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000000) INSERT INTO big SELECT i, i % 7, 'row ' || i FROM n;`);
    db.exec(`CREATE TABLE wide (${Array.from({ length: 1500 }, (_, i) => `c${i} INTEGER${i === 0 ? ' PRIMARY KEY' : ''}`).join(', ')})`);
    db.exec(`CREATE TABLE wide_child (id INTEGER PRIMARY KEY, wide_id INTEGER REFERENCES wide(c0))`);
    db.transaction(() => {
      for (let i = 0; i < TABLES; i++) db.exec(`CREATE TABLE t${String(i).padStart(5, '0')}_facts (id INTEGER, amount REAL, note TEXT)`);
    })();
    db.close();
    config = configsFor([`s=${path}`], dir)[0]!;
    run = runnerFor([config!], loadProfile('readonly'));
  }, 300_000);

  test('search finds columns and tables across 20,000 tables in one catalogue statement, ranked and bounded', async () => {
    const { driver, statements } = counting(await driverFor(config, true));
    await driver.connect(new AbortController().signal);
    const exact = await searchCatalog('sqlite', driver, 'email_address', 'any', readOnly());
    expect(statements).toHaveLength(1);
    expect(exact.matches).toBe(1);
    expect(lines(exact.text)[0]).toMatch(/│ column │ main +│ customer_accounts │ email_address │ TEXT/);
    // Ranked: the exact table name before names that merely contain the text.
    const ranked = await run('sqlite', { operation: 'search', pattern: 'INVOICES' });
    expect(lines(ranked.output)[0]).toMatch(/│ table +│ main +│ invoices/);
    const all = await run('sqlite', { operation: 'search', pattern: 'facts', object: 'table' });
    expect(all.output).toMatch(/^\(20,000 matches for "facts", best first; showing 100: 19,900 more; narrow the pattern/);
    expect(lines(all.output)).toHaveLength(100);
    expect(Buffer.byteLength(String(all.output))).toBeLessThan(MAX_TOOL_OUTPUT_BYTES);
    const columns = await run('sqlite', { operation: 'search', pattern: 'amount', object: 'column' });
    expect(columns.metadata.matches).toBe(TABLES + 1);
  });

  test('list_tables shows the total and at most 200 tables, from at most two catalogue statements', async () => {
    const { driver, statements } = counting(await driverFor(config, true));
    await driver.connect(new AbortController().signal);
    const listed = await listTables('sqlite', driver, undefined, readOnly());
    expect(statements.length).toBeLessThanOrEqual(2);
    expect(listed.tables).toBe(TABLES + 5);
    expect(listed.text).toMatch(/^\(20,005 tables and views; showing the first 200: use operation search/);
    expect(lines(listed.text)).toHaveLength(200);
  });

  test('list_tables takes row estimates from sqlite_stat1 once ANALYZE has run, and shows none before', async () => {
    const analysed = join(dir, 'analysed.db');
    const db = new Database(analysed);
    db.exec(
      'CREATE TABLE kinds (id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX kinds_name ON kinds (name); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i ' +
        "+ 1 FROM n WHERE i < 1234) INSERT INTO kinds SELECT i, 'k' || i FROM n;",
    );
    const listAnalysed = runnerFor(configsFor([`a=${analysed}`], dir), loadProfile('readonly'));
    expect((await listAnalysed('sqlite', { operation: 'list_tables' })).output).toMatch(/│ main +│ kinds +│ table │ +│ +│/);
    db.exec('ANALYZE');
    db.close();
    expect((await listAnalysed('sqlite', { operation: 'list_tables' })).output).toMatch(/│ main +│ kinds +│ table │ ~1,234 +│ +│/);
  });

  test('describe of a 1,500-column table keeps its keys and references ahead of the bulk, within the output cap', async () => {
    const described = await run('sqlite', { operation: 'describe', table_name: 'wide' });
    const output = String(described.output);
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(MAX_TOOL_OUTPUT_BYTES);
    expect(output).toContain('wide: 1,500 columns');
    expect(output).toContain('primary key: c0');
    expect(output).toMatch(/referenced by: \n {2}wide_child: \(wide_id\) -> \(c0\)/);
    expect(output).toMatch(/showing [\d,]+ of 1,500 columns/);
  });

  test('sample reads a few rows through the rowid index, never the whole 2,000,000-row table', async () => {
    const sampled = await run('sqlite', { operation: 'sample', table_name: 'big', row_limit: 8 });
    expect(sampled.ok).toBe(true);
    expect(sampled.metadata.rows).toBeGreaterThanOrEqual(7);
    expect(sampled.output).toContain('random points of the rowid range');
    const db = new Database(path, { readonly: true });
    const sql = String(sampled.metadata.sql);
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 1)) as { detail: string }[];
    db.close();
    expect(plan.map((step) => step.detail).join('\n')).toMatch(/SEARCH (main\.)?big USING INTEGER PRIMARY KEY \(rowid>\?\)/);
    expect(plan.some((step) => /^SCAN (main\.)?big\b/.test(step.detail))).toBe(false);
  });

  test('profile of the 2,000,000-row table is sampled and says so; a small table is profiled whole and exactly', async () => {
    const big = await run('sqlite', { operation: 'profile', table_name: 'big' });
    expect(big.ok).toBe(true);
    expect(big.output).toMatch(/SAMPLED: figures are from [\d,]+ rows: 20 random ranges of the rowid/);
    expect(Number(big.metadata.rows)).toBeGreaterThan(50_000);
    expect(Number(big.metadata.rows)).toBeLessThan(200_000);
    expect(big.output).toMatch(/│ grp +│ INTEGER │ 0% +│ 7 +│ 0 +│ 6 /);
    const small = await run('sqlite', {
      operation: 'profile',
      sql: "SELECT region, COUNT(*) AS n FROM (SELECT 'EU' AS region UNION ALL SELECT 'EU' UNION ALL SELECT NULL) GROUP BY region",
    });
    expect(small.output).toContain('Profile of the query: 2 of 2 columns, from all 2 rows');
    expect(small.output).toMatch(/│ region │ text +│ 50\.0% │ 1 +│ EU +│ EU /);
  });

  test('profile writes the whole profile as a new Markdown file, and never over an existing one', async () => {
    const written = await run('sqlite', { operation: 'profile', table_name: 'customer_accounts', output_path: 'accounts-profile.md' });
    expect(written.ok).toBe(true);
    expect(readFileSync(join(dir, 'accounts-profile.md'), 'utf8')).toMatch(
      /^# Profile of main\.customer_accounts: 3 of 3 columns, from all 0 rows\n\n\| column \| type \|/,
    );
    const again = await run('sqlite', { operation: 'profile', table_name: 'customer_accounts', output_path: 'accounts-profile.md' });
    expect(again.ok).toBe(false);
    expect(readdirSync(dir).filter((name) => name.includes('quarry-') && name.endsWith('.tmp'))).toEqual([]);
  });

  test('explain shows the plan without running the statement; a write is refused by the statement check', async () => {
    const plan = await run('sqlite', { operation: 'explain', sql: 'SELECT * FROM invoices JOIN customer_accounts ON customer_accounts.id = account_id' });
    expect(plan.output).toMatch(/QUERY PLAN\n└─ SCAN invoices\n└─ SEARCH customer_accounts USING INTEGER PRIMARY KEY/);
    const write = await run('sqlite', { operation: 'explain', sql: 'DELETE FROM big' });
    expect(write.ok).toBe(false);
    expect(write.metadata.error).toBe('read_only_violation');
    const nested = await run('sqlite', { operation: 'explain', sql: 'EXPLAIN SELECT 1' });
    expect(nested.output).toContain('pass the statement itself, without EXPLAIN');
    const db = new Database(path, { readonly: true });
    expect((db.prepare('SELECT COUNT(*) AS n FROM big').get() as { n: number }).n).toBe(2_000_000);
    db.close();
  });
});

describe('postgres', () => {
  let admin: pg.Client;
  let config: DatabaseConfig;
  let run: ReturnType<typeof runnerFor>;

  beforeAll(async () => {
    const fresh = await freshPostgresDatabase('quarry_schema');
    admin = fresh.admin;
    await admin.query(`
      CREATE TABLE customer_accounts (id int PRIMARY KEY, email_address text NOT NULL, region text);
      COMMENT ON TABLE customer_accounts IS 'One row per paying customer';
      COMMENT ON COLUMN customer_accounts.region IS 'Sales region code (EU, US, APAC)';
      CREATE TABLE invoices (id int PRIMARY KEY, account_id int REFERENCES customer_accounts(id), amount numeric(12, 2));
      CREATE TABLE big AS SELECT i AS id, i % 7 AS grp, md5(i::text) AS label FROM generate_series(1, 2000000) AS i;
      ALTER TABLE big ADD PRIMARY KEY (id);
      ANALYZE big;
      CREATE TABLE fresh AS SELECT i FROM generate_series(1, 50000) AS i;
      CREATE TABLE wide (${Array.from({ length: 1500 }, (_, i) => `c${i} int${i === 0 ? ' PRIMARY KEY' : ''}`).join(', ')});
    `);
    // In transactions of 500 tables: one transaction of 20,000 runs out of lock slots.
    for (let start = 1; start <= TABLES; start += 500) {
      await admin.query(
        `DO $$ BEGIN FOR i IN ${start}..${start + 499} LOOP EXECUTE format('CREATE TABLE t%s_facts (id int, amount float8)', lpad(i::text, 5, '0')); END ` +
          `LOOP; END $$`,
      );
    }
    await admin.query('GRANT SELECT ON ALL TABLES IN SCHEMA public TO quarry_test');
    config = configsFor([`pgs=${fresh.url}`], dir)[0]!;
    run = runnerFor([config!], loadProfile('readonly'));
  }, 300_000);

  afterAll(async () => {
    await admin?.end();
  });

  test('search over 20,000 tables: one catalogue statement, comments searched, bounded', async () => {
    const { driver, statements } = counting(await driverFor(config, true));
    await driver.connect(new AbortController().signal);
    const byComment = await searchCatalog('postgres', driver, 'sales region', 'any', readOnly());
    expect(statements).toHaveLength(1);
    expect(lines(byComment.text)).toEqual([
      expect.stringMatching(/│ column │ public +│ customer_accounts │ region +│ text +│ Sales region code \(EU, US, APAC\) │/),
    ]);
    const all = await run('postgres', { operation: 'search', pattern: '_facts' });
    expect(all.output).toMatch(/^\(20,000 matches for "_facts", best first; showing 100/);
    expect(Buffer.byteLength(String(all.output))).toBeLessThan(MAX_TOOL_OUTPUT_BYTES);
  });

  test('list_tables: total, estimates and comments, 200 rows, one statement', async () => {
    const { driver, statements } = counting(await driverFor(config, true));
    await driver.connect(new AbortController().signal);
    const listed = await listTables('postgres', driver, undefined, readOnly());
    expect(statements).toHaveLength(1);
    expect(listed.text).toMatch(/^\(20,005 tables and views; showing the first 200/);
    const accounts = await run('postgres', { operation: 'list_tables', table_pattern: 'customer%' });
    expect(accounts.output).toMatch(/│ public +│ customer_accounts │ table │ +│ One row per paying customer │/);
    const big = await run('postgres', { operation: 'list_tables', table_pattern: 'big' });
    expect(big.output).toMatch(/│ public +│ big +│ table │ ~2,000,000 +│/);
  });

  test('describe: comments, foreign keys both ways; 1,500 columns bounded', async () => {
    const accounts = await run('postgres', { operation: 'describe', table_name: 'customer_accounts' });
    expect(accounts.output).toContain('comment: One row per paying customer');
    expect(accounts.output).toMatch(
      /referenced by: \n {2}invoices \(invoices_account_id_fkey\): FOREIGN KEY \(account_id\) REFERENCES customer_accounts\(id\)/,
    );
    expect(accounts.output).toMatch(/│ region +│ text +│ yes +│ NULL +│ +│ Sales region code \(EU, US, APAC\) │/);
    const wide = await run('postgres', { operation: 'describe', table_name: 'wide' });
    expect(Buffer.byteLength(String(wide.output))).toBeLessThanOrEqual(MAX_TOOL_OUTPUT_BYTES);
    expect(wide.output).toContain('primary key: c0');
  });

  test('sample uses TABLESAMPLE SYSTEM on the 2,000,000-row table: the plan is a Sample Scan, not a Seq Scan', async () => {
    const sampled = await run('postgres', { operation: 'sample', table_name: 'big' });
    expect(sampled.metadata.rows).toBe(10);
    expect(sampled.output).toContain('TABLESAMPLE SYSTEM');
    const plan = await admin.query(`EXPLAIN ${String(sampled.metadata.sql)}`);
    const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(text).toContain('Sample Scan on big');
    expect(text).not.toContain('Seq Scan');
  });

  test('profile of the big table is sampled, and says from how many rows', async () => {
    const profiled = await run('postgres', { operation: 'profile', table_name: 'big', columns: ['grp', 'label'] });
    expect(profiled.ok).toBe(true);
    expect(profiled.output).toMatch(/SAMPLED: figures are from [\d,]+ rows: TABLESAMPLE SYSTEM \([\d.]+%\) of about 2,000,000 rows/);
    expect(profiled.output).toMatch(/│ grp +│ integer │ 0% +│ 7 +│ 0 +│ 6 +│ 3/);
    expect(profiled.output).toMatch(/│ label +│ text +│ 0% +│ [\d,]+ +│ \S+ +│ \S+ +│ +│ +│ 32–32 +│/);
  });

  test('profile keeps to its time budget: the statement still running when it ends is cancelled, and the columns not reached are named', async () => {
    const hurried = runnerFor([config], { ...loadProfile('readonly'), profile_budget_seconds: 1 });
    const started = Date.now();
    const profiled = await hurried('postgres', {
      operation: 'profile',
      sql: 'SELECT i, md5(i::text) AS h, i * 2 AS d FROM generate_series(1, 3) AS i, pg_sleep(0.7)',
    });
    expect(profiled.ok).toBe(true);
    expect(profiled.output).toMatch(/Profile of the query: 1 of 3 columns, from all 3 rows; not profiled: 2 columns \(h, d\) not reached in the 1 s budget/);
    // Its figures stand; its top values (one more 0.7 s statement) were cut by the budget.
    expect(profiled.output).toMatch(/│ i +│ number \(from its values\) │ 0% +│ 3 +│ 1 +│ 3 +│ 2 +│ 1 +│ +│ \(the time budget ran out\) │/);
    // The head (0.7 s), one column (0.7 s), then the budget: not the 3.5 s the rest would take.
    expect(Date.now() - started).toBeLessThan(5_000);
    const stillThere = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%pg_sleep(0.7)%' AND pid <> pg_backend_pid()`);
    expect(stillThere.rows[0].n).toBe(0);
  });

  test('explain shows estimates; the guard refuses or asks above its threshold and lets small statements through', async () => {
    const plan = await run('postgres', { operation: 'explain', sql: 'SELECT grp, count(*) FROM big GROUP BY grp' });
    expect(plan.output).toMatch(/Seq Scan on big +\(cost=[\d.]+ rows=\d+/);
    const { driver } = counting(await driverFor(config, true));
    await driver.connect(new AbortController().signal);
    expect(await estimateRows('postgres', driver, "SELECT * FROM big WHERE label = 'x'", readOnly())).toEqual({ rows: 2_000_000, table: 'big' });

    const refusing = { ...loadProfile('readonly'), query_guard: { max_estimated_rows: 1_000_000, action: 'refuse' as const } };
    const refused = await runnerFor([config], refusing)('postgres', { operation: 'query', sql: 'SELECT count(*) FROM big' });
    expect(refused.ok).toBe(false);
    expect(refused.output).toMatch(/^refused by the query guard: the plan estimates 2,000,000 rows read from big, over this profile's limit of 1,000,000/);
    // A join's own estimate is not rows read: on a table never analysed it reached a billion and refused a 200,000-row export.
    const joined = await runnerFor([config], refusing)('postgres', {
      operation: 'query',
      sql: 'SELECT count(*) AS n FROM fresh a CROSS JOIN (SELECT i FROM fresh WHERE i <= 4) b',
    });
    expect(joined.output).toContain('│ 200000 │');
    const small = await runnerFor([config], refusing)('postgres', { operation: 'query', sql: 'SELECT * FROM big WHERE id = 5' });
    expect(small.output).toContain('│ 5  │ 5   │');

    const asking = { ...loadProfile('readonly'), query_guard: { max_estimated_rows: 1_000_000, action: 'ask' as const } };
    const questions: string[] = [];
    const declined = await runnerFor([config], asking, {
      approve: async (reason) => {
        questions.push(reason);
        return { approved: false, message: 'refused by the user' };
      },
    })('postgres', { operation: 'export_query', sql: 'SELECT * FROM big', output_path: 'big.csv' });
    expect(declined.ok).toBe(false);
    expect(questions).toEqual([expect.stringContaining('2,000,000 rows read from big')]);
    expect(existsSync(join(dir, 'big.csv'))).toBe(false);
    const approved = await runnerFor([config], asking, { approve: async () => ({ approved: true }) })('postgres', {
      operation: 'query',
      sql: 'SELECT count(*) AS n FROM big',
    });
    expect(approved.output).toContain('│ 2000000 │');
    const noOne = await runnerFor([config], asking)('postgres', { operation: 'query', sql: 'SELECT count(*) AS n FROM big' });
    expect(noOne.output).toContain('there is no one to ask here');
  });
});

describe('mariadb', () => {
  let config: DatabaseConfig;
  let run: ReturnType<typeof runnerFor>;
  // 2,000 here: 20,000 Aria tables took about 4 minutes to create on this machine, and MariaDB's
  // information_schema then opens every table definition, so each catalogue statement took
  // seconds (measured once, see docs/guide/databases.md); PostgreSQL and SQLite carry the 20,000-table cases.
  const MARIADB_TABLES = 2_000;

  beforeAll(async () => {
    const admin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
    await admin.query(
      `DROP DATABASE IF EXISTS quarry_schema; CREATE DATABASE quarry_schema; DROP USER IF EXISTS 'quarry_schema'@'127.0.0.1';
      CREATE USER 'quarry_schema'@'127.0.0.1' IDENTIFIED BY 'schema-pw'; GRANT SELECT, SHOW VIEW ON quarry_schema.* TO 'quarry_schema'@'127.0.0.1'; USE ` +
        `quarry_schema;
      CREATE TABLE customer_accounts (id int PRIMARY KEY, email_address varchar(200) NOT NULL, region varchar(8) COMMENT 'Sales region code') COMMENT 'One ` +
        `row per paying customer';
      CREATE TABLE invoices (id int PRIMARY KEY, account_id int, amount decimal(12, 2), FOREIGN KEY (account_id) REFERENCES customer_accounts(id));
      CREATE TABLE big (id int PRIMARY KEY, grp int, label varchar(40));
      SET SESSION max_recursive_iterations = 1000000;
      INSERT INTO big WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) SELECT i, i % 7, CONCAT('row ', i) FROM n;
      ANALYZE TABLE big;`,
    );
    for (let start = 0; start < MARIADB_TABLES; start += 500) {
      await admin.query(
        Array.from({ length: 500 }, (_, i) => `CREATE TABLE t${String(start + i).padStart(5, '0')}_facts (id int, amount double) ENGINE=Aria`).join(';'),
      );
    }
    await admin.end();
    const url = new URL(requireEnv('QUARRY_TEST_MYSQL_URL'));
    url.username = 'quarry_schema';
    url.password = 'schema-pw';
    url.pathname = '/quarry_schema';
    config = configsFor([`mys=${url.toString()}`], dir)[0]!;
    run = runnerFor([config!], loadProfile('readonly'));
  }, 300_000);

  test('search and list_tables: one statement each, comments, bounded', async () => {
    const { driver, statements } = counting(await driverFor(config, true));
    await driver.connect(new AbortController().signal);
    const found = await searchCatalog('mysql', driver, 'region', 'column', readOnly());
    expect(statements).toHaveLength(1);
    expect(lines(found.text)).toEqual([expect.stringMatching(/│ column │ quarry_schema │ customer_accounts │ region +│ varchar\(8\) │ Sales region code │/)]);
    const listed = await listTables('mysql', driver, undefined, readOnly());
    expect(statements).toHaveLength(2);
    expect(listed.text).toMatch(/^\(2,003 tables and views; showing the first 200/);
    const facts = await run('mysql', { operation: 'search', pattern: 'FACTS', object: 'table' });
    expect(facts.output).toMatch(/^\(2,000 matches for "FACTS", best first; showing 100/);
  });

  test('describe names the tables that reference this one; sample uses the primary key index; the guard reads EXPLAIN', async () => {
    const described = await run('mysql', { operation: 'describe', table_name: 'customer_accounts' });
    expect(described.output).toContain('comment: One row per paying customer');
    expect(described.output).toMatch(/referenced by: \n {2}quarry_schema\.invoices \(invoices_ibfk_1\): account_id -> id/);
    const sampled = await run('mysql', { operation: 'sample', table_name: 'big', row_limit: 5 });
    expect(sampled.output).toContain('random points of the primary key id range');
    const admin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL') });
    const sql = String(sampled.metadata.sql);
    const [plan] = await admin.query({ sql: `EXPLAIN ${sql.replace(/\?/g, '1')}`, rowsAsArray: false });
    await admin.end();
    for (const step of plan as { table: string | null; type: string; key: string | null }[]) {
      if (step.table === 'big') expect([step.type, step.key]).toEqual(['range', 'PRIMARY']);
    }
    const profiled = await run('mysql', { operation: 'profile', table_name: 'big', columns: ['grp'] });
    expect(profiled.output).toMatch(/│ grp +│ int\(11\) │ 0% +│ 7 +│ 0 +│ 6 /);
    const refusing = { ...loadProfile('readonly'), query_guard: { max_estimated_rows: 100_000, action: 'refuse' as const } };
    const refused = await runnerFor([config], refusing)('mysql', { operation: 'query', sql: 'SELECT * FROM big WHERE label LIKE "%9"' });
    expect(refused.output).toMatch(/^refused by the query guard: the plan estimates [\d,]+ rows read from big/);
    const pointed = await runnerFor([config], refusing)('mysql', { operation: 'query', sql: 'SELECT label FROM big WHERE id = 9' });
    expect(pointed.output).toContain('row 9');
    // A LIMIT without a sort stops the scan early: judged at the rows it needs, not the table's.
    const limited = await runnerFor([config], refusing)('mysql', { operation: 'query', sql: 'SELECT * FROM big LIMIT 10' });
    expect(limited.ok, String(limited.output)).toBe(true);
    const sorted = await runnerFor([config], refusing)('mysql', { operation: 'query', sql: 'SELECT * FROM big ORDER BY label LIMIT 10' });
    expect(sorted.output).toMatch(/^refused by the query guard: the plan estimates [\d,]+ rows read from big/);
  });
});

describe('agent runs', () => {
  test('one model message with schema calls on SQLite and PostgreSQL: each answers; the guard asks through the approver, refused without a terminal and run ' +
    'with --yes; the process exits on its own', async () => {
    const home = makeTempDir();
    const url = new URL(requireEnv('QUARRY_TEST_PG_URL'));
    url.pathname = '/quarry_schema';
    const lite = join(dir, 'agent.db');
    const db = new Database(lite);
    db.exec("CREATE TABLE regions (code TEXT PRIMARY KEY, name TEXT); INSERT INTO regions VALUES ('EU', 'Europe'), ('US', 'United States');");
    db.close();
    const calls = [
      { name: 'postgres', arguments: { operation: 'search', pattern: 'region' } },
      { name: 'postgres', arguments: { operation: 'describe', table_name: 'customer_accounts' } },
      { name: 'postgres', arguments: { operation: 'sample', table_name: 'big', row_limit: 3 } },
      { name: 'postgres', arguments: { operation: 'profile', table_name: 'big', columns: ['grp'] } },
      { name: 'postgres', arguments: { operation: 'explain', sql: 'SELECT * FROM big WHERE id = 1' } },
      { name: 'sqlite', arguments: { operation: 'profile', table_name: 'regions' } },
      { name: 'sqlite', arguments: { operation: 'list_tables' } },
      { name: 'postgres', arguments: { operation: 'query', sql: 'SELECT count(*) AS n FROM big' } },
    ];
    const script = join(dir, 'schema-script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ text: 'Looking around.', tool_calls: calls }, { text: 'Done.' }] }));
    const profile = join(dir, 'guarded.yaml');
    writeFileSync(profile, 'query_guard: {max_estimated_rows: 1000000, action: ask}\n');
    const args = [
      '--model',
      `script:${script}`,
      '--profile',
      profile,
      '--format',
      'stream-json',
      '-w',
      dir,
      '--db',
      `pgs=${url.toString()}`,
      '--db',
      `lite=${lite}`,
    ];
    type End = { type: string; ok?: boolean; output?: string; arguments?: unknown };
    // In the order of the calls (they finish in any order).
    const ends = (stdout: string) => {
      const all = stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as End)
        .filter((event) => event.type === 'tool_end');
      expect(all).toHaveLength(calls.length);
      return calls.map((call) => all.find((event) => JSON.stringify(event.arguments) === JSON.stringify(call.arguments))!);
    };

    const refused = await collect(spawnCli([...args, 'go'], { env: cliEnv(home) }), 60_000);
    expect(refused.code, refused.stderr).toBe(0);
    const outputs = ends(refused.stdout);
    expect(outputs.slice(0, 7).map((event) => event.ok)).toEqual([true, true, true, true, true, true, true]);
    expect(outputs.map((event) => String(event.output))).toEqual([
      expect.stringContaining('Sales region code'),
      expect.stringContaining('referenced by:'),
      expect.stringContaining('TABLESAMPLE SYSTEM'),
      expect.stringContaining('SAMPLED'),
      expect.stringContaining('Index Scan using big_pkey on big'),
      expect.stringMatching(/│ name +│ TEXT +│ 0% +│ 2 +│ Europe +│ United States │/),
      expect.stringContaining('│ main   │ regions │ table │'),
      expect.stringMatching(
        /^refused: the query guard: the plan estimates 2,000,000 rows read from big, over this profile's limit of 1,000,000 .*no terminal to ask the user/,
      ),
    ]);

    const approved = await collect(spawnCli([...args, '--yes', 'go'], { env: cliEnv(home) }), 60_000);
    expect(approved.code, approved.stderr).toBe(0);
    expect(String(ends(approved.stdout).at(-1)!.output)).toContain('│ 2000000 │');
  }, 120_000);
});
