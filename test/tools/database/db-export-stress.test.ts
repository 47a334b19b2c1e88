import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import mysql from 'mysql2/promise';
import { appendFileSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CsvExportFile } from '../../../src/tools/database/csv.js';
import { MysqlDriver } from '../../../src/tools/database/drivers/mysql.js';
import { PostgresDriver } from '../../../src/tools/database/drivers/postgres.js';
import type { CsvSink, DatabaseConfig, DatabaseDriver } from '../../../src/tools/database/types.js';
import { makeTempDir } from '../../support/context.js';
import { seededRandom, testSeed } from '../../support/random.js';
import { configsFor, makeRunner, requireEnv } from './helpers.js';

/**
 * Byte-exact exports under stress, on every engine: seeded random rows of every shape (tiny,
 * 10 MB values, a wide table, every common type, quotes, CR, LF, NUL, invalid UTF-8 in blobs
 * and, for SQLite, in text), exported through the tool and through a deliberately slow
 * consumer (a sink that waits before taking each chunk, so a producer that reuses a buffer too
 * early is caught), compared byte for byte with an independent encoding of the same rows as
 * each engine's own client reads them. Every engine ends records with CRLF (docs/guide/databases.md).
 */

/** The rows and the slow consumer's pauses come from one seed (README Tests: QUARRY_TEST_SEED replays a run). */
const SEED = testSeed(11);
const generator = (offset: number) => seededRandom((SEED + offset) >>> 0);

const PIECES = ['', 'a', ',', '"', '""', '\r', '\n', '\r\n', ' ', 'plain text', 'é', '😀', '𝔘', '\t', '\\', 'NULL', '\\.', 'x'.repeat(300)];

function randomText(next: () => number, allowNul: boolean): string {
  let text = '';
  const parts = Math.floor(next() * 8);
  for (let i = 0; i < parts; i++) {
    const pick = next();
    if (pick < 0.7) text += PIECES[Math.floor(next() * PIECES.length)]!;
    else if (pick < 0.95) text += String.fromCodePoint(0x20 + Math.floor(next() * 0x2fff));
    else text += allowNul ? '\u0000' : '\u0001';
  }
  return text;
}

function seededBytes(next: () => number, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  // Invalid UTF-8 on purpose: bare continuation bytes, 0xff, NUL.
  for (let i = 0; i < size; i++) bytes[i] = Math.floor(next() * 256);
  return bytes;
}

/** A 10 MB text full of what CSV must quote. */
function hugeText(seed: number): string {
  const unit = `seed ${seed}, "quoted" \r\n line; é😀 \n`;
  return unit.repeat(Math.ceil(10_000_000 / unit.length));
}

