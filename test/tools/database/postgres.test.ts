import pg from 'pg';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PostgresDriver } from '../../../src/tools/database/drivers/postgres.js';
import { TEST_DB_PASSWORD } from '../../support/servers.js';
import { makeTempDir } from '../../support/context.js';
import { driverContract } from './contract/driver-contract.js';
import { mutationCorpus } from './corpus.js';
import { configsFor, makeRunner, requireEnv, tableCells } from './helpers.js';

let admin: pg.Client;
let dir: string;
let runner: ReturnType<typeof makeRunner>;
let url: string;

/** Data, schema and sequences, as one comparable value. */
async function snapshot(): Promise<string> {
  const result = await admin.query(
    `
    SELECT (SELECT string_agg(format('%s|%s|%s|%s|%s', id, name, email, note, created_at), ';' ORDER BY id) FROM customers)
      || '#' || (SELECT string_agg(format('%s|%s|%s|%s|%s', id, customer_id, action, update_count, note), ';' ORDER BY id) FROM audit_log)
      || '#' || (SELECT string_agg(format('%s.%s.%s.%s', table_schema, table_name, column_name, data_type), ';' ORDER BY 1) FROM information_schema.columns ` +
      `WHERE table_schema NOT IN ('pg_catalog', 'information_schema'))
      || '#' || (SELECT string_agg(relname || ':' || relkind::text, ';' ORDER BY relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace ` +
      `WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast'))
      || '#' || (SELECT last_value::text || is_called::text FROM customers_id_seq)
      || '#' || (SELECT count(*)::text FROM pg_largeobject_metadata) AS state`,
  );
  return String(result.rows[0].state);
}

beforeAll(async () => {
  url = requireEnv('QUARRY_TEST_PG_URL');
  admin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
  await admin.connect();
  await admin.query(
    `
    DROP TABLE IF EXISTS audit_log, customers, big CASCADE;
    CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL, email text UNIQUE, note text, created_at date DEFAULT '2024-01-01');
    CREATE TABLE audit_log (id serial PRIMARY KEY, customer_id int REFERENCES customers(id), action text NOT NULL,
      update_count int NOT NULL DEFAULT 0, deleted_flag boolean NOT NULL DEFAULT false, note text);
    CREATE INDEX audit_log_action ON audit_log (action);
    INSERT INTO customers (name, email, note, created_at) VALUES ('Ada', 'ada@example.com', NULL, '2024-01-02'), ('Bob', 'bob@example.com', E'line ` +
      `one\\nline two', '2024-02-03'), ('Cyd', 'cyd@example.com', 'a, b', '2024-03-04');
    INSERT INTO audit_log (customer_id, action, update_count, note) VALUES (1, 'DELETE', 3, 'x'), (2, 'UPDATE', 1, NULL), (3, 'INSERT', 0, 'drop table');
    CREATE TABLE big AS SELECT i AS id, 'row ' || i AS label, (i / 4.0)::numeric(12, 2) AS amount FROM generate_series(1, 20000) AS i;
    ALTER TABLE customers OWNER TO quarry_test; ALTER TABLE audit_log OWNER TO quarry_test; ALTER TABLE big OWNER TO quarry_test;
  `,
  );
  dir = makeTempDir();
  runner = makeRunner(configsFor([`pg=${url}`], dir), dir);
});

afterAll(async () => {
  await admin?.end();
});

