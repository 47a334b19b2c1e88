// Database bench (docs/development/benchmarks.md): export_query of a 1,000,000-row table to CSV beside `sqlite3 -csv`
// and `psql \copy`, peak memory at 100,000 and 1,000,000 rows (it must stay flat), and a query
// with the default limit beside the same query with LIMIT 101. Starts its own PostgreSQL.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, measurePair } from './support.mjs';

const BIG_ROWS = 1_000_000;
const SMALL_ROWS = 100_000;
const RUNS = 5;
const isRoot = process.getuid?.() === 0;

function createSqliteTable(root, path, rows) {
  if (existsSync(path)) return;
  const script =
    `
    const Database = require(${JSON.stringify(join(root, 'node_modules/better-sqlite3'))});
    const db = new Database(${JSON.stringify(path)});
    db.exec("CREATE TABLE events (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, kind TEXT NOT NULL, amount REAL, note TEXT, created_at TEXT NOT NULL)");
    const insert = db.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)');
    const kinds = ['purchase', 'refund', 'view', 'signup'];
    db.transaction(() => {
      for (let i = 1; i <= ${rows}; i++) insert.run(i, i % 9973, kinds[i % 4], Math.round(i * 1.37) / 100, i % 10 === 0 ? null : i % 7 === 0 ? 'said "hi", ` +
    `left' : 'note ' + i, new Date(1.6e12 + i * 60000).toISOString());
    })();
    db.close();`;
  execFileSync(process.execPath, ['-e', script]);
}