/** The reference encoder, written apart from csv.ts: RFC 4180, CRLF, `\x` hex for blobs. */
function referenceField(value: unknown, quoteEmpty: boolean, alone: boolean): string {
  if (value === null || value === undefined) return '';
  let text: string;
  if (Buffer.isBuffer(value)) text = `\\x${value.toString('hex')}`;
  else if (typeof value === 'bigint' || typeof value === 'number') text = String(value);
  else text = String(value);
  if (/[",\r\n]/.test(text) || (quoteEmpty && (text === '' || (alone && text === '\\.')))) return `"${text.split('"').join('""')}"`;
  return text;
}

function referenceCsv(columns: string[], rows: unknown[][], quoteEmpty = false): Buffer {
  const lines = [columns, ...rows].map((row) => row.map((value) => referenceField(value, quoteEmpty, row.length === 1)).join(',') + '\r\n');
  return Buffer.from(lines.join(''), 'utf8');
}

/** A sink that waits before it takes each chunk: a producer must not touch a chunk it handed over. */
function slowSink(file: CsvExportFile, next: () => number): CsvSink {
  // Waits up to 8 ms after every 256 KB handed over and at random about one call in 64: long
  // enough for a producer that does not wait for its chunk to be taken to run ahead and
  // overwrite it, without making an export of many small chunks take minutes.
  let bytes = 0;
  const pause = async (size: number) => {
    bytes += size;
    if (bytes < 256 * 1024 && next() >= 1 / 64) return;
    bytes = 0;
    await delay(1 + Math.floor(next() * 8));
  };
  return {
    setColumns: (columns, header) => file.setColumns(columns, header),
    setRowCount: (rows) => file.setRowCount(rows),
    writeRows: async (rows) => {
      await pause(rows.length * 100);
      await file.writeRows(rows);
    },
    writeEncoded: async (chunk, rows) => {
      await pause(chunk.length);
      await file.writeEncoded(chunk, rows);
    },
  };
}

async function exportSlowly(driver: DatabaseDriver, sql: string, dir: string, name: string, seed: number): Promise<Buffer> {
  const signal = new AbortController().signal;
  await driver.connect(signal);
  const file = await CsvExportFile.create(join(dir, name), { showProgress: false });
  try {
    await driver.exportCsv(sql, slowSink(file, generator(seed)), { readOnly: true, signal });
    await file.commit();
  } catch (error) {
    await file.discard();
    throw error;
  }
  return readFileSync(join(dir, name));
}

/** The first differing byte, for a readable failure instead of two 40 MB buffers. */
function firstDifference(actual: Buffer, expected: Buffer): string | null {
  if (actual.equals(expected)) return null;
  let i = 0;
  while (i < actual.length && i < expected.length && actual[i] === expected[i]) i++;
  return (
    `sizes ${actual.length} vs ${expected.length}; first difference at byte ${i}: ` +
    `${JSON.stringify(actual.subarray(Math.max(0, i - 20), i + 20).toString('latin1'))} vs ` +
    `${JSON.stringify(expected.subarray(Math.max(0, i - 20), i + 20).toString('latin1'))}`
  );
}

/** An export through the tool, as the model runs it; returns the file's path. */
async function exportByTool(engine: string, config: DatabaseConfig, sql: string, dir: string): Promise<string> {
  const result = await makeRunner([config], dir).run(engine, { operation: 'export_query', sql, output_path: 'timed.csv' });
  if (!result.ok) throw new Error(result.output);
  return join(dir, 'timed.csv');
}

function leftovers(dir: string, keep: string[]): string[] {
  return readdirSync(dir).filter((name) => !keep.includes(name));
}

/**
 * Sizes: seconds in `npm test`; `npm run bench` (bench/export-stress.bench.mjs) runs this file
 * bigger through QUARRY_STRESS_ROWS and QUARRY_STRESS_WIDE_COLUMNS, and with QUARRY_STRESS_REPORT
 * set each test also times the tool's export against the engine's own client on the same statement
 * (in alternation) and appends the figures to that file as JSON lines.
 */
const RANDOM_ROWS = Number(process.env.QUARRY_STRESS_ROWS ?? 5_000);
const WIDE_COLUMNS = Number(process.env.QUARRY_STRESS_WIDE_COLUMNS ?? 300);
const REPORT = process.env.QUARRY_STRESS_REPORT;
const SETUP_MS = Math.max(180_000, RANDOM_ROWS * 60);

/**
 * For the bench only: the tool's export (in process) and the engine's own client writing the same
 * statement's result to a file, three times each in alternation; appends the medians to REPORT.
 */
async function reportTimes(
  engine: string,
  sql: string,
  exportByTool: () => Promise<string>,
  reference: { name: string; argv: string[]; output: string; env?: NodeJS.ProcessEnv },
): Promise<void> {
  if (!REPORT) return;
  const tool: number[] = [];
  const client: number[] = [];
  let bytes = 0;
  for (let run = 0; run < 3; run++) {
    let started = performance.now();
    const path = await exportByTool();
    tool.push(performance.now() - started);
    bytes = statSync(path).size;
    unlinkSync(path);
    started = performance.now();
    execFileSync(reference.argv[0]!, reference.argv.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...reference.env },
      maxBuffer: 1 << 30,
    });
    client.push(performance.now() - started);
    unlinkSync(reference.output);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[1]!;
  appendFileSync(
    REPORT,
    `${JSON.stringify({ engine, sql, rows: RANDOM_ROWS, wideColumns: WIDE_COLUMNS, bytes, toolMs: median(tool), referenceName: reference.name, referenceMs: median(client) })}\n`,
  );
}
const drivers: DatabaseDriver[] = [];

afterAll(async () => {
  await Promise.allSettled(drivers.map((driver) => driver.close()));
});

function track<T extends DatabaseDriver>(driver: T): T {
  drivers.push(driver);
  return driver;
}

describe(`sqlite exports are byte-exact under stress (seed ${SEED})`, () => {
  const dir = makeTempDir();
  const dbPath = join(dir, 'stress.db');
  let config: DatabaseConfig;

  beforeAll(() => {
    const db = new Database(dbPath);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, txt TEXT, blob BLOB, big INTEGER, real REAL, any)');
    const insert = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)');
    const next = generator(0);
    db.transaction(() => {
      insert.run(1, hugeText(1), seededBytes(next, 10_000_000), 2n ** 62n, 0.1, null);
      insert.run(2, hugeText(2), null, -(2n ** 63n), -1e300, 'tiny');
      for (let id = 3; id < RANDOM_ROWS; id++) {
        const r = next();
        insert.run(
          id,
          r < 0.1 ? null : randomText(next, true),
          r < 0.3 ? seededBytes(next, Math.floor(next() * 40)) : null,
          BigInt(Math.floor((next() - 0.5) * 2 ** 53)),
          r < 0.5 ? (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20) : null,
          r < 0.6 ? randomText(next, true) : Math.floor(next() * 1000),
        );
      }
    })();
    // Text that is not valid UTF-8, as SQLite lets a text column hold it.
    db.exec("INSERT INTO t (id, txt) VALUES (1000000, CAST(x'41ff80c3' AS TEXT))");
    const wide = Array.from({ length: WIDE_COLUMNS }, (_, i) => `c${i}`);
    db.exec(`CREATE TABLE wide (${wide.join(', ')})`);
    const insertWide = db.prepare(`INSERT INTO wide VALUES (${wide.map(() => '?').join(', ')})`);
    for (let row = 0; row < 50; row++) insertWide.run(...wide.map((_, i) => (i % 3 ? randomText(next, true) : i * row)));
    db.close();
    config = configsFor([`stress=${dbPath}`], dir)[0]!;
  }, SETUP_MS);

  function reference(sql: string): Buffer {
    const db = new Database(dbPath, { readonly: true });
    db.defaultSafeIntegers(true);
    const statement = db.prepare(sql);
    const rows = statement.raw(true).all() as unknown[][];
    const columns = statement.columns().map((column) => column.name);
    db.close();
    return referenceCsv(columns, rows);
  }

  for (const sql of ['SELECT * FROM t ORDER BY id', 'SELECT * FROM wide']) {
    // SQLite's own process writes the file itself (sqlite-child.ts): there is no consumer to slow
    // down. Two exports at once, by two connections (two processes), must not mix.
    test(`${sql}: through the tool, two exports at once`, async () => {
      const expected = reference(sql);
      const other = { ...config, name: 'stress2' };
      const [first, second] = await Promise.all([
        makeRunner([config], dir).run('sqlite', { operation: 'export_query', sql, output_path: 'tool.csv' }),
        makeRunner([other], dir).run('sqlite', { operation: 'export_query', sql, output_path: 'tool2.csv' }),
      ]);
      expect(first.ok, first.output).toBe(true);
      expect(second.ok, second.output).toBe(true);
      expect(firstDifference(readFileSync(join(dir, 'tool.csv')), expected)).toBeNull();
      expect(firstDifference(readFileSync(join(dir, 'tool2.csv')), expected)).toBeNull();
      expect(leftovers(dir, ['stress.db', 'tool.csv', 'tool2.csv'])).toEqual([]);
      for (const name of ['tool.csv', 'tool2.csv']) unlinkSync(join(dir, name));
      await reportTimes('sqlite', sql, () => exportByTool('sqlite', config, sql, dir), {
        name: 'sqlite3 -csv',
        argv: ['bash', '-c', 'sqlite3 -csv -header "$0" "$1" > "$2"', dbPath, sql, join(dir, 'reference.csv')],
        output: join(dir, 'reference.csv'),
      });
    }, 1_200_000);
  }
});