driverContract(
  {
    tool: 'postgres',
    exact: {
      sql:
        "SELECT 12345678901234567890.123456789::numeric AS n, 9223372036854775807::bigint AS b, DATE '2024-02-29' AS d, NULL AS z, 0.1::float8 + " +
        '0.2::float8 AS f',
      line: '│ 12345678901234567890.123456789 │ 9223372036854775807 │ 2024-02-29 │ NULL │ 0.30000000000000004 │',
    },
    listTables: { pattern: '%o%', shows: ['│ public │ audit_log │ table │', '│ public │ customers │ table │'] },
    describe: {
      table: 'public.audit_log',
      shows: [
        /│ update_count │ integer │ no {7}│ 0 +│ {5}│/,
        'primary key: id',
        'audit_log_customer_id_fkey: FOREIGN KEY (customer_id) REFERENCES customers(id)',
        'audit_log_action: CREATE INDEX audit_log_action ON public.audit_log USING btree (action)',
      ],
    },
    slow: { sql: 'SELECT pg_sleep(20)', marker: 'SELECT pg_sleep(20)' },
    failingExport: { sql: 'SELECT 1 / (20000 - id) FROM big ORDER BY id', says: 'division by zero' },
    wrongPassword: {
      configs: (target) => configsFor([`bad=${url.replace(encodeURIComponent(TEST_DB_PASSWORD), encodeURIComponent(`${TEST_DB_PASSWORD}x`))}`], target.dir),
      password: TEST_DB_PASSWORD,
      says: 'password authentication failed for user "quarry_test"',
    },
  },
  () => ({
    configs: configsFor([`pg=${url}`], dir),
    dir,
    snapshot,
    // psql's COPY ends records with LF; the rows hold no line breaks, so each LF ends a record.
    clientCsv: async (sql) =>
      execFileSync(
        'psql',
        [requireEnv('QUARRY_TEST_PG_ADMIN_URL'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `COPY (${sql}) TO STDOUT WITH (FORMAT csv, HEADER)`],
        {
          encoding: 'utf8',
          maxBuffer: 64 * 1024 * 1024,
        },
      ).replace(/\n/g, '\r\n'),
    running: async (marker) =>
      (await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = $1 AND state = 'active' AND pid <> pg_backend_pid()", [marker])).rows[0]
        .n,
    countAction: async (action) => (await admin.query('SELECT count(*)::int AS n FROM audit_log WHERE action = $1', [action])).rows[0].n,
    removeAction: async (action) => {
      await admin.query('DELETE FROM audit_log WHERE action = $1', [action]);
    },
  }),
);

describe('postgres query', () => {
  test('a cursor fetches only limit+1 rows', async () => {
    const result = await runner.run('postgres', { operation: 'query', sql: 'SELECT * FROM generate_series(1, 1000000) ORDER BY 1' });
    expect(result.metadata).toMatchObject({ rows: 100, more: true });
    expect(result.output.endsWith('more rows exist; use COUNT(*) or export_query')).toBe(true);
  });
});

describe('postgres read-only: the engine layer alone (statement check bypassed)', () => {
  const attempts = [
    'DELETE FROM customers',
    "UPDATE customers SET name = 'x'",
    "INSERT INTO customers (name) VALUES ('x')",
    'DROP TABLE audit_log',
    'CREATE TABLE evil (id int)',
    "SELECT nextval('customers_id_seq')",
    "SELECT setval('customers_id_seq', 100)",
    'WITH d AS (DELETE FROM customers RETURNING *) SELECT * FROM d',
    'SELECT * INTO evil FROM customers',
    'SELECT * FROM customers FOR UPDATE',
    'TRUNCATE audit_log',
    // EXPLAIN ANALYZE runs the statement it explains.
    'EXPLAIN ANALYZE DELETE FROM customers',
    "EXPLAIN (ANALYZE, FORMAT JSON) INSERT INTO customers (name) VALUES ('x')",
  ];
  test.each(attempts)('a read-only transaction refuses %j', async (sql) => {
    const [config] = configsFor([url], dir);
    const driver = new PostgresDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await snapshot();
    await expect(driver.query(sql, 10, { readOnly: true, signal })).rejects.toThrow(/read-only transaction/);
    // The session default is read-only too, so even a statement outside the BEGIN READ ONLY wrapper cannot write.
    await expect(driver.query(sql, 10, { readOnly: false, signal })).rejects.toThrow(/read-only transaction/);
    await driver.close();
    expect(await snapshot()).toBe(before);
  });

  test('PostgreSQL 15 lets lo_from_bytea run in a read-only transaction: the rollback undoes it, and the statement check refuses it', async () => {
    const [config] = configsFor([url], dir);
    const driver = new PostgresDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await snapshot();
    const result = await driver.query("SELECT lo_from_bytea(0, 'x')", 10, { readOnly: true, signal });
    expect(result.rows.length).toBe(1);
    await driver.close();
    expect(await snapshot()).toBe(before);
    const refused = await runner.run('postgres', { operation: 'query', sql: "SELECT lo_from_bytea(0, 'x')" });
    expect(refused.output).toMatch(/^refused: the function lo_from_bytea\(\)/);
  });

  test('an export runs exactly one statement: COPY goes through the extended protocol, so a second statement is refused by PostgreSQL', async () => {
    const [config] = configsFor([url], dir);
    const driver = new PostgresDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await snapshot();
    const sink = { setColumns: () => undefined, writeRows: async () => undefined, writeEncoded: async () => undefined, setRowCount: () => undefined };
    // With the statement check bypassed: before, this (as a simple-protocol COPY) committed the DELETE.
    const smuggled = 'SELECT 1) TO STDOUT; COMMIT; BEGIN READ WRITE; DELETE FROM audit_log; COMMIT; COPY (SELECT 1';
    await expect(driver.exportCsv(smuggled, sink, { readOnly: true, signal })).rejects.toThrow('cannot insert multiple commands into a prepared statement');
    // The connection is still usable and still read-only.
    await expect(driver.query('DELETE FROM audit_log', 10, { readOnly: false, signal })).rejects.toThrow(/read-only transaction/);
    await driver.close();
    expect(await snapshot()).toBe(before);
  });

  test('session state that survives a ROLLBACK is discarded after every statement', async () => {
    // A user function the statement check cannot see into takes a session-level advisory lock.
    await admin.query(
      `CREATE OR REPLACE FUNCTION lock_quietly() RETURNS int LANGUAGE sql AS $$ SELECT 1 FROM pg_advisory_lock(4242) $$; ALTER FUNCTION lock_quietly() ` +
        `OWNER TO quarry_test`,
    );
    const locked = await runner.run('postgres', { operation: 'query', sql: 'SELECT lock_quietly() AS locked' });
    expect(locked.ok).toBe(true);
    const held = await admin.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242");
    expect(held.rows[0].n).toBe(0);
    // With the check bypassed: a prepared statement and a setting do not outlive their statement either.
    const [config] = configsFor([url], dir);
    const driver = new PostgresDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    await driver.query('PREPARE kept AS SELECT 1', 10, { readOnly: true, signal });
    await driver.query("SELECT set_config('standard_conforming_strings', 'off', false)", 10, { readOnly: true, signal });
    const state = await driver.query(
      "SELECT (SELECT count(*) FROM pg_prepared_statements)::text, current_setting('standard_conforming_strings'), " +
        "current_setting('default_transaction_read_only')",
      10,
      { readOnly: true, signal },
    );
    expect(state.rows).toEqual([['0', 'on', 'on']]);
    await driver.close();
  });

  test('index maintenance functions, which change an index even in a read-only transaction, are refused', async () => {
    await admin.query(
      `DROP INDEX IF EXISTS audit_log_note_gin; CREATE INDEX audit_log_note_gin ON audit_log USING gin (to_tsvector('simple', ` +
        `coalesce(note, ''))) WITH (fastupdate = on);
      INSERT INTO audit_log (customer_id, action, note) VALUES (1, 'gin', 'pending words'); DELETE FROM audit_log WHERE action = 'gin'`,
    );
    const result = await runner.run('postgres', { operation: 'query', sql: "SELECT gin_clean_pending_list('audit_log_note_gin')" });
    expect(result.output).toMatch(/^refused: the function gin_clean_pending_list\(\)/);
    await admin.query('DROP INDEX audit_log_note_gin');
  });

  test('a function that writes, called from a SELECT, is refused by the read-only transaction', async () => {
    await admin.query(
      `CREATE OR REPLACE FUNCTION sneaky() RETURNS int LANGUAGE sql AS $$ DELETE FROM audit_log RETURNING 1 $$; ALTER FUNCTION sneaky() OWNER TO quarry_test`,
    );
    const before = await snapshot();
    const result = await runner.run('postgres', { operation: 'query', sql: 'SELECT sneaky()' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('cannot execute DELETE in a read-only transaction');
    expect(await snapshot()).toBe(before);
  });
});

describe('postgres read-only: EXPLAIN ANALYZE, setseed and the reads the check now allows', () => {
  test('EXPLAIN ANALYZE of a read runs it inside the read-only transaction and reports actual rows', async () => {
    const before = await snapshot();
    const text = await runner.run('postgres', { operation: 'query', sql: 'EXPLAIN ANALYZE SELECT * FROM customers WHERE id > 1' });
    expect(text.output).toMatch(/actual time=.* rows=2 loops=1/);
    const json = await runner.run('postgres', {
      operation: 'query',
      sql: 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) SELECT count(*) FROM audit_log',
    });
    expect(json.ok, json.output).toBe(true);
    expect(json.output).toContain('"Plan"');
    expect(await snapshot()).toBe(before);
  });

  test('ts_rewrite with constant tsqueries answers; with SQL text it is refused', async () => {
    const result = await runner.run('postgres', { operation: 'query', sql: "SELECT ts_rewrite('a & b'::tsquery, 'a'::tsquery, 'c'::tsquery)::text AS q" });
    expect(result.output).toContain("│ 'b' & 'c' │");
    const refused = await runner.run('postgres', { operation: 'query', sql: "SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''c''::tsquery')" });
    expect(refused.output).toMatch(/^refused: the function ts_rewrite\(\)/);
  });

  test('setseed() outlives the call (the rollback and DISCARD ALL keep it), so the check refuses it', async () => {
    const [config] = configsFor([url], dir);
    const driver = new PostgresDriver(config!, true);
    const signal = new AbortController().signal;
    const options = { readOnly: true, signal };
    await driver.connect(signal);
    // With the check bypassed: after setseed(0.25), the next call's random() is the seeded sequence's first value.
    const seeded = await admin.query('SELECT setseed(0.25), random()::text AS r');
    await driver.query('SELECT setseed(0.25)', 10, options);
    const next = await driver.query('SELECT random()::text', 10, options);
    expect(next.rows).toEqual([[seeded.rows[0].r]]);
    await driver.close();
    const refused = await runner.run('postgres', { operation: 'query', sql: 'SELECT setseed(0.25)' });
    expect(refused.output).toMatch(/^refused: the function setseed\(\)/);
  });
});

describe('postgres export_query', () => {
  test('a large export is byte-exact: every one of 300,000 rows as the server has it', async () => {
    // pg hands each COPY row as a view into a parse buffer that it reuses; a 1,000,000-row export
    // once came out with a few hundred rows cut into each other. pg-copy-out.test.ts reproduces
    // that deterministically; this checks a whole export end to end through the tool.
    await admin.query(
      `DROP TABLE IF EXISTS copy_rows; CREATE TABLE copy_rows AS SELECT i, md5(i::text) AS hash, repeat('x', i % 53) AS pad FROM generate_series(1, 300000) ` +
        `AS i; ALTER TABLE copy_rows OWNER TO quarry_test`,
    );
    try {
      const result = await runner.run('postgres', { operation: 'export_query', sql: 'SELECT * FROM copy_rows', output_path: 'exact.csv' });
      expect(result.ok, result.output).toBe(true);
      const lines = readFileSync(join(dir, 'exact.csv'), 'utf8').split('\r\n');
      expect(lines[0]).toBe('i,hash,pad');
      expect(lines.length).toBe(300_002);
      expect(lines[300_001]).toBe('');
      // Each line must be a whole row of its own (the scan order is the server's), and each row must appear once.
      const seen = new Set<number>();
      const wrong: string[] = [];
      for (const line of lines.slice(1, -1)) {
        const i = Number(line.slice(0, line.indexOf(',')));
        // PostgreSQL writes an empty string as "" (an empty field is NULL).
        const expected = `${i},${createHash('md5').update(String(i)).digest('hex')},${i % 53 ? 'x'.repeat(i % 53) : '""'}`;
        if ((line !== expected || seen.has(i)) && wrong.push(line) >= 5) break;
        seen.add(i);
      }
      expect(wrong).toEqual([]);
      expect(seen.size).toBe(300_000);
      expect(result.metadata).toMatchObject({ rows: 300_000 });
    } finally {
      await admin.query('DROP TABLE IF EXISTS copy_rows');
    }
  });

  test('quoting follows RFC 4180 and statements COPY cannot wrap go through a cursor', async () => {
    const quoted = await runner.run('postgres', {
      operation: 'export_query',
      sql: "SELECT 'a, \"b\"' AS x, E'two\\nlines' AS y, NULL AS z",
      output_path: 'quoted.csv',
    });
    expect(quoted.ok).toBe(true);
    expect(readFileSync(join(dir, 'quoted.csv'), 'utf8')).toBe('x,y,z\r\n"a, ""b""","two\nlines",\r\n');
    const shown = await runner.run('postgres', { operation: 'export_query', sql: 'SHOW server_encoding', output_path: 'show.csv' });
    expect(shown.ok).toBe(true);
    expect(readFileSync(join(dir, 'show.csv'), 'utf8')).toBe('server_encoding\r\nUTF8\r\n');
  });

  test.each(mutationCorpus('postgres').filter((sql) => sql.includes('TO STDOUT')))('export_query refuses %j and changes nothing', async (sql) => {
    const before = await snapshot();
    const result = await runner.run('postgres', { operation: 'export_query', sql, output_path: 'smuggled.csv' });
    expect(result.output).toMatch(/^refused/);
    expect(await snapshot()).toBe(before);
    expect(existsSync(join(dir, 'smuggled.csv'))).toBe(false);
  });

  test('the limit is applied inside the statement: the order and column names of the statement, a top-N sort in the plan', async () => {
    const sql = 'SELECT b.id, b.label AS id, b.amount FROM big b ORDER BY b.amount DESC, b.label';
    const expected = (await admin.query({ text: `${sql} LIMIT 7`, rowMode: 'array' })).rows.map((row: unknown[]) => row.map(String));
    const result = await runner.run('postgres', { operation: 'query', sql, row_limit: 7 });
    expect(result.metadata).toMatchObject({ rows: 7, more: true, columns: ['id', 'id', 'amount'] });
    expect(tableCells(result.output)).toEqual(expected);
    // What the tool sends for that call: the sort is bounded by the limit.
    const plan = await admin.query({ text: `EXPLAIN ANALYZE SELECT * FROM (\n${sql}\n) AS quarry_query LIMIT 8`, rowMode: 'array' });
    expect(plan.rows.map((row: unknown[]) => String(row[0])).join('\n')).toContain('top-N heapsort');
  });

  test('a refused statement is never wrapped in COPY', async () => {
    const result = await runner.run('postgres', {
      operation: 'export_query',
      sql: "SELECT 1) TO PROGRAM 'touch /tmp/quarry-evil' WITH (FORMAT csv",
      output_path: 'evil.csv',
    });
    expect(result.ok).toBe(false);
    expect(existsSync('/tmp/quarry-evil')).toBe(false);
    expect(existsSync(join(dir, 'evil.csv'))).toBe(false);
  });
});

describe('postgres mutations mode', () => {
  test('a data-modifying WITH, which cannot be wrapped with the limit, runs once by itself', async () => {
    const evalRunner = makeRunner(configsFor([url], dir), dir, 'eval');
    const result = await evalRunner.run('postgres', {
      operation: 'query',
      sql: "WITH added AS (INSERT INTO audit_log (customer_id, action) VALUES (2, 'eval-cte') RETURNING action) SELECT action FROM added",
    });
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain('│ eval-cte │');
    const count = await admin.query("SELECT count(*)::int AS n FROM audit_log WHERE action = 'eval-cte'");
    expect(count.rows[0].n).toBe(1);
    await admin.query("DELETE FROM audit_log WHERE action = 'eval-cte'");
  });
});
