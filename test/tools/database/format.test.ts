import Database from 'better-sqlite3';
import Table from 'cli-table3';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { listTables } from '../../../src/tools/database/catalog/search.js';
import { cellText, formatDescription, formatQueryResult, formatTable, TABLE_BUDGET_BYTES } from '../../../src/tools/database/format.js';
import type { DatabaseDriver } from '../../../src/tools/database/types.js';
import type { CellValue } from '../../../src/tools/database/types.js';
import { MAX_TOOL_OUTPUT_BYTES } from '../../../src/tools/core/sanitize.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, makeRunner } from './helpers.js';

/** cli-table3's compact table: the reference the renderer must match wherever everything fits. */
function referenceTable(columns: string[], rows: CellValue[][]): string {
  const table = new Table({ head: columns.map((column) => cellText(column)), style: { head: [], border: [], compact: true }, wordWrap: false });
  for (const row of rows) table.push(row.map(cellText));
  return table.toString();
}

/** Rows whose cells count how often they are read. */
function countingRows(rowCount: number, columnCount: number): { rows: CellValue[][]; reads: () => number } {
  let reads = 0;
  const rows = Array.from({ length: rowCount }, (_, i) => {
    const values = Array.from({ length: columnCount }, (_, j) => i * j);
    return new Proxy(values, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    }) as CellValue[];
  });
  return { rows, reads: () => reads };
}

const columnNames = (count: number) => Array.from({ length: count }, (_, j) => `c${j}`);

describe('formatTable', () => {
  test('matches cli-table3 byte for byte on random tables that fit (NULL, wide characters, escapes)', () => {
    const alphabet = ['a', 'Z', '9', ' ', '日本', 'é', '😀', '\n', '\t', 'x\u001by', '"', '…'];
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 200; round++) {
      const columns = Array.from({ length: 1 + random(6) }, (_, j) => `col${j}${alphabet[random(alphabet.length)]}`);
      const rows: CellValue[][] = Array.from({ length: random(8) }, () =>
        columns.map(() => (random(5) === 0 ? null : Array.from({ length: random(6) }, () => alphabet[random(alphabet.length)]).join(''))),
      );
      const table = formatTable(columns, rows);
      expect(table.text).toBe(referenceTable(columns, rows));
      expect(table).toMatchObject({ rows: rows.length, columns: columns.length });
    }
  });

  test('101 x 1,000 columns: data rows shown within the budget, and what was left out is named', () => {
    const columns = columnNames(1000);
    const { rows } = countingRows(101, 1000);
    const table = formatTable(columns, rows);
    expect(Buffer.byteLength(table.text)).toBeLessThanOrEqual(TABLE_BUDGET_BYTES);
    expect(table.rows).toBeGreaterThanOrEqual(20);
    expect(table.columns).toBeGreaterThan(100);
    const lines = table.text.split('\n');
    // Row 19 (0-based) is on the 23rd line: top rule, header, rule, rows 0..19.
    expect(lines[3]!.startsWith('│ 0  │ 0  │')).toBe(true);
    expect(lines[22]).toContain(`│ ${19 * (table.columns - 1)} `);
    const output = formatQueryResult(columns, rows, false, 1000);
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(MAX_TOOL_OUTPUT_BYTES);
    expect(output).toContain(
      `showing ${table.rows} of 101 fetched rows and ${table.columns} of 1,000 columns (columns from "c${table.columns}" on are not shown)`,
    );
    expect(output).toContain('name fewer columns in the SELECT');
    expect(output.endsWith('(101 rows)')).toBe(true);
  });

  test('cells read grow with what is shown, not with the result: 50 vs 500 vs 5,000 columns', () => {
    const reads = [50, 500, 5000].map((count) => {
      const { rows, reads: counted } = countingRows(101, count);
      formatTable(columnNames(count), rows);
      return counted();
    });
    // 50 columns fit whole (101 x 50 cells, each read once); wider results read about as many.
    expect(reads[0]).toBe(101 * 50);
    expect(reads[1]).toBeLessThanOrEqual(reads[0]! * 1.5);
    expect(reads[2]).toBeLessThanOrEqual(reads[1]! * 1.05);
  });

  test('header names are the only per-column work: each is read a bounded number of times', () => {
    const headerReads = (count: number) => {
      let reads = 0;
      const columns = new Proxy(columnNames(count), {
        get(target, key, receiver) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
      formatTable(columns, countingRows(101, count).rows);
      return reads;
    };
    // Counted, not timed: work that grew faster than the columns would show here on any machine.
    const small = headerReads(1000);
    const large = headerReads(10000);
    expect(small).toBeLessThanOrEqual(1000 * 4);
    expect(large).toBeLessThanOrEqual(10000 * 4);
    expect(large).toBeGreaterThanOrEqual(10000);
  });
});

describe('list_tables and describe keep totals and keys ahead of the bulk', () => {
  /** A driver whose catalogue holds `total` tables and answers list_tables' statement as the engine would: at most 200 rows. */
  const catalogue = (total: number, row: (i: number) => unknown[]) =>
    ({
      catalog: async (sql: string) => {
        expect(sql).toMatch(/LIMIT 200$/);
        return Array.from({ length: Math.min(total, 200) }, (_, i) => [...row(i), total]);
      },
    }) as unknown as DatabaseDriver;
  const signal = new AbortController().signal;

  test('20,000 tables: the total comes first, then at most 200, then how many were left out and how to find the rest', async () => {
    const listed = await listTables(
      'postgres',
      catalogue(20000, (i) => ['main', `t${String(i).padStart(5, '0')}`, 'table', 1000 + i, null]),
      undefined,
      { readOnly: true, signal },
    );
    const text = listed.text;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_TOOL_OUTPUT_BYTES);
    expect(
      text.startsWith(
        '(20,000 tables and views; showing the first 200: use operation search {pattern} to find tables by name, column or comment, or table_pattern, e.g. ' +
          '"t00%"',
      ),
    ).toBe(true);
    expect(text).toContain('│ main   │ t00199 │ table │ ~1,199      │         │');
    expect(text.endsWith('(19,800 more not shown: narrow with search or table_pattern)')).toBe(true);
  });

  test('a small list shows everything with its total, estimates and comments', async () => {
    const listed = await listTables(
      'mysql',
      catalogue(1, () => ['public', 'orders', 'table', 1234, 'One row per order']),
      'ord%',
      { readOnly: true, signal },
    );
    expect(listed.text).toBe(
      [
        '(1 table or view matches "ord%"; row counts are estimates (information_schema.TABLES.TABLE_ROWS))',
        '┌────────┬────────┬───────┬─────────────┬───────────────────┐',
        '│ schema │ name   │ type  │ rows (est.) │ comment           │',
        '├────────┼────────┼───────┼─────────────┼───────────────────┤',
        '│ public │ orders │ table │ ~1,234      │ One row per order │',
        '└────────┴────────┴───────┴─────────────┴───────────────────┘',
      ].join('\n'),
    );
  });

  test('describe of 1,500 columns: primary key, foreign keys and indexes come before the columns', () => {
    const columns = Array.from({ length: 1500 }, (_, j) => ({ name: `k${j}`, type: 'TEXT', nullable: j !== 0, default: null, primaryKey: j === 0 }));
    const text = formatDescription({ schema: 'main', name: 'big', columns, primaryKey: ['k0'], foreignKeys: ['k1 -> other(id)'], indexes: ['big_k5 (k5)'] });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_TOOL_OUTPUT_BYTES);
    expect(text.split('\n').slice(0, 6)).toEqual([
      'main.big: 1,500 columns',
      'primary key: k0',
      'foreign keys: ',
      '  k1 -> other(id)',
      'indexes: ',
      '  big_k5 (k5)',
    ]);
    const shown = Number(/showing ([\d,]+) of 1,500 columns/.exec(text)![1]!.replace(/,/g, ''));
    expect(shown).toBeGreaterThan(500);
    expect(text).toContain(`│ k${shown - 1} `);
    expect(text).toContain(`more from "k${shown}" on`);
  });
});

