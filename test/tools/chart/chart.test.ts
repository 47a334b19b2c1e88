import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { PNG } from 'pngjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_CHART_ROWS } from '../../../src/tools/chart/data.js';
import { MAX_CATEGORIES } from '../../../src/tools/chart/spec.js';
import { cliEnv, runCli } from '../../support/agent-cli.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, directoryFingerprint, makeRunner } from '../database/helpers.js';

/**
 * The chart tool on the real packages (vega, vega-lite, resvg): every type from SQLite and from
 * CSV; the SVG parsed for axis titles, the number of marks and a zero baseline; the PNG decoded
 * for its size and for drawn pixels; type inference, the caps, refusals and escaping.
 */

let dir: string;
let dbDir: string;
let run: ReturnType<typeof makeRunner>['run'];

beforeAll(() => {
  dir = makeTempDir('quarry-chart-');
  dbDir = makeTempDir('quarry-chart-db-');
  const db = new Database(join(dbDir, 'shop.db'));
  db.exec(`
    CREATE TABLE sales (day TEXT, region TEXT, product TEXT, amount REAL, units INTEGER);
    CREATE TABLE many (category TEXT, value INTEGER);
    CREATE TABLE huge (n INTEGER);
    CREATE TABLE odd (label TEXT, value INTEGER);
  `);
  const insert = db.prepare('INSERT INTO sales VALUES (?, ?, ?, ?, ?)');
  const regions = ['north', 'south', 'east', 'west'];
  for (let i = 0; i < 120; i++)
    insert.run(
      `2024-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + Math.floor(i / 12)).padStart(2, '0')}`,
      regions[i % 4],
      `p${i % 7}`,
      1000 + i * 37.5,
      1 + (i % 9),
    );
  const many = db.prepare('INSERT INTO many VALUES (?, ?)');
  for (let i = 0; i < 50; i++) many.run(`cat${String(i).padStart(2, '0')}`, 100 - i);
  db.prepare(`WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${MAX_CHART_ROWS + 5}) INSERT INTO huge SELECT n FROM s`).run();
  db.prepare('INSERT INTO odd VALUES (?, ?)').run('<script>alert(1)</script>', 5);
  db.prepare('INSERT INTO odd VALUES (?, ?)').run('Tom & "Jerry"', 7);
  db.close();
  run = makeRunner(configsFor([`shop=${join(dbDir, 'shop.db')}`], dir), dir, 'developer').run;
});

interface Svg {
  text: string;
  marks(kind: string): number;
  axisTitles(): string[];
  axisLabels(): string[][];
}

