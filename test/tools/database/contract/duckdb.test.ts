import { DuckDBInstance } from '@duckdb/node-api';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import type { DatabaseConfig } from '../../../../src/tools/database/types.js';
import { makeTempDir } from '../../../support/context.js';
import { configsFor, directoryFingerprint, makeRunner } from '../helpers.js';
import { driverContract } from './driver-contract.js';

/**
 * The shared driver contract on a real DuckDB database file (duckdb.test.ts holds what only DuckDB
 * over files shows). DuckDB locks the file while quarry has it open, so the reference reads go
 * to a copy of it, made at the time of the read.
 */
let dir: string;
let dbPath: string;
let configs: DatabaseConfig[];

/** Runs SQL in a DuckDB of its own: `attach` is attached as `d` (read-only unless `write`). */
async function reference<T>(attach: string, sql: string, write = false): Promise<T[][]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(`ATTACH '${attach}' AS d${write ? '' : ' (READ_ONLY)'}; USE d`);
    const reader = await connection.runAndReadAll(sql);
    return reader.getRowsJS() as T[][];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** A copy of the database as it is now (with its write-ahead log, where there is one). */
function copyOfDatabase(): string {
  const copies = makeTempDir('quarry-duckdb-copy-');
  const copy = join(copies, 'copy.duckdb');
  copyFileSync(dbPath, copy);
  if (existsSync(`${dbPath}.wal`)) copyFileSync(`${dbPath}.wal`, `${copy}.wal`);
  return copy;
}

beforeAll(async () => {
  dir = makeTempDir();
  mkdirSync(join(dir, 'db'));
  dbPath = join(dir, 'db', 'contract.duckdb');
  await reference(
    dbPath,
    `CREATE SEQUENCE customers_id START 1;
     CREATE TABLE customers (id INTEGER PRIMARY KEY DEFAULT nextval('customers_id'), name VARCHAR NOT NULL, email VARCHAR UNIQUE, note VARCHAR,
       created_at DATE DEFAULT DATE '2024-01-01');
     CREATE SEQUENCE audit_log_id START 1;
     CREATE TABLE audit_log (id INTEGER PRIMARY KEY DEFAULT nextval('audit_log_id'), customer_id INTEGER REFERENCES customers(id), action VARCHAR NOT NULL,
       update_count INTEGER NOT NULL DEFAULT 0, deleted_flag BOOLEAN NOT NULL DEFAULT false, note VARCHAR);
     INSERT INTO customers (name, email, note, created_at) VALUES ('Ada', 'ada@example.com', NULL, '2024-01-02'),
       ('Bob', 'bob@example.com', 'line one' || chr(10) || 'line two', '2024-02-03'), ('Cyd', 'cyd@example.com', 'a, b', '2024-03-04');
     INSERT INTO audit_log (customer_id, action, update_count, note) VALUES (1, 'DELETE', 3, 'x'), (2, 'UPDATE', 1, NULL), (3, 'INSERT', 0, 'drop table');
     CREATE TABLE big AS SELECT range::INTEGER AS id, 'row ' || range AS label, (range / 4)::DECIMAL(12, 2) AS amount FROM range(1, 20001);
     CHECKPOINT`,
    true,
  );
  configs = configsFor([`shop=${dbPath}`], dir);
});

driverContract(
  {
    tool: 'duckdb',
    exact: {
      sql: "SELECT 12345678901234567890.123456789::DECIMAL(38, 9) AS n, 9223372036854775807::BIGINT AS b, DATE '2024-02-29' AS d, NULL AS z",
      line: '│ 12345678901234567890.123456789 │ 9223372036854775807 │ 2024-02-29 │ NULL │',
    },
    listTables: { pattern: '%o%', shows: [/│ audit_log +│ table +│/] },
    describe: { table: 'audit_log', shows: [/│ update_count +│ INTEGER +│ no +│ 0 +│/, 'primary key: id'] },
    slow: { sql: 'SELECT sum(a.range * b.range) FROM range(1000000) a, range(1000000) b', marker: 'range(1000000) a' },
    // The check answers FORCE INSTALL with 'syntax error: "FORCE" … does not begin any SQL statement'.
    alsoRefusedAs: /^syntax error: "FORCE" at character 1 does not begin any SQL statement/,
    failingExport: { sql: "SELECT CASE WHEN id = 19000 THEN error('broken at 19000') ELSE id END FROM big ORDER BY id", says: 'broken at 19000' },
  },
  () => ({
    configs,
    dir,
    snapshot: async () => directoryFingerprint(join(dir, 'db')),
    // DuckDB's own COPY ends records with LF; the rows hold no line breaks.
    clientCsv: async (sql) => {
      const out = join(makeTempDir('quarry-duckdb-copy-'), 'reference.csv');
      await reference(copyOfDatabase(), `COPY (${sql}) TO '${out}' (HEADER, FORMAT csv)`);
      return readFileSync(out, 'utf8').replace(/\n/g, '\r\n');
    },
    countAction: async (action) => Number((await reference<bigint>(copyOfDatabase(), `SELECT count(*) FROM audit_log WHERE action = '${action}'`))[0]![0]),
    // The file is quarry's while its connection is open: the eval profile removes what it added.
    removeAction: async (action) => {
      await makeRunner(configs, dir, 'eval').run('duckdb', { operation: 'query', sql: `DELETE FROM audit_log WHERE action = '${action}'` });
    },
  }),
);
