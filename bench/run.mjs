// `npm run bench`: runs every bench/*.bench.mjs module and prints one table.
// Each module exports `async function run({ root, workDir, median, time })` returning rows
// { name, quarry, reference, referenceName, unit, note }. Numbers are medians of several runs;
// the ratio column is quarry / reference, measured in the same run because these machines are noisy
// (or a row's own `ratio`: the median of per-pair ratios when the two were run in alternation).
import { mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measure, median } from './support.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = dirname(here);
const workDir = join(here, '.work');
mkdirSync(workDir, { recursive: true });

const only = process.argv.slice(2);
const modules = readdirSync(here)
  .filter((name) => name.endsWith('.bench.mjs'))
  .filter((name) => only.length === 0 || only.some((word) => name.includes(word)))
  .sort();

const rows = [];
for (const name of modules) {
  process.stderr.write(`bench: ${name} ...\n`);
  const mod = await import(join(here, name));
  try {
    rows.push(...(await mod.run({ root, workDir, measure, median })));
  } catch (error) {
    rows.push({ name: `${name} FAILED`, note: String(error?.message ?? error).split('\n')[0] });
  }
}

const fmt = (value, unit) => (value === undefined || value === null ? '' : `${Number(value).toFixed(value < 10 ? 2 : 0)} ${unit ?? ''}`.trim());
const table = rows.map((row) => [
  row.name,
  fmt(row.quarry, row.unit),
  row.referenceName ?? '',
  fmt(row.reference, row.unit),
  row.ratio !== undefined ? `${row.ratio.toFixed(2)}x` : row.quarry !== undefined && row.reference ? `${(row.quarry / row.reference).toFixed(2)}x` : '',
  row.note ?? '',
]);
const header = ['benchmark', 'quarry', 'reference', 'ref value', 'ratio', 'note'];
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => String(r[i]).length)));
const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('-|-'));
for (const row of table) console.log(line(row));