describe(`postgres exports are byte-exact under stress (seed ${SEED})`, () => {
  const dir = makeTempDir();
  let admin: pg.Client;
  let url: string;

  beforeAll(async () => {
    url = requireEnv('QUARRY_TEST_PG_URL');
    admin = new pg.Client({ connectionString: url, types: { getTypeParser: () => (value: string) => value } });
    await admin.connect();
    await admin.query(`DROP TABLE IF EXISTS stress, stress_wide;
      CREATE TABLE stress (id int PRIMARY KEY, txt text, blob bytea, num numeric, dbl double precision, ts timestamptz, flag boolean, arr int[], doc jsonb)`);
    const next = generator(11);
    await admin.query('INSERT INTO stress (id, txt, blob) VALUES (1, $1, $2), (2, $3, NULL)', [hugeText(1), seededBytes(next, 10_000_000), hugeText(2)]);
    for (let start = 3; start < RANDOM_ROWS; start += 1000) {
      const values: unknown[] = [];
      const tuples: string[] = [];
      for (let id = start; id < Math.min(start + 1000, RANDOM_ROWS); id++) {
        const r = next();
        const base = values.length;
        tuples.push(`($${base + 1}, $${base + 2}, $${base + 3}, $${base + 4}, $${base + 5}, $${base + 6}, $${base + 7}, $${base + 8}, $${base + 9})`);
        values.push(
          id,
          r < 0.1 ? null : randomText(next, false),
          r < 0.3 ? seededBytes(next, Math.floor(next() * 40)) : null,
          r < 0.5 ? `${Math.floor((next() - 0.5) * 1e12)}.${Math.floor(next() * 1e6)}` : null,
          r < 0.6 ? (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20) : null,
          r < 0.7 ? new Date(Math.floor(next() * 4e12)).toISOString() : null,
          r < 0.8 ? next() < 0.5 : null,
          r < 0.5 ? `{${Math.floor(next() * 100)},${Math.floor(next() * 100)}}` : null,
          r < 0.4 ? JSON.stringify({ k: randomText(next, false), n: id }) : null,
        );
      }
      await admin.query(`INSERT INTO stress VALUES ${tuples.join(', ')}`, values);
    }
    const wide = Array.from({ length: WIDE_COLUMNS }, (_, i) => `c${i} text`);
    await admin.query(`CREATE TABLE stress_wide (${wide.join(', ')})`);
    for (let row = 0; row < 50; row++) {
      await admin.query(
        `INSERT INTO stress_wide VALUES (${wide.map((_, i) => `$${i + 1}`).join(', ')})`,
        wide.map((_, i) => wideValue(randomText(next, false), i)),
      );
    }
  }, SETUP_MS);

  afterAll(async () => {
    await admin?.query('DROP TABLE IF EXISTS stress, stress_wide').catch(() => undefined);
    await admin?.end();
  });

  /** A PostgreSQL row must fit in a page (8,160 bytes): wider than 300 columns, two in three are NULL and the rest short. */
  function wideValue(text: string, column: number): string | null {
    if (WIDE_COLUMNS <= 300) return text;
    return column % 3 === 0 ? Array.from(text).slice(0, 3).join('') : null;
  }

  async function reference(sql: string): Promise<Buffer> {
    const result = await admin.query({ text: sql, rowMode: 'array' });
    // COPY quotes an empty string (an unquoted empty field is NULL) and a lone \. as well.
    return referenceCsv(
      result.fields.map((field) => field.name),
      result.rows as unknown[][],
      true,
    );
  }

  for (const sql of ['SELECT * FROM stress ORDER BY id', 'SELECT * FROM stress_wide']) {
    test(`${sql}: through a slow consumer and through the tool`, async () => {
      const expected = await reference(sql);
      const config = configsFor([`stress=${url}`], dir)[0]!;
      const slow = await exportSlowly(track(new PostgresDriver(config, true)), sql, dir, 'slow.csv', 6);
      expect(firstDifference(slow, expected)).toBeNull();
      const result = await makeRunner([config], dir).run('postgres', { operation: 'export_query', sql, output_path: 'tool.csv' });
      expect(result.ok, result.output).toBe(true);
      expect(firstDifference(readFileSync(join(dir, 'tool.csv')), expected)).toBeNull();
      expect(leftovers(dir, ['slow.csv', 'tool.csv'])).toEqual([]);
      for (const name of ['slow.csv', 'tool.csv']) unlinkSync(join(dir, name));
      await reportTimes('postgres', sql, () => exportByTool('postgres', config, sql, dir), {
        name: 'psql \\copy',
        argv: ['psql', '-X', '-q', '-d', url, '-c', `\\copy (${sql}) TO '${join(dir, 'reference.csv')}' CSV HEADER`],
        output: join(dir, 'reference.csv'),
      });
    }, 1_200_000);
  }
});

