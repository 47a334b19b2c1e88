// Charts of years and time through the built CLI: tick texts read from the SVG that was written.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { runQuarry } from '../../support/cli.js';
import { makeTempDir } from '../../support/context.js';

let dir: string;
let home: string;

beforeAll(() => {
  dir = makeTempDir('quarry-chart-years-');
  home = makeTempDir('quarry-home-');
  // World Bank style: one row per year, a whole-number year column.
  const gdp = ['year,gdp', ...Array.from({ length: 61 }, (_, i) => `${1960 + i},${(1000 + i * i * 3.3).toFixed(2)}`)];
  writeFileSync(join(dir, 'gdp.csv'), `${gdp.join('\n')}\n`);
  // Weekly counts from February 2020 to March 2021.
  const days = ['day,cases'];
  for (let i = 0; i < 60; i++) days.push(`${new Date(Date.UTC(2020, 1, 1) + i * 7 * 86_400_000).toISOString().slice(0, 10)},${(i * 37) % 500}`);
  writeFileSync(join(dir, 'daily.csv'), `${days.join('\n')}\n`);
  // Scores with every 15th one empty, as an export leaves a missing value.
  const scores = ['id,score', ...Array.from({ length: 1000 }, (_, i) => `${i},${i % 15 === 0 ? '' : (30 + ((i * 7919) % 400) / 10).toFixed(1)}`)];
  writeFileSync(join(dir, 'scores.csv'), `${scores.join('\n')}\n`);
  // Rates whose sums are not exact in binary (0.1 + 0.2), by region and by year as text (strftime).
  const db = new Database(join(dir, 'rates.db'));
  db.exec('CREATE TABLE rates (region TEXT, day TEXT, rate REAL)');
  const insert = db.prepare('INSERT INTO rates VALUES (?, ?, ?)');
  for (const region of ['north', 'south', 'east'])
    for (const year of [2019, 2020, 2021]) {
      insert.run(region, `${year}-03-01`, 0.1);
      insert.run(region, `${year}-09-01`, 0.2);
    }
  db.close();
});

async function chart(args: Record<string, unknown>, db: string[] = []) {
  const result = await runQuarry(['tool', 'chart', '--yes', '-p', 'developer', ...db, '-w', dir, '--args', JSON.stringify(args)], {
    env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined },
    timeoutMs: 60_000,
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const svg = readFileSync(join(dir, String(args.output_path).replace(/\.png$/, '.svg')), 'utf8');
  const group = (cls: string) => [...svg.matchAll(new RegExp(`<g class="${cls}[^"]*"[^>]*>(.*?)</g>`, 'gs'))].map((match) => match[1]!);
  const labels = group('mark-text role-axis-label').map((body) => [...body.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((match) => match[1]!));
  return { stdout: result.stdout, svg, labels };
}

describe('charts of years and time (built CLI)', () => {
  it('a whole-number year column is a time axis of years: no thousands separator, no zero, a line by default', async () => {
    const line = await chart({ csv_path: 'gdp.csv', x: 'year', y: 'gdp', output_path: 'gdp.png' });
    expect(line.stdout).toContain('Drew a line chart (type chosen: x holds years)');
    expect(line.stdout).toContain('x (year): from 1960 to 2020;');
    expect(line.labels[0]).toEqual(['1960', '1965', '1970', '1975', '1980', '1985', '1990', '1995', '2000', '2005', '2010', '2015', '2020']);
    const point = await chart({ csv_path: 'gdp.csv', x: 'year', y: 'gdp', type: 'point', output_path: 'gdp-point.png' });
    expect(point.labels[0]![0]).toBe('1960');
    expect(point.labels[0]!.every((label) => /^\d{4}$/.test(label))).toBe(true);
    const bar = await chart({ csv_path: 'gdp.csv', x: 'year', y: 'gdp', type: 'bar', output_path: 'gdp-bar.png' });
    // Years as ordered categories, labels thinned where they would overlap, none with a comma.
    expect(bar.labels[0]![0]).toBe('1960');
    expect(bar.labels[0]!.every((label) => /^\d{4}$/.test(label))).toBe(true);
  });

  it('years as text in a heat map are rows of years; the sums in the SVG are rounded as shown; a numeric colour is no list of series', async () => {
    const heat = await chart(
      {
        sql: "SELECT region, strftime('%Y', day) AS year, rate FROM rates",
        x: 'region',
        y: 'year',
        color: 'rate',
        type: 'heatmap',
        output_path: 'heat.png',
      },
      ['--db', `rates=${join(dir, 'rates.db')}`],
    );
    expect(heat.labels[1]).toEqual(['2019', '2020', '2021']);
    expect(heat.stdout).toContain('y (year): from 2019 to 2021');
    expect(heat.stdout).not.toContain('series by rate');
    expect(heat.svg).toContain('Sum of rate: 0.3"');
    expect(heat.svg).not.toMatch(/0\.3000000000/);
  });

  it('a time axis over two calendar years names the year on its ticks', async () => {
    const daily = await chart({ csv_path: 'daily.csv', x: 'day', y: 'cases', output_path: 'daily.png' });
    expect(daily.labels[0]).toContain('Feb 2020');
    expect(daily.labels[0]).toContain('Jan 2021');
    expect(daily.labels[0]!.every((label) => / 20\d\d$/.test(label))).toBe(true);
  });

  it('a histogram says how many empty values it left out, and "points plotted" is what the bars add up to', async () => {
    const histogram = await chart({ csv_path: 'scores.csv', x: 'score', output_path: 'scores.png' });
    expect(histogram.stdout).toContain('from 1000 rows of scores.csv: count by score, 933 points plotted.');
    expect(histogram.stdout).toContain('Note: 67 rows with an empty score left out (not plotted).');
    const counts = [...histogram.svg.matchAll(/Count of Records: (\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
    expect(counts).toBe(933);
  });
});
