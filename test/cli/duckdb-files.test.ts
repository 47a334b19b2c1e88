// CSV files through DuckDB in the built CLI: reader options in the config, what describe says DuckDB
// detected and where the guess is doubtful, and a view defined once with what was detected.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

let dir: string;
let home: string;

/** Superstore-like orders: day-first dates with two-digit years (dd/mm/yy), as the public file has them. */
function dayFirstOrders(): string {
  const lines = ['Row ID,Order ID,Order Date,Ship Date,Sales'];
  const pad = (n: number) => String(n).padStart(2, '0');
  const dmy = (d: Date) => `${pad(d.getUTCDate())}/${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCFullYear() % 100)}`;
  for (let i = 0; i < 400; i++) {
    const ordered = new Date(Date.UTC(2017, 0, 1) + ((i * 3.65) | 0) * 86_400_000);
    const shipped = new Date(ordered.getTime() + (i % 6) * 86_400_000);
    lines.push(`${i + 1},CA-${2017 + (i % 4)}-${100000 + i * 7},${dmy(ordered)},${dmy(shipped)},${(i * 13.37 + 2.5).toFixed(2)}`);
  }
  return `${lines.join('\n')}\n`;
}

beforeAll(() => {
  dir = makeTempDir();
  home = makeTempDir('quarry-home-');
  writeFileSync(join(dir, 'superstore.csv'), dayFirstOrders());
  // A quote opened in a field and never closed: the rest of the file is one quoted field.
  writeFileSync(join(dir, 'broken.csv'), 'id,name,city\n1,"Smith, J,London\n2,Ann,Paris\n3,Bob,Rome\n');
  writeFileSync(join(dir, 'empty.csv'), '');
  writeFileSync(
    join(dir, 'db.yaml'),
    [
      'databases:',
      '  shop:',
      '    type: duckdb',
      '    files:',
      '      guessed: superstore.csv',
      "      orders: {path: superstore.csv, options: {dateformat: '%d/%m/%y'}}",
      '      broken: broken.csv',
      '      empty: empty.csv',
      '',
    ].join('\n'),
  );
});

async function duckdb(args: Record<string, unknown>, config = 'db.yaml') {
  return runQuarry(['tool', 'duckdb', '--databases', config, '--args', JSON.stringify(args), '-w', dir], {
    cwd: dir,
    env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined },
    timeoutMs: 60_000,
  });
}

async function duckdbQuery(file: string, sql: string): Promise<string> {
  const result = await runQuarry(['tool', 'duckdb', '--db', file, '--args', JSON.stringify({ operation: 'query', sql }), '-w', dir], {
    cwd: dir,
    env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined },
    timeoutMs: 60_000,
  });
  expect(result.code).toBe(0);
  return result.stdout;
}