describe(`mysql exports are byte-exact under stress (seed ${SEED})`, () => {
  const dir = makeTempDir();
  let admin: mysql.Connection;
  let url: string;

  beforeAll(async () => {
    url = requireEnv('QUARRY_TEST_MYSQL_URL');
    const root = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL') });
    // 10 MB values in one packet (the default is 16 MB, and blobs are escaped in text queries).
    await root.query('SET GLOBAL max_allowed_packet = 67108864');
    await root.end();
    admin = await mysql.createConnection({
      uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'),
      supportBigNumbers: true,
      bigNumberStrings: true,
      dateStrings: true,
      rowsAsArray: true,
      multipleStatements: true,
    });
    await admin.query(
      `DROP TABLE IF EXISTS stress, stress_wide;
      CREATE TABLE stress (id INT PRIMARY KEY, txt LONGTEXT, blb LONGBLOB, num DECIMAL(30, 10), dbl DOUBLE, ts DATETIME(6), big BIGINT, tiny TINYINT) ` +
        `CHARACTER SET utf8mb4`,
    );
    const next = generator(22);
    await admin.execute('INSERT INTO stress (id, txt, blb) VALUES (1, ?, ?), (2, ?, NULL)', [hugeText(1), seededBytes(next, 10_000_000), hugeText(2)]);
    const rows: unknown[][] = [];
    for (let id = 3; id < RANDOM_ROWS; id++) {
      const r = next();
      rows.push([
        id,
        r < 0.1 ? null : randomText(next, true),
        r < 0.3 ? seededBytes(next, Math.floor(next() * 40)) : null,
        r < 0.5 ? `${Math.floor((next() - 0.5) * 1e12)}.${Math.floor(next() * 1e6)}` : null,
        r < 0.6 ? (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20) : null,
        r < 0.7 ? `20${10 + Math.floor(next() * 20)}-0${1 + Math.floor(next() * 9)}-1${Math.floor(next() * 9)} 12:34:56.${Math.floor(next() * 1e6)}` : null,
        r < 0.8 ? `${BigInt(Math.floor((next() - 0.5) * 2 ** 53)) * 1000n}` : null,
        Math.floor(next() * 200) - 100,
      ]);
      if (rows.length === 1000 || id === RANDOM_ROWS - 1) {
        await admin.query('INSERT INTO stress VALUES ?', [rows.splice(0)]);
      }
    }
    // InnoDB keeps a row within 8,126 bytes (1,017 columns at most): the bench's 1,000 columns use Aria.
    const wide = Array.from({ length: WIDE_COLUMNS }, (_, i) => `c${i}`);
    await admin.query(
      `CREATE TABLE stress_wide (${wide.map((name) => `${name} TEXT`).join(', ')}) CHARACTER SET utf8mb4 ` +
        `${WIDE_COLUMNS > 300 ? 'ENGINE=Aria' : 'ROW_FORMAT=DYNAMIC'}`,
    );
    const wideRows = Array.from({ length: 50 }, () => wide.map(() => randomText(next, true).slice(0, 20)));
    await admin.query('INSERT INTO stress_wide VALUES ?', [wideRows]);
  }, SETUP_MS);

  afterAll(async () => {
    await admin?.query('DROP TABLE IF EXISTS stress, stress_wide').catch(() => undefined);
    await admin?.end();
  });

  async function reference(sql: string): Promise<Buffer> {
    const [rows, fields] = await admin.query({ sql, rowsAsArray: true });
    return referenceCsv(
      (fields as { name: string }[]).map((field) => field.name),
      rows as unknown[][],
    );
  }

  for (const sql of ['SELECT * FROM stress ORDER BY id', 'SELECT * FROM stress_wide']) {
    test(`${sql}: through a slow consumer and through the tool`, async () => {
      const expected = await reference(sql);
      const config = configsFor([`stress=${url}`], dir)[0]!;
      const slow = await exportSlowly(track(new MysqlDriver(config, true)), sql, dir, 'slow.csv', 7);
      expect(firstDifference(slow, expected)).toBeNull();
      const result = await makeRunner([config], dir).run('mysql', { operation: 'export_query', sql, output_path: 'tool.csv' });
      expect(result.ok, result.output).toBe(true);
      expect(firstDifference(readFileSync(join(dir, 'tool.csv')), expected)).toBeNull();
      expect(leftovers(dir, ['slow.csv', 'tool.csv'])).toEqual([]);
      for (const name of ['slow.csv', 'tool.csv']) unlinkSync(join(dir, name));
      const { hostname, port, username, password, pathname } = new URL(url);
      await reportTimes('mysql', sql, () => exportByTool('mysql', config, sql, dir), {
        name: 'mariadb --batch',
        argv: [
          'bash',
          '-c',
          'mariadb --batch --raw --quick --max-allowed-packet=1G -h "$0" -P "$1" -u "$2" "$3" -e "$4" > "$5"',
          hostname,
          port,
          decodeURIComponent(username),
          pathname.slice(1),
          sql,
          join(dir, 'reference.tsv'),
        ],
        output: join(dir, 'reference.tsv'),
        env: { MYSQL_PWD: decodeURIComponent(password) },
      });
    }, 1_200_000);
  }
});
