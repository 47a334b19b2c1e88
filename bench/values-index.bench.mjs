// find_values and the value index (docs/guide/databases.md "Knowing the data"): `quarry db index` of a 10,000,000-row,
// 20-column SQLite table (targets: at most 60 s and 300 MB), a lookup in the index in process
// (target: at most 50 ms), and find_values through `quarry tool sqlite` on a 2,000,000-row table
// without an index (target: the answer, or an honest statement of coverage, within 20 s), each
// beside sqlite3 doing the nearest thing by hand. QUARRY_BENCH_INDEX_ROWS scales the big table down.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { measurePair, median } from './support.mjs';

const BIG_ROWS = Number(process.env.QUARRY_BENCH_INDEX_ROWS ?? 10_000_000);
const SCAN_ROWS = 2_000_000;
const LOOKUPS = 50;

const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * 20 columns: id, 10 text columns of 5 to 5,000 distinct values, 4 text columns of one value per
 * row (over the index's limit), 5 integers.
 */
function makeTable(root, path, rows) {
  const text = Array.from({ length: 10 }, (_, k) => `'c${k}_' || (i * ${k + 7} % ${[5, 12, 40, 97, 250, 600, 1200, 2500, 4000, 5000][k]})`);
  const unique = Array.from({ length: 4 }, (_, k) => `'u${k}_' || (i * ${k + 3})`);
  const numbers = Array.from({ length: 5 }, (_, k) => `i % ${(k + 2) * 1000}`);
  const columns = [
    'id INTEGER PRIMARY KEY',
    ...text.map((_, k) => `t${k} TEXT`),
    ...unique.map((_, k) => `u${k} TEXT`),
    ...numbers.map((_, k) => `n${k} INTEGER`),
  ];
  const script = `
    const Database = require(${JSON.stringify(join(root, 'node_modules/better-sqlite3'))});
    const db = new Database(${JSON.stringify(path)});
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.exec(${JSON.stringify(`CREATE TABLE big (${columns.join(', ')})`)});
    db.exec(${JSON.stringify(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows}) INSERT INTO big SELECT i, ${[...text, ...unique, ...numbers].join(', ')} FROM n`,
    )});
    db.close();`;
  execFileSync(process.execPath, ['-e', script]);
}

export async function run({ root }) {
  const dir = mkdtempSync(join(tmpdir(), 'quarry-bench-values-'));
  const home = join(dir, 'home');
  try {
    const cli = join(root, 'dist/cli.cjs');
    const env = `QUARRY_HOME=${shellQuote(home)}`;
    const rows = [];
    const big = join(dir, 'big.db');
    makeTable(root, big, BIG_ROWS);
    const count = BIG_ROWS.toLocaleString('en-US');
    const index = measurePair(
      ['bash', '-c', `${env} exec ${shellQuote(process.execPath)} ${shellQuote(cli)} db index b --db ${shellQuote(`b=${big}`)} > /dev/null`],
      ['bash', '-c', `sqlite3 ${shellQuote(big)} 'SELECT t0, COUNT(*) FROM big GROUP BY t0' > /dev/null`],
      { runs: 1, warmup: 0 },
    );
    const target = BIG_ROWS === 10_000_000 ? 'target: at most 60 s' : `scaled from 10,000,000 rows (QUARRY_BENCH_INDEX_ROWS)`;
    rows.push({
      name: `db index: ${count} rows, 20 columns (time)`,
      quarry: index.a.ms / 1000,
      reference: index.b.ms / 1000,
      ratio: index.ratio,
      referenceName: 'sqlite3 GROUP BY of 1 column',
      unit: 's',
      note: `14 text columns, one pass; ${target}`,
    });
    rows.push({
      name: `db index: ${count} rows, 20 columns (peak memory)`,
      quarry: index.a.rssMb,
      reference: index.b.rssMb,
      referenceName: 'sqlite3 GROUP BY of 1 column',
      unit: 'MB',
      note: BIG_ROWS === 10_000_000 ? 'target: at most 300 MB' : '',
    });

    // A lookup in process: open the index, check nothing else (the fingerprint is one catalogue statement, timed by the CLI row below).
    const previousHome = process.env.QUARRY_HOME;
    process.env.QUARRY_HOME = home;
    try {
      const { IndexReader, indexPath } = await import(pathToFileURL(join(root, 'dist/tools/database/values-index/store.js')).href);
      const { answer } = await import(pathToFileURL(join(root, 'dist/tools/database/values-index/lookup.js')).href);
      const { loadDatabaseConfigs } = await import(pathToFileURL(join(root, 'dist/config/databases.js')).href);
      const [config] = loadDatabaseConfigs({ dbFlags: [`b=${big}`], env: {}, cwd: dir });
      const columns = Array.from({ length: 14 }, (_, k) => ({
        schema: 'main',
        table: 'big',
        column: k < 10 ? `t${k}` : `u${k - 10}`,
        type: 'TEXT',
        kind: 'text',
      }));
      for (const [match, value] of [
        ['exact', 'C7_1234'],
        ['prefix', 'c9_12'],
        ['contains', '_49'],
      ]) {
        const times = [];
        let found = 0;
        for (let i = 0; i < LOOKUPS; i++) {
          const started = process.hrtime.bigint();
          const reader = IndexReader.open(indexPath(config));
          const result = answer(reader, columns, { value, match, limit: 20 });
          reader.close();
          times.push(Number(process.hrtime.bigint() - started) / 1e6);
          found = result.matches.length;
        }
        rows.push({
          name: `value index lookup, ${match} (in process)`,
          quarry: median(times),
          unit: 'ms',
          note: `open + lookup over 10 indexed columns (${found} matching); target: at most 50 ms`,
        });
      }
    } finally {
      if (previousHome === undefined) delete process.env.QUARRY_HOME;
      else process.env.QUARRY_HOME = previousHome;
    }

    const scan = join(dir, 'scan.db');
    makeTable(root, scan, SCAN_ROWS);
    const scanned = measurePair(
      [
        'bash',
        '-c',
        `${env}-none exec ${shellQuote(process.execPath)} ${shellQuote(cli)} tool sqlite --db ${shellQuote(scan)} --args ` +
          `${shellQuote(JSON.stringify({ operation: 'find_values', value: 'c7_1234' }))} > /dev/null`,
      ],
      [
        'bash',
        '-c',
        `sqlite3 ${shellQuote(scan)} ${shellQuote(`SELECT ${Array.from({ length: 10 }, (_, k) => `SUM(lower(t${k}) = 'c7_1234')`).join(', ')}, ${Array.from({ length: 4 }, (_, k) => `SUM(lower(u${k}) = 'c7_1234')`).join(', ')} FROM big`)} > /dev/null`,
      ],
      { runs: 3 },
    );
    rows.push({
      name: `find_values without an index, ${SCAN_ROWS.toLocaleString('en-US')} rows (time)`,
      quarry: scanned.a.ms / 1000,
      reference: scanned.b.ms / 1000,
      ratio: scanned.ratio,
      referenceName: 'sqlite3 one-pass count',
      unit: 's',
      note: 'quarry tool sqlite: one aggregate pass over 14 text columns, then distinct counts of the matches; target: at most 20 s',
    });
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