describe('through the sqlite tool', () => {
  let runner: ReturnType<typeof makeRunner>;
  beforeAll(() => {
    const dir = makeTempDir();
    const db = new Database(join(dir, 'wide.db'));
    db.exec(
      `CREATE TABLE w (${columnNames(1000)
        .map((name) => `${name} INTEGER`)
        .join(', ')})`,
    );
    const insert = db.prepare(
      `INSERT INTO w VALUES (${columnNames(1000)
        .map(() => '?')
        .join(', ')})`,
    );
    for (let i = 0; i < 101; i++) insert.run(columnNames(1000).map((_, j) => i * 1000 + j));
    db.exec(`CREATE TABLE big (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES w(c0), ${Array.from({ length: 1500 }, (_, j) => `k${j} TEXT`).join(', ')})`);
    db.exec('CREATE INDEX big_k5 ON big(k5)');
    db.close();
    runner = makeRunner(configsFor(['wide.db'], dir), dir);
  });

  test('query of 101 x 1,000 columns shows data rows and says which columns were left out', async () => {
    const result = await runner.run('sqlite', { operation: 'query', sql: 'SELECT * FROM w', row_limit: 1000 });
    expect(result.ok).toBe(true);
    expect(result.output).not.toContain('[output cut');
    expect(result.output).toMatch(/│ 0 +│ 1 +│ 2 +│/);
    expect(result.output).toMatch(/│ 19000 │ 19001 +│/);
    expect(result.output).toMatch(/showing 20 of 101 fetched rows and \d+ of 1,000 columns/);
    expect(result.output.endsWith('(101 rows)')).toBe(true);
  });

  test('describe of 1,502 columns keeps the primary key, foreign key and index', async () => {
    const result = await runner.run('sqlite', { operation: 'describe', table_name: 'big' });
    expect(result.ok).toBe(true);
    expect(result.output).not.toContain('[output cut');
    expect(result.output).toContain('primary key: id');
    expect(result.output).toContain('parent -> w(c0)');
    expect(result.output).toContain('big_k5 (k5)');
    expect(result.output).toMatch(/showing [\d,]+ of 1,502 columns/);
  });
});
