// Output that costs what it shows: a wide query, a huge schema, a big directory and the head
// of a 2 GB file, each beside the tool a user would reach for, measured in alternation.
// The big inputs are made in a temporary directory and removed afterwards.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePair } from './support.mjs';

const RUNS = 3;
const WIDE_COLUMNS = 1000;
const WIDE_ROWS = 101;
const TABLES = 20_000;
const FILES = 100_000;
const BIG_FILE_BYTES = 2 * 1000 * 1000 * 1000;

const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

function makeDatabases(root, dir) {
  const script = `
    const Database = require(${JSON.stringify(join(root, 'node_modules/better-sqlite3'))});
    const wide = new Database(${JSON.stringify(join(dir, 'wide.db'))});
    const names = Array.from({ length: ${WIDE_COLUMNS} }, (_, j) => 'c' + j);
    wide.exec('CREATE TABLE w (' + names.map((n) => n + ' INTEGER').join(', ') + ')');
    const insert = wide.prepare('INSERT INTO w VALUES (' + names.map(() => '?').join(', ') + ')');
    wide.transaction(() => { for (let i = 0; i < ${WIDE_ROWS}; i++) insert.run(names.map((_, j) => i * ${WIDE_COLUMNS} + j)); })();
    wide.close();
    const many = new Database(${JSON.stringify(join(dir, 'many.db'))});
    many.transaction(() => { for (let i = 0; i < ${TABLES}; i++) many.exec('CREATE TABLE t' + String(i).padStart(5, '0') + ' (a INTEGER, b TEXT)'); })();
    many.close();`;
  execFileSync(process.execPath, ['-e', script]);
}

function makeFiles(dir) {
  execFileSync('bash', [
    '-c',
    `mkdir -p ${shellQuote(join(dir, 'flat'))} && cd ${shellQuote(join(dir, 'flat'))} && seq -f 'file%06g.csv' 1 ${FILES} | xargs touch`,
  ]);
  const fd = openSync(join(dir, 'big.log'), 'w');
  const block = Buffer.from(`${'2026-01-01T00:00:00Z INFO request served in 12 ms by worker 7 '.padEnd(99, '.')}\n`.repeat(10_000));
  for (let written = 0; written < BIG_FILE_BYTES; written += block.length) writeSync(fd, block);
  closeSync(fd);
}

export async function run({ root }) {
  const dir = mkdtempSync(join(tmpdir(), 'quarry-bench-output-'));
  try {
    makeDatabases(root, dir);
    makeFiles(dir);
    const cli = join(root, 'dist/cli.cjs');
    const quarry = (tool, args, db) => [
      'bash',
      '-c',
      `exec ${shellQuote(process.execPath)} ${shellQuote(cli)} tool ${tool} -w ${shellQuote(dir)}${db ? ` --db ${shellQuote(db)}` : ''} --args ` +
        `${shellQuote(JSON.stringify(args))} > /dev/null`,
    ];
    const shell = (command) => ['bash', '-c', `${command} > /dev/null`];
    const rows = [];
    const pair = (name, a, b, referenceName, note) => {
      const result = measurePair(a, b, { runs: RUNS });
      rows.push({ name: `${name} (time)`, quarry: result.a.ms, reference: result.b.ms, ratio: result.ratio, referenceName, unit: 'ms', note });
      rows.push({
        name: `${name} (peak memory)`,
        quarry: result.a.rssMb,
        reference: result.b.rssMb,
        referenceName,
        unit: 'MB',
        note: 'bounded by what is shown',
      });
    };

    const wide = join(dir, 'wide.db');
    pair(
      `query ${WIDE_ROWS} x ${WIDE_COLUMNS.toLocaleString('en-US')} columns`,
      quarry('sqlite', { operation: 'query', sql: 'SELECT * FROM w', row_limit: 1000 }, wide),
      shell(`sqlite3 ${shellQuote(wide)} 'SELECT * FROM w'`),
      'sqlite3',
      'quarry shows what fits in 64 KiB; was 16-17 s',
    );
    const many = join(dir, 'many.db');
    pair(
      `list_tables ${TABLES.toLocaleString('en-US')} tables`,
      quarry('sqlite', { operation: 'list_tables' }, many),
      shell(`sqlite3 ${shellQuote(many)} "SELECT 'main', name, type FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name"`),
      'sqlite3 catalogue query',
      'was 7.5-9 s, 165-180 MB',
    );
    pair(
      `list ${FILES.toLocaleString('en-US')} files`,
      quarry('list', { path: 'flat' }),
      shell(`ls -l ${shellQuote(join(dir, 'flat'))} | head -n 200`),
      'ls -l | head -n 200',
      'was 561 MB',
    );
    pair(
      'read the head of a 2 GB file',
      quarry('read', { path: 'big.log' }),
      shell(`head -n 500 ${shellQuote(join(dir, 'big.log'))}`),
      'head -n 500',
      'was 1.5 s; counting stops at 16 MiB',
    );
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
