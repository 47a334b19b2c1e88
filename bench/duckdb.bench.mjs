// DuckDB bench (docs/guide/duckdb-files.md): export_query of a 1,000,000-row CSV file to CSV,
// and a GROUP BY over a 10,000,000-row Parquet file exported to CSV, each beside DuckDB's own
// COPY ... TO through the same library (bench/duckdb-copy.mjs), measured in alternation, with
// peak memory (export memory must stay flat: the 1M-row export is also compared with 100k rows).
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { measure, measurePair } from './support.mjs';

const RUNS = 5;

export async function run({ root, workDir }) {
  const dir = join(workDir, 'duckdb');
  mkdirSync(dir, { recursive: true });
  const { DuckDBInstance } = await import(join(root, 'node_modules/@duckdb/node-api/lib/index.js'));
  const csv = join(dir, 'sales-1000000.csv');
  const small = join(dir, 'sales-100000.csv');
  const parquet = join(dir, 'events-10000000.parquet');
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const salesRows = (n) => `SELECT range AS id, 'customer ' || (range % 9973) AS customer, (range * 1.37)::DECIMAL(14, 2) AS amount,
      CASE WHEN range % 10 = 0 THEN NULL WHEN range % 7 = 0 THEN 'said "hi", left' ELSE 'note ' || range END AS note,
      TIMESTAMP '2024-01-01' + INTERVAL (range) SECOND AS created_at FROM range(${n})`;
  if (!existsSync(csv)) await connection.run(`COPY (${salesRows(1_000_000)}) TO '${csv}' (HEADER)`);
  if (!existsSync(small)) await connection.run(`COPY (${salesRows(100_000)}) TO '${small}' (HEADER)`);
  if (!existsSync(parquet)) {
    await connection.run(
      `COPY (SELECT range AS id, range % 1000 AS k, (range % 10007) * 0.5 AS amount, 'kind ' || (range % 4) AS kind FROM range(10000000)) TO '${parquet}' ` +
        `(FORMAT parquet)`,
    );
  }
  connection.closeSync();
  instance.closeSync();

  const cli = join(root, 'dist/cli.cjs');
  const out = join(dir, 'out.csv');
  const copyScript = join(root, 'bench/duckdb-copy.mjs');
  const sh = (command) => ['bash', '-c', `rm -f '${out}' && ${command} > /dev/null`];
  const quarry = (db, sql) =>
    sh(
      `exec '${process.execPath}' '${cli}' tool duckdb --yes -w '${dir}' --db '${db}' --args ` +
        `'${JSON.stringify({ operation: 'export_query', sql, output_path: 'out.csv' }).replaceAll("'", "'\\''")}'`,
    );
  const copy = (sql) => sh(`exec '${process.execPath}' '${copyScript}' '${sql.replaceAll("'", "'\\''")}' '${out}'`);

  const rows = [];
  const exportSql = 'SELECT * FROM sales';
  const exported = measurePair(quarry(`sales=${csv}`, exportSql), copy(`SELECT * FROM read_csv('${csv}')`), { runs: RUNS });
  rows.push({
    name: 'duckdb CSV->CSV export 1M rows',
    quarry: exported.a.ms,
    reference: exported.b.ms,
    referenceName: 'DuckDB COPY TO',
    unit: 'ms',
    ratio: exported.ratio,
  });
  rows.push({
    name: 'duckdb export 1M rows (peak memory)',
    quarry: exported.a.rssMb,
    reference: exported.b.rssMb,
    referenceName: 'DuckDB COPY TO',
    unit: 'MB',
  });
  const smallRun = measure(quarry(`sales=${small}`, exportSql), { runs: 3 });
  // DuckDB's CSV reader itself grows with the file (SELECT count(*) over it does too, with one
  // thread or a memory_limit alike), so its own COPY is shown at both sizes beside ours.
  const smallCopy = measure(copy(`SELECT * FROM read_csv('${small}')`), { runs: 3 });
  const growth = (big, little) => `+${(big - little).toFixed(0)} MB`;
  rows.push({
    name: 'duckdb export memory 100k vs 1M rows',
    quarry: exported.a.rssMb,
    reference: smallRun.rssMb,
    referenceName: 'quarry at 100k',
    unit: 'MB',
    note:
      `flat: ratio near 1; quarry ${growth(exported.a.rssMb, smallRun.rssMb)}, DuckDB's own COPY ${growth(exported.b.rssMb, smallCopy.rssMb)} ` +
      `(${smallCopy.rssMb.toFixed(0)} -> ${exported.b.rssMb.toFixed(0)} MB)`,
  });

  const groupSql = (from) => `SELECT k, kind, count(*) AS n, sum(amount) AS total FROM ${from} GROUP BY k, kind ORDER BY k, kind`;
  const grouped = measurePair(quarry(`events=${parquet}`, groupSql('events')), copy(groupSql(`read_parquet('${parquet}')`)), { runs: RUNS });
  rows.push({
    name: 'duckdb GROUP BY 10M-row Parquet',
    quarry: grouped.a.ms,
    reference: grouped.b.ms,
    referenceName: 'DuckDB COPY TO',
    unit: 'ms',
    ratio: grouped.ratio,
  });
  rows.push({
    name: 'duckdb GROUP BY 10M rows (peak memory)',
    quarry: grouped.a.rssMb,
    reference: grouped.b.rssMb,
    referenceName: 'DuckDB COPY TO',
    unit: 'MB',
  });
  rmSync(out, { force: true });
  return rows;
}
