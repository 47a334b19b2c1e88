// Wide CSV bench (docs/guide/duckdb-files.md): describe and profile of a 3,000-column x
// 2,000-row CSV (about 23 MB) through the CLI, beside one detection of the same file by DuckDB
// itself (SELECT * FROM read_csv(file) LIMIT 0 through the same library, bench/duckdb-copy.mjs),
// measured in alternation. A view that sniffed the file in every statement cost two detections
// when opened and one more per statement; detected once, describe costs about one detection, and
// profile one detection plus its time budget (10 s, in which it profiles what it can).
import { createWriteStream, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { measurePair } from './support.mjs';

const COLUMNS = 3000;
const ROWS = 2000;

/** Integers 0-999 from a fixed linear congruential sequence: the same file on every machine. */
async function writeWide(path) {
  const out = createWriteStream(path);
  let seed = 12345;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % 1000;
  };
  out.write(`${Array.from({ length: COLUMNS }, (_, i) => `c${i}`).join(',')}\n`);
  for (let r = 0; r < ROWS; r++) {
    if (!out.write(`${Array.from({ length: COLUMNS }, next).join(',')}\n`)) await new Promise((resolve) => out.once('drain', resolve));
  }
  await new Promise((resolve, reject) => out.end((error) => (error ? reject(error) : resolve())));
}

export async function run({ root, workDir }) {
  const dir = join(workDir, 'duckdb-wide');
  mkdirSync(dir, { recursive: true });
  const csv = join(dir, `wide-${COLUMNS}x${ROWS}.csv`);
  if (!existsSync(csv)) await writeWide(csv);
  const cli = join(root, 'dist/cli.cjs');
  const out = join(dir, 'out.csv');
  const quarry = (args) => [
    'bash',
    '-c',
    `exec '${process.execPath}' '${cli}' tool duckdb -w '${dir}' --db 'wide=${csv}' --args '${JSON.stringify(args)}' > /dev/null`,
  ];
  const detect = [
    'bash',
    '-c',
    `rm -f '${out}' && exec '${process.execPath}' '${join(root, 'bench/duckdb-copy.mjs')}' "SELECT * FROM read_csv('${csv}') LIMIT 0" '${out}'`,
  ];
  const rows = [];
  for (const [name, args] of [
    ['describe', { operation: 'describe', table_name: 'wide' }],
    ['profile', { operation: 'profile', table_name: 'wide' }],
  ]) {
    const pair = measurePair(quarry(args), detect, { runs: 2, warmup: 0 });
    rows.push({
      name: `duckdb ${name} of a ${COLUMNS.toLocaleString('en-US')}-column CSV`,
      quarry: pair.a.ms,
      reference: pair.b.ms,
      referenceName: "DuckDB's own detection",
      unit: 'ms',
      ratio: pair.ratio,
      note: pair.a.cpuMs !== undefined ? `CPU ${(pair.a.cpuMs / 1000).toFixed(1)} s vs ${(pair.b.cpuMs / 1000).toFixed(1)} s` : '',
    });
  }
  rmSync(out, { force: true });
  return rows;
}
