import Database from 'better-sqlite3';
import { join } from 'node:path';

/** The corpus schema in a fresh SQLite file: customers (AUTOINCREMENT), audit_log, a view, an index. */
export function createSqliteFixture(dir: string, name = 'shop.db'): string {
  const path = join(dir, name);
  const db = new Database(path);
  db.exec(`
    CREATE TABLE customers (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, email TEXT UNIQUE, note TEXT, created_at TEXT DEFAULT '2024-01-01');
    CREATE TABLE audit_log (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id) ON DELETE CASCADE, action TEXT NOT NULL,
      update_count INTEGER NOT NULL DEFAULT 0, deleted_flag INTEGER NOT NULL DEFAULT 0, note TEXT);
    CREATE INDEX audit_log_action ON audit_log(action, customer_id);
    CREATE VIEW big_spenders AS SELECT id, name FROM customers WHERE id > 1;
    INSERT INTO customers (name, email, note, created_at) VALUES
      ('Ada', 'ada@example.com', NULL, '2024-01-02'),
      ('Bob', 'bob@example.com', 'line one
line two', '2024-02-03'),
      ('Cyd "the kid"', 'cyd@example.com', 'a, b', '2024-03-04');
    INSERT INTO audit_log (customer_id, action, update_count, note) VALUES (1, 'DELETE', 3, 'x'), (2, 'UPDATE', 1, NULL), (3, 'INSERT', 0, 'drop table');
  `);
  db.close();
  return path;
}
