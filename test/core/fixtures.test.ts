import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

type Row = Record<string, unknown>;

function snapshot(path: string): Record<string, Row[]> {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as Array<{
      name: string;
    }>;
    return Object.fromEntries(tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}" ORDER BY 1`).all() as Row[]]));
  } finally {
    db.close();
  }
}

describe('the bundled sample database', () => {
  const committed = join(REPO_ROOT, 'fixtures', 'sample.db');

  it('is what the generator produces, row for row', () => {
    const fresh = join(makeTempDir(), 'sample.db');
    execFileSync(process.execPath, [join(REPO_ROOT, 'fixtures', 'generate.mjs'), fresh], { stdio: 'pipe' });
    expect(snapshot(fresh)).toEqual(snapshot(committed));
  });

  it('has a few thousand consistent rows', () => {
    const db = new Database(committed, { readonly: true });
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    expect(count('SELECT COUNT(*) AS n FROM customers')).toBe(600);
    expect(count('SELECT COUNT(*) AS n FROM products')).toBe(120);
    expect(count('SELECT COUNT(*) AS n FROM orders')).toBe(4000);
    expect(count('SELECT COUNT(*) AS n FROM order_items')).toBeGreaterThan(8000);
    expect(count('SELECT COUNT(*) AS n FROM orders o LEFT JOIN customers c ON c.id = o.customer_id WHERE c.id IS NULL')).toBe(0);
    expect(count('SELECT COUNT(*) AS n FROM order_items i LEFT JOIN products p ON p.id = i.product_id WHERE p.id IS NULL')).toBe(0);
    expect(count("SELECT COUNT(DISTINCT strftime('%Y', ordered_at)) AS n FROM orders")).toBe(4);
    db.close();
  });
});