function freePort() {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function asPostgres(argv) {
  const command = isRoot ? ['runuser', '-u', 'postgres', '--', ...argv] : argv;
  return execFileSync(command[0], command.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export async function startPostgres() {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
  const bin = join('/usr/lib/postgresql', versions[0], 'bin');
  const dir = mkdtempSync(join(tmpdir(), 'quarry-bench-pg-'));
  if (isRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  asPostgres([join(bin, 'initdb'), '-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync']);
  asPostgres([
    join(bin, 'pg_ctl'),
    '-D',
    join(dir, 'data'),
    '-l',
    join(dir, 'log'),
    '-w',
    'start',
    '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
  ]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop: () => {
      asPostgres([join(bin, 'pg_ctl'), '-D', join(dir, 'data'), '-m', 'immediate', 'stop']);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * export_query inside one running process, as in an agent session (tools loaded and the
 * connection open once), alternating with the reference command: returns the medians and the
 * median of the per-pair ratios. The first export (connect, driver load) is a warm-up.
 */
async function sessionExports(root, dbFlag, dir, engine, sql, reference, runs = RUNS) {
  const child = spawn(process.execPath, [join(root, 'bench/export-session.mjs'), dbFlag, dir, engine, sql], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  let waiting = null;
  let pending = '';
  child.stdout.on('data', (data) => {
    pending += data;
    let newline;
    while ((newline = pending.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(pending.slice(0, newline)));
      pending = pending.slice(newline + 1);
      waiting?.();
    }
  });
  const exportOnce = async () => {
    child.stdin.write('go\n');
    while (lines.length === 0) await new Promise((resolve) => (waiting = resolve));
    const answer = lines.shift();
    if (!answer.ok) throw new Error(`session export failed: ${answer.output}`);
    return answer.ms;
  };
  const timeReference = () => {
    const started = process.hrtime.bigint();
    execFileSync(reference[0], reference.slice(1), { stdio: 'ignore' });
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  await exportOnce();
  timeReference();
  const quarry = [];
  const referenceTimes = [];
  const ratios = [];
  for (let i = 0; i < runs; i++) {
    quarry.push(await exportOnce());
    referenceTimes.push(timeReference());
    ratios.push(quarry.at(-1) / referenceTimes.at(-1));
  }
  child.stdin.end('quit\n');
  await new Promise((resolve) => child.on('exit', resolve));
  return { quarryMs: median(quarry), referenceMs: median(referenceTimes), ratio: median(ratios) };
}

/** Both sides' CPU (every process each started) and their ratio, for a row's note. */
const cpuNote = (pair) =>
  pair.a.cpuMs !== undefined && pair.b.cpuMs
    ? `${pair.a.cpuMs.toFixed(0)} vs ${pair.b.cpuMs.toFixed(0)} ms (${(pair.a.cpuMs / pair.b.cpuMs).toFixed(2)}x)`
    : 'not measured';

const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

export async function run({ root, workDir, measure }) {
  const dir = join(workDir, 'database');
  mkdirSync(dir, { recursive: true });
  const big = join(dir, `events-${BIG_ROWS}.db`);
  const small = join(dir, `events-${SMALL_ROWS}.db`);
  createSqliteTable(root, big, BIG_ROWS);
  createSqliteTable(root, small, SMALL_ROWS);
  const cli = join(root, 'dist/cli.cjs');
  const out = join(dir, 'out.csv');
  const quarryTool = (tool, db, args) => [
    'bash',
    '-c',
    `rm -f ${shellQuote(out)} && exec ${shellQuote(process.execPath)} ${shellQuote(cli)} tool ${tool} --yes -w ${shellQuote(dir)} --db ${shellQuote(db)} ` +
      `--args ${shellQuote(JSON.stringify(args))} > /dev/null`,
  ];
  const exportArgs = { operation: 'export_query', sql: 'SELECT * FROM events', output_path: out };
  const rows = [];

  const sqliteExport = measurePair(
    quarryTool('sqlite', big, exportArgs),
    ['bash', '-c', `sqlite3 -csv -header ${shellQuote(big)} 'SELECT * FROM events' > ${shellQuote(out)}`],
    { runs: RUNS },
  );
  const sqliteQuarry = sqliteExport.a;
  const sqliteReference = sqliteExport.b;
  const sqliteQuarrySmall = measure(quarryTool('sqlite', small, exportArgs), { runs: RUNS });
  rows.push({
    name: 'sqlite export 1M rows (time)',
    quarry: sqliteQuarry.ms,
    reference: sqliteReference.ms,
    ratio: sqliteExport.ratio,
    referenceName: 'sqlite3 -csv',
    unit: 'ms',
    note: `target <= 1.3x (ratio: median of alternating pairs); CPU ${cpuNote(sqliteExport)}`,
  });
  rows.push({
    name: 'sqlite export 1M rows (peak memory)',
    quarry: sqliteQuarry.rssMb,
    reference: sqliteReference.rssMb,
    referenceName: 'sqlite3 -csv',
    unit: 'MB',
    note: 'target < 150 MB',
  });
  rows.push({
    name: 'sqlite export memory 100k vs 1M rows',
    quarry: sqliteQuarry.rssMb,
    reference: sqliteQuarrySmall.rssMb,
    referenceName: 'quarry at 100k',
    unit: 'MB',
    note: 'flat: ratio near 1',
  });

  const sqliteQuery = measurePair(
    quarryTool('sqlite', big, { operation: 'query', sql: 'SELECT * FROM events ORDER BY customer_id' }),
    quarryTool('sqlite', big, { operation: 'query', sql: 'SELECT * FROM events ORDER BY customer_id LIMIT 101' }),
    { runs: RUNS },
  );
  rows.push({
    name: 'sqlite query, default limit, 1M rows',
    quarry: sqliteQuery.a.ms,
    reference: sqliteQuery.b.ms,
    ratio: sqliteQuery.ratio,
    referenceName: 'same with LIMIT 101',
    unit: 'ms',
    note: 'about 1x',
  });

  const postgres = await startPostgres();
  try {
    const psql = (...args) => execFileSync('psql', ['-X', '-q', '-d', postgres.url, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    psql(
      '-c',
      'CREATE TABLE events (id bigint PRIMARY KEY, customer_id int NOT NULL, kind text NOT NULL, amount double precision, note text, created_at text NOT NULL)',
    );
    const source = join(dir, 'events.csv');
    spawnSync('bash', ['-c', `sqlite3 -csv ${shellQuote(big)} 'SELECT * FROM events' > ${shellQuote(source)}`]);
    psql('-c', `\\copy events FROM ${shellQuote(source)} CSV`);
    psql('-c', 'VACUUM ANALYZE events');
    const pgExport = measurePair(
      quarryTool('postgres', postgres.url, exportArgs),
      [
        'bash',
        '-c',
        `rm -f ${shellQuote(out)} && exec psql -X -q -d ${shellQuote(postgres.url)} -c ` +
          `${shellQuote(`\\copy (SELECT * FROM events) TO ${shellQuote(out)} CSV HEADER`)}`,
      ],
      { runs: RUNS },
    );
    const pgQuarry = pgExport.a;
    const pgReference = pgExport.b;
    rows.push({
      name: 'postgres export 1M rows (time)',
      quarry: pgQuarry.ms,
      reference: pgReference.ms,
      ratio: pgExport.ratio,
      referenceName: 'psql \\copy',
      unit: 'ms',
      note: `target <= 1.3x (ratio: median of alternating pairs); CPU ${cpuNote(pgExport)}`,
    });
    // The COPY reader alone, quarry's against pg-copy-streams (README "Benchmarks"; docs/development/hand-written.md).
    const readerArgs = (mode) => [
      'bash',
      '-c',
      `rm -f ${shellQuote(out)} && exec ${shellQuote(process.execPath)} ${shellQuote(join(root, 'bench/pg-copy-reader.mjs'))} ${mode} ${shellQuote(postgres.url)} 'SELECT * FROM events' ${shellQuote(out)}`,
    ];
    const readers = measurePair(readerArgs('pg-copy-streams'), readerArgs('quarry'), { runs: RUNS });
    rows.push({
      name: 'postgres COPY reader, 1M rows: pg-copy-streams',
      quarry: readers.a.ms,
      reference: readers.b.ms,
      ratio: readers.ratio,
      referenceName: "quarry's pg-copy-out.ts",
      unit: 'ms',
      note: `CPU ${(readers.a.cpuMs ?? 0).toFixed(0)} vs ${(readers.b.cpuMs ?? 0).toFixed(0)} ms; quarry keeps its own while the library is > 1.1x`,
    });
    const session = await sessionExports(root, postgres.url, dir, 'postgres', 'SELECT * FROM events', [
      'bash',
      '-c',
      `rm -f ${shellQuote(out)} && exec psql -X -q -d ${shellQuote(postgres.url)} -c ` +
        `${shellQuote(`\\copy (SELECT * FROM events) TO ${shellQuote(out)} CSV HEADER`)}`,
    ]);
    rows.push({
      name: 'postgres export 1M rows, in a running session',
      quarry: session.quarryMs,
      reference: session.referenceMs,
      ratio: session.ratio,
      referenceName: 'psql \\copy',
      unit: 'ms',
      note: 'start-up excluded (see the start-up rows); target <= 1.3x',
    });
    rows.push({
      name: 'postgres export 1M rows (peak memory)',
      quarry: pgQuarry.rssMb,
      reference: pgReference.rssMb,
      referenceName: 'psql \\copy',
      unit: 'MB',
      note: 'target < 150 MB',
    });
    const pgQuery = measurePair(
      quarryTool('postgres', postgres.url, { operation: 'query', sql: 'SELECT * FROM events ORDER BY customer_id' }),
      quarryTool('postgres', postgres.url, { operation: 'query', sql: 'SELECT * FROM events ORDER BY customer_id LIMIT 101' }),
      { runs: RUNS },
    );
    rows.push({
      name: 'postgres query, default limit, 1M rows',
      quarry: pgQuery.a.ms,
      reference: pgQuery.b.ms,
      ratio: pgQuery.ratio,
      referenceName: 'same with LIMIT 101',
      unit: 'ms',
      note: 'about 1x',
    });
  } finally {
    postgres.stop();
    rmSync(out, { force: true });
  }
  writeFileSync(join(dir, 'last-run.json'), JSON.stringify(rows, null, 2));
  return rows;
}