function svgOf(path: string): Svg {
  const text = readFileSync(path, 'utf8');
  const groups = (cls: string) => [...text.matchAll(new RegExp(`<g class="${cls}[^"]*"[^>]*>(.*?)</g>`, 'gs'))].map((match) => match[1]!);
  const texts = (body: string) => [...body.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((match) => match[1]!);
  return {
    text,
    marks: (kind) => groups(`mark-${kind} role-mark`).reduce((sum, body) => sum + (body.match(/<path/g)?.length ?? 0), 0),
    axisTitles: () => groups('mark-text role-axis-title').flatMap(texts),
    axisLabels: () => groups('mark-text role-axis-label').map(texts),
  };
}

function pngInfo(path: string): { width: number; height: number; drawn: number } {
  const png = PNG.sync.read(readFileSync(path));
  let drawn = 0;
  for (let i = 0; i < png.data.length; i += 4) if (png.data[i]! < 240 || png.data[i + 1]! < 240 || png.data[i + 2]! < 240) drawn++;
  return { width: png.width, height: png.height, drawn: drawn / (png.width * png.height) };
}

async function chart(args: Record<string, unknown>) {
  const result = await run('chart', args);
  return result;
}

describe('chart types, from SQLite', () => {
  it('bar: one bar per category, summed, starting at zero, axes titled with the columns; SVG, PNG and spec written', async () => {
    const result = await chart({ sql: 'SELECT region, amount FROM sales', x: 'region', y: 'amount', output_path: 'bar.png', title: 'Amount by region' });
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain('Drew a bar chart (type chosen: x holds categories) titled "Amount by region" from 120 rows');
    expect(result.output).toContain('amount summed per region');
    const svg = svgOf(join(dir, 'bar.svg'));
    expect(svg.marks('rect')).toBe(4);
    expect(svg.axisTitles()).toEqual(['region', 'amount']);
    const yLabels = svg.axisLabels().find((labels) => labels.includes('0'));
    expect(yLabels, 'the y axis starts at 0').toBeDefined();
    expect(
      yLabels!.some((label) => /^\d{1,3}(,\d{3})+$/.test(label)),
      `thousands separators in ${yLabels}`,
    ).toBe(true);
    const png = pngInfo(join(dir, 'bar.png'));
    expect(png.width).toBeGreaterThan(1000);
    expect(png.height).toBeGreaterThan(700);
    expect(png.drawn).toBeGreaterThan(0.03);
    const spec = JSON.parse(readFileSync(join(dir, 'bar.vl.json'), 'utf8'));
    expect(spec.mark.type).toBe('bar');
    expect(spec.encoding.y.scale.zero).toBe(true);
    expect(spec.data.values).toHaveLength(120);
    expect(result.metadata.files).toEqual([join(dir, 'bar.svg'), join(dir, 'bar.png'), join(dir, 'bar.vl.json')]);
  });

  it('line with colour series over dates; area; point; histogram; heatmap', async () => {
    const line = await chart({
      sql: 'SELECT substr(day, 1, 7) AS month, region, SUM(amount) AS total FROM sales GROUP BY 1, 2',
      x: 'month',
      y: 'total',
      color: 'region',
      output_path: 'line.svg',
    });
    expect(line.ok, line.output).toBe(true);
    expect(line.output).toContain('Drew a line chart (type chosen: x holds dates)');
    expect(line.output).toContain('x (month): from 2024-01 to 2024-12');
    expect(line.output).toContain('4 series by region: ');
    expect(svgOf(join(dir, 'line.svg')).marks('line')).toBe(4);
    expect(svgOf(join(dir, 'line.svg')).axisLabels().flat()).toEqual(expect.arrayContaining(['2024']));

    const area = await chart({ type: 'area', sql: 'SELECT day, SUM(units) AS units FROM sales GROUP BY day', x: 'day', y: 'units', output_path: 'area.png' });
    expect(area.ok, area.output).toBe(true);
    expect(svgOf(join(dir, 'area.svg')).marks('area')).toBe(1);

    const point = await chart({ sql: 'SELECT units, amount FROM sales', x: 'units', y: 'amount', output_path: 'point.png' });
    expect(point.output).toContain('Drew a point chart (type chosen: x and y are both numbers)');
    expect(svgOf(join(dir, 'point.svg')).marks('symbol')).toBe(120);

    const histogram = await chart({ sql: 'SELECT amount FROM sales', x: 'amount', output_path: 'hist.png' });
    expect(histogram.output).toContain('Drew a histogram chart (type chosen: x is a number and there is no y)');
    const bins = svgOf(join(dir, 'hist.svg')).marks('rect');
    expect(bins).toBeGreaterThan(5);
    expect(bins).toBeLessThanOrEqual(30);

    const heatmap = await chart({ sql: 'SELECT region, product FROM sales', x: 'region', y: 'product', output_path: 'heat.png' });
    expect(heatmap.output).toContain('Drew a heatmap chart (type chosen: x and y are both categories)');
    expect(svgOf(join(dir, 'heat.svg')).marks('rect')).toBe(28);
    expect(pngInfo(join(dir, 'heat.png')).drawn).toBeGreaterThan(0.05);
  });
});

describe('chart from CSV', () => {
  it('reads an export-style CSV (CRLF, quotes) and infers the types from the text', async () => {
    writeFileSync(join(dir, 'in.csv'), 'month,"revenue, eur"\r\n2024-01,1200.5\r\n2024-02,980\r\n2024-03,"1,500"\r\n'.replace('"1,500"', '1500'));
    const result = await chart({ csv_path: 'in.csv', x: 'month', y: 'revenue, eur', output_path: 'csv.png' });
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain('Drew a line chart');
    expect(result.output).toContain('from 3 rows of in.csv');
    expect(result.output).toContain('y (revenue, eur): from 980 to 1,500');
    expect(svgOf(join(dir, 'csv.svg')).axisTitles()).toEqual(['month', 'revenue, eur']);
    writeFileSync(join(dir, 'cats.csv'), 'fruit,n\napple,3\npear,5\nplum,1\n');
    const bars = await chart({ csv_path: 'cats.csv', x: 'fruit', y: 'n', output_path: 'cats.png' });
    expect(svgOf(join(dir, 'cats.svg')).marks('rect')).toBe(3);
    expect(bars.output).toContain('y (n): from 1 to 5');
  });

  it('kernel pseudo-files and binary files are no CSV: quarry\'s environment never reaches the model through the "columns" error (red team)', async () => {
    process.env.QUARRY_RED_TEAM_API_KEY = 'sekrit-red-team-4242';
    process.env.QUARRY_RED_TEAM_MULTILINE = 'line1\nline2,x';
    try {
      symlinkSync('/proc/self/environ', join(dir, 'environ.csv'));
      for (const csv_path of ['/proc/self/environ', '/proc/thread-self/environ', 'environ.csv']) {
        const result = await chart({ csv_path, x: 'zz', output_path: 'environ.png' });
        expect(result.ok, csv_path).toBe(false);
        expect(result.output).toMatch(/kernel pseudo-file under \/proc, not a CSV file/);
        expect(result.output).not.toContain('sekrit-red-team-4242');
      }
      writeFileSync(join(dir, 'nul.csv'), 'a,b\nx\0y,1\n');
      const nul = await chart({ csv_path: 'nul.csv', x: 'zz', output_path: 'nul.png' });
      expect(nul.output).toMatch(/NUL bytes: a binary file, not CSV/);
      expect(readdirSync(dir).filter((name) => name.startsWith('environ.') || name.startsWith('nul.'))).toEqual(['environ.csv', 'nul.csv']);
    } finally {
      delete process.env.QUARRY_RED_TEAM_API_KEY;
      delete process.env.QUARRY_RED_TEAM_MULTILINE;
    }
  });

  it('numeric text beyond the double range is not plotted as Infinity (red team)', async () => {
    writeFileSync(join(dir, 'overflow.csv'), `k,v\na,${'9'.repeat(400)}\nb,1e400\nc,5\n`);
    const result = await chart({ csv_path: 'overflow.csv', x: 'k', y: 'v', output_path: 'overflow.png' });
    expect(result.output).not.toMatch(/∞|Infinity/);
    if (existsSync(join(dir, 'overflow.vl.json'))) expect(readFileSync(join(dir, 'overflow.vl.json'), 'utf8')).not.toMatch(/Infinity|null,/);
  });
});

describe('caps and honest grouping', () => {
  it(`more than ${MAX_CATEGORIES} categories: the smallest are summed as "other", said in the result`, async () => {
    const result = await chart({ sql: 'SELECT category, value FROM many', x: 'category', y: 'value', output_path: 'many.png' });
    expect(result.ok, result.output).toBe(true);
    expect(result.output).toContain(`21 smallest categories of category summed as "other" (at most ${MAX_CATEGORIES} shown)`);
    const svg = svgOf(join(dir, 'many.svg'));
    expect(svg.marks('rect')).toBe(MAX_CATEGORIES);
    const labels = svg.axisLabels().find((list) => list.includes('other'))!;
    expect(labels[labels.length - 1]).toBe('other');
  });

  it(`more than ${MAX_CHART_ROWS.toLocaleString('en-US')} rows is refused with a hint to aggregate, nothing written`, async () => {
    const result = await chart({ sql: 'SELECT n, n * 2 AS m FROM huge', x: 'n', y: 'm', output_path: 'huge.png' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/more than 10,000 rows; .*aggregate in SQL first/);
    expect(readdirSync(dir).filter((name) => name.startsWith('huge'))).toEqual([]);
  });
});

describe('refusals and escaping', () => {
  it('a mutation is refused by the read-only check, in every profile, with no effect', async () => {
    const before = directoryFingerprint(dbDir);
    const evalRunner = makeRunner(configsFor([`shop=${join(dbDir, 'shop.db')}`], dir), dir, 'eval').run;
    for (const sql of ['DELETE FROM sales', "UPDATE odd SET label = 'x'", 'DROP TABLE many']) {
      const result = await evalRunner('chart', { sql, x: 'a', y: 'b', output_path: `never-${sql.length}.png` });
      expect(result.ok).toBe(false);
      expect(result.output).toMatch(/^refused: /);
    }
    expect(directoryFingerprint(dbDir)).toBe(before);
    expect(readdirSync(dir).filter((name) => name.startsWith('never'))).toEqual([]);
  });

  it('never overwrites; refuses paths outside the allowed roots; bad arguments name the problem', async () => {
    writeFileSync(join(dir, 'taken.svg'), 'mine');
    const taken = await chart({ sql: 'SELECT region, amount FROM sales', x: 'region', y: 'amount', output_path: 'taken.png' });
    expect(taken.ok).toBe(false);
    expect(readFileSync(join(dir, 'taken.svg'), 'utf8')).toBe('mine');
    expect(existsSync(join(dir, 'taken.png'))).toBe(false);
    const outside = await chart({ sql: 'SELECT region, amount FROM sales', x: 'region', y: 'amount', output_path: '/etc/quarry-chart.png' });
    expect(outside.ok).toBe(false);
    expect(existsSync('/etc/quarry-chart.png')).toBe(false);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ sql: 'SELECT 1 AS a', csv_path: 'in.csv', x: 'a', output_path: 'x.png' }, /exactly one of "sql".*or "csv_path"/],
      [{ sql: 'SELECT region FROM sales', x: 'nope', output_path: 'x.png' }, /x column "nope" is not in the data; columns: region/],
      [
        { sql: 'SELECT region, product FROM sales', type: 'line', x: 'region', y: 'product', output_path: 'x.png' },
        /y column "product" holds text, not numbers/,
      ],
      [{ sql: 'SELECT region FROM sales', x: 'region', output_path: 'x.jpg' }, /output_path must end in .png or .svg/],
      [{ csv_path: 'missing.csv', x: 'a', output_path: 'x.png' }, /missing.csv does not exist/],
      [{ sql: 'SELECT region FROM sales WHERE 0', x: 'region', output_path: 'x.png' }, /no rows; nothing to draw/],
    ];
    for (const [args, pattern] of cases) {
      const result = await chart(args);
      expect(result.ok, JSON.stringify(args)).toBe(false);
      expect(result.output).toMatch(pattern);
    }
    expect(readdirSync(dir).filter((name) => name.startsWith('x.'))).toEqual([]);
  });

  it('text from the data is escaped in the SVG (no element injected)', async () => {
    const result = await chart({ sql: 'SELECT label, value FROM odd', x: 'label', y: 'value', output_path: 'odd.svg' });
    expect(result.ok, result.output).toBe(true);
    const svg = readFileSync(join(dir, 'odd.svg'), 'utf8');
    expect(svg).not.toContain('<script');
    expect(svg).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(svg).toContain('Tom &amp; "Jerry"');
  });
});

describe('through the CLI', () => {
  it('readonly asks before writing files (refused without --yes), draws with --yes', async () => {
    const home = makeTempDir('quarry-chart-home-');
    const work = makeTempDir('quarry-chart-work-');
    const args = [
      'tool',
      'chart',
      '-w',
      work,
      '--db',
      `shop=${join(dbDir, 'shop.db')}`,
      '--args',
      JSON.stringify({ sql: 'SELECT region, SUM(amount) AS total FROM sales GROUP BY region', x: 'region', y: 'total', output_path: 'r.png' }),
    ];
    const refused = await runCli(args, { env: cliEnv(home) });
    expect(refused.code).toBe(1);
    expect(refused.stderr + refused.stdout).toContain('Pass --yes');
    expect(readdirSync(work)).toEqual([]);
    const drawn = await runCli([...args, '--yes'], { env: cliEnv(home), timeoutMs: 60_000 });
    expect(drawn.code, drawn.stderr).toBe(0);
    expect(drawn.stdout).toContain('Drew a bar chart');
    expect(readdirSync(work).sort()).toEqual(['r.png', 'r.svg', 'r.vl.json']);
  }, 60_000);
});