describe('DuckDB file views in the built CLI', () => {
  it('describe warns that day-first dates were read year-first and names the option; with dateformat the dates are right', async () => {
    const guessed = await duckdb({ operation: 'describe', table_name: 'guessed' });
    expect(guessed.code).toBe(0);
    expect(guessed.stdout).toContain('detected by DuckDB: delimiter ",", quote none, escape none, header yes, date format %y/%m/%d, timestamp format none');
    expect(guessed.stdout).toMatch(
      /warning: "Order Date": every value also reads as %d\/%m\/%y \(2017-01-01 … 2020-12-2\d\).*; DuckDB chose %y\/%m\/%d \(2001-\d\d-\d\d … 2031-\d\d-\d\d\)\. If that is wrong, set options: \{dateformat: '%d\/%m\/%y'\} on this view/,
    );
    const orders = await duckdb({ operation: 'describe', table_name: 'orders' });
    expect(orders.stdout).toContain("options given: dateformat='%d/%m/%y'");
    expect(orders.stdout).not.toContain('warning');
    const range = await duckdb({
      operation: 'query',
      sql: 'SELECT min("Order Date")::VARCHAR AS lo, max("Order Date")::VARCHAR AS hi, count(*) AS n FROM orders',
    });
    expect(range.stdout).toMatch(/│ 2017-01-01 │ 2020-12-2\d │ 400 │/);
  });

  it('describe says when a broken quote made the file one column, and when the file is empty', async () => {
    const broken = await duckdb({ operation: 'describe', table_name: 'broken' });
    expect(broken.stdout).toContain('main.broken: 1 column');
    expect(broken.stdout).toContain('warning: the file became one column, though its first line holds ",": a quote that never closes');
    const empty = await duckdb({ operation: 'describe', table_name: 'empty' });
    expect(empty.stdout).toContain('warning: the file is empty (0 bytes): the view has no rows');
  });

  it('the view is defined with what was detected, so statements do not sniff the file again', async () => {
    const views = await duckdb({
      operation: 'query',
      sql: "SELECT view_name, sql LIKE '%auto_detect = CAST(''f''%' AS fixed FROM duckdb_views() WHERE NOT internal ORDER BY 1",
    });
    expect(views.stdout).toMatch(/│ broken +│ true +│/);
    expect(views.stdout).toMatch(/│ guessed +│ true +│/);
    expect(views.stdout).toMatch(/│ orders +│ true +│/);
  });

  it('a large file: its dialect found in its head, the types as DuckDB finds them in the whole file, no temporary file left', async () => {
    // 300 columns x 1,500 rows (about 3 MB, over the 2 MiB sniffed whole), quoted text with commas, a date column.
    const lines = [['id', 'name', 'when', ...Array.from({ length: 297 }, (_, i) => `v${i}`)].join(',')];
    for (let r = 0; r < 1500; r++)
      lines.push(
        [r, `"Smith, ${r}"`, `2021-${String(1 + (r % 12)).padStart(2, '0')}-15`, ...Array.from({ length: 297 }, (_, i) => ((r * 31 + i * 7) % 1000) / 8)].join(
          ',',
        ),
      );
    writeFileSync(join(dir, 'large.csv'), `${lines.join('\n')}\n`);
    const tmp = makeTempDir('quarry-tmp-');
    const result = await runQuarry(
      ['tool', 'duckdb', '--db', join(dir, 'large.csv'), '--args', JSON.stringify({ operation: 'describe', table_name: 'large' }), '-w', dir],
      { cwd: dir, env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined, TMPDIR: tmp }, timeoutMs: 60_000 },
    );
    expect(result.code).toBe(0);
    // What DuckDB's sniff_csv finds in the whole file (checked against it: the same dialect and formats).
    expect(result.stdout).toContain('detected by DuckDB: delimiter ",", quote "\\"", escape none, header yes, date format %Y-%m-%d');
    expect(result.stdout).toMatch(/│ name +│ VARCHAR +│/);
    expect(result.stdout).toMatch(/│ when +│ DATE +│/);
    expect(result.stdout).toMatch(/│ v0 +│ DOUBLE +│/);
    expect(readdirSync(tmp)).toEqual([]);
    const names = await duckdbQuery(join(dir, 'large.csv'), 'SELECT count(*) AS n, count(DISTINCT name) AS names, min(name) AS first FROM large');
    expect(names).toMatch(/│ 1500 │ 1500 +│ Smith, 0 +│/);
  });

  it('an unknown reader option is a one-line error naming it and the allowed ones (exit 2)', async () => {
    writeFileSync(join(dir, 'bad.yaml'), 'databases:\n  shop:\n    type: duckdb\n    files:\n      orders: {path: superstore.csv, options: {date_fmt: x}}\n');
    const result = await duckdb({ operation: 'list_tables' }, 'bad.yaml');
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /databases\.shop\.files\.orders\.options: unknown read_csv option "date_fmt"; allowed: all_varchar, .*dateformat, .*timestampformat/,
    );
  });
});
