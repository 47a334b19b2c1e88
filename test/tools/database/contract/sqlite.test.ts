import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll } from 'vitest';
import type { DatabaseConfig } from '../../../../src/tools/database/types.js';
import { makeTempDir } from '../../../support/context.js';
import { configsFor, directoryFingerprint } from '../helpers.js';
import { createSqliteFixture } from '../sqlite-fixture.js';
import { driverContract } from './driver-contract.js';

/** The shared driver contract on a real SQLite file (sqlite.test.ts holds what only SQLite shows). */
let dir: string;
let dbPath: string;
let configs: DatabaseConfig[];

beforeAll(() => {
  dir = makeTempDir();
  const dbDir = join(dir, 'db');
  mkdirSync(dbDir);
  dbPath = createSqliteFixture(dbDir, 'contract.db');
  const db = new Database(dbPath);
  // SQLite has no fixed-point type: amount is the text the other engines show for DECIMAL(12, 2).
  db.exec(`
    CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT, amount TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 20000)
    INSERT INTO big SELECT i, 'row ' || i, printf('%.2f', i / 4.0) FROM n;
  `);
  db.close();
  configs = configsFor([`shop=${dbPath}`], dir);
});

driverContract(
  {
    tool: 'sqlite',
    exact: {
      sql: "SELECT 9007199254740993 AS b, '2024-02-29' AS d, NULL AS z, 0.1 + 0.2 AS f",
      line: '│ 9007199254740993 │ 2024-02-29 │ NULL │ 0.30000000000000004 │',
    },
    listTables: { pattern: '%o%', shows: [/│ main +│ audit_log +│ table │/] },
    describe: {
      table: 'audit_log',
      shows: [
        '│ update_count │ INTEGER │ no       │ 0       │     │',
        'primary key: id',
        'foreign keys: \n  customer_id -> customers(id) ON DELETE CASCADE',
        'indexes: \n  audit_log_action (action, customer_id)',
      ],
    },
    slow: { sql: 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n', marker: 'RECURSIVE n(i)' },
    insertSays: 'The statement ran and returned no rows (1 row affected).',
    failingExport: { sql: `SELECT json_extract(CASE WHEN id = 19000 THEN 'bad' ELSE '{"a":1}' END, '$.a') FROM big ORDER BY id`, says: 'malformed JSON' },
  },
  () => ({
    configs,
    dir,
    snapshot: async () => directoryFingerprint(join(dir, 'db')),
    // The sqlite3 shell's list mode with a comma and CRLF: its csv mode quotes every text with a
    // space ("row 1"), which CSV allows but does not need; these rows hold no comma, quote or line break.
    clientCsv: async (sql) =>
      execFileSync('sqlite3', ['-readonly', '-header', '-list', '-separator', ',', '-newline', '\r\n', dbPath, sql], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }),
    countAction: async (action) => {
      const db = new Database(dbPath, { readonly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM audit_log WHERE action = ?').get(action) as { n: number }).n;
      } finally {
        db.close();
      }
    },
    removeAction: async (action) => {
      const db = new Database(dbPath);
      db.prepare('DELETE FROM audit_log WHERE action = ?').run(action);
      db.close();
    },
  }),
);
