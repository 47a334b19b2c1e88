import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { csvLine } from '../../../src/tools/database/csv.js';
import { SqliteProcessDriver } from '../../../src/tools/database/drivers/sqlite-process.js';
import type { CellValue, CsvSink } from '../../../src/tools/database/types.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, makeRunner } from './helpers.js';

/**
 * export_query of SQLite must be exact: every value of the file reads back as what the table
 * holds. Exports run in SQLite's own process (sqlite-child.ts), which encodes with csv.ts, the
 * encoder every engine shares, so csv.ts over the rows better-sqlite3 returns is the reference,
 * REAL values included: they are written as the shortest text that reads back as the same double.
 */

/** A seeded 64-bit generator (PCG's LCG step), so failures reproduce. */
function randomBits(seed: bigint): () => bigint {
  let state = seed;
  return () => {
    state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return state;
  };
}

/** Strict RFC 4180 parser (independent of csv.ts): records of fields, CRLF line ends only. */
function parseStrictCsv(text: string): string[][] {
  const records: string[][] = [];
  let i = 0;
  while (i < text.length) {
    const record: string[] = [];
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          const quote = text.indexOf('"', i);
          if (quote < 0) throw new Error('unterminated quoted field');
          field += text.slice(i, quote);
          i = quote + 1;
          if (text[i] !== '"') break;
          field += '"';
          i++;
        }
      } else {
        const end = text.slice(i).search(/[,\r"\n]/);
        const stop = end < 0 ? text.length : i + end;
        if (text[stop] === '"' || text[stop] === '\n') throw new Error(`bare quote or LF in an unquoted field at ${stop}`);
        field = text.slice(i, stop);
        i = stop;
      }
      record.push(field);
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text.startsWith('\r\n', i)) {
        i += 2;
        break;
      }
      throw new Error(`expected a comma or CRLF at ${i}`);
    }
    records.push(record);
  }
  return records;
}

/** Connections are cached by alias for the process, so every table gets its own. */
let tables = 0;

function exportTable(setup: (db: Database.Database) => void, sql: string) {
  const dir = makeTempDir();
  const dbPath = join(dir, 'exact.db');
  const alias = `exact${++tables}`;
  const db = new Database(dbPath);
  db.defaultSafeIntegers(true);
  setup(db);
  const rows = db.prepare(sql).raw(true).all() as CellValue[][];
  const columns = db
    .prepare(sql)
    .columns()
    .map((column) => column.name);
  db.close();
  return {
    rows,
    columns,
    run: async () => {
      const result = await makeRunner(configsFor([`${alias}=${dbPath}`], dir), dir).run('sqlite', { operation: 'export_query', sql, output_path: 'out.csv' });
      expect(result.ok, result.output).toBe(true);
      return { result, bytes: readFileSync(join(dir, 'out.csv')) };
    },
  };
}

const EDGE_TEXTS = [
  '',
  'plain',
  'comma, inside',
  'say "hi"',
  '"',
  '""',
  'line\nfeed',
  'carriage\rreturn',
  'crlf\r\nend',
  ' leading and trailing ',
  'tab\there',
  'nul\u0000inside, with comma',
  'üñíçødé',
  'astral 😀 and 𝔘',
  'x'.repeat(5000),
  '\\x0a looks like a blob',
  'NULL',
];

describe('sqlite export_query is exact', () => {
  test("text, integers, blobs and NULL: the file is byte for byte what quarry's own encoder writes", async () => {
    const table = exportTable((db) => {
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v, w TEXT)');
      const insert = db.prepare('INSERT INTO t (v, w) VALUES (?, ?)');
      const next = randomBits(7n);
      const integers = [0n, 1n, -1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n)];
      db.transaction(() => {
        // Enough rows (about 3 MB) that lines and multi-byte characters cross the 1 MiB output buffer.
        for (let i = 0; i < 30_000; i++) {
          const bits = next();
          const kind = Number(bits % 5n);
          const value =
            kind === 0
              ? EDGE_TEXTS[i % EDGE_TEXTS.length]!
              : kind === 1
                ? i < integers.length
                  ? integers[i]!
                  : BigInt.asIntN(64, bits)
                : kind === 2
                  ? Buffer.from(bits.toString(16), 'hex')
                  : kind === 3
                    ? null
                    : `row ${i} ${'é😀,"\r\n'.slice(0, Number(bits % 7n))}`;
          insert.run(value, EDGE_TEXTS[(i * 7) % EDGE_TEXTS.length]!);
        }
      })();
    }, 'SELECT * FROM t ORDER BY id');
    const { bytes, result } = await table.run();
    const expected = csvLine(table.columns) + table.rows.map((row) => csvLine(row)).join('');
    expect(bytes.equals(Buffer.from(expected, 'utf8'))).toBe(true);
    expect(result.metadata).toMatchObject({ rows: 30_000, bytes: bytes.length, columns: ['id', 'v', 'w'] });
    expect(result.output).toContain('first 5 rows:');
  });

  test('REAL values: 10,000 seeded random doubles and edge values all read back as the same number', async () => {
    const edges = [
      0.1,
      0.2 + 0.1,
      1 / 3,
      2,
      100,
      -2.5,
      1e-6,
      1e-7,
      1e15,
      1e16,
      1e17,
      1e21,
      123456789012345680000,
      2 ** 53,
      2 ** 53 + 2,
      Number.MAX_VALUE,
      -Number.MAX_VALUE,
      Number.MIN_VALUE,
      2.2250738585072014e-308,
      4.35,
      0.07,
      1234.5678,
    ];
    const next = randomBits(20261122n);
    const doubles: number[] = [...edges];
    const view = new DataView(new ArrayBuffer(8));
    while (doubles.length < edges.length + 10_000) {
      const bits = next();
      view.setBigUint64(0, bits);
      const pick = Number(bits % 3n);
      // Raw bit patterns cover every exponent; the other two look like measured and money values.
      const value = pick === 0 ? view.getFloat64(0) : pick === 1 ? Number(bits % 100_000_000n) / 100 : Number(bits % 10n ** 15n) / 10 ** Number(bits % 25n);
      if (Number.isFinite(value)) doubles.push(value);
    }
    const table = exportTable((db) => {
      db.exec('CREATE TABLE r (id INTEGER PRIMARY KEY, x, y REAL)');
      const insert = db.prepare('INSERT INTO r (x, y) VALUES (?, ?)');
      db.transaction(() => {
        for (const value of doubles) insert.run(value, -value);
        insert.run(-0, Infinity);
        insert.run(-Infinity, null);
      })();
    }, 'SELECT x, y FROM r ORDER BY id');
    const { bytes, result } = await table.run();
    const records = parseStrictCsv(bytes.toString('utf8'));
    expect(records[0]).toEqual(['x', 'y']);
    expect(records.length - 1).toBe(doubles.length + 2);
    expect(result.metadata).toMatchObject({ rows: doubles.length + 2 });
    doubles.forEach((value, i) => {
      const [x, y] = records[i + 1]!;
      if (Number(x) !== value || Number(y) !== -value) expect(`${x}, ${y}`).toBe(`${value}, ${-value}`);
      // The shortest such text: one digit fewer would no longer read back as the same double.
      expect(x!.replace(/^-/, '').replace(/e.*$/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length, `row ${i}: ${x}`).toBeLessThanOrEqual(17);
    });
    expect(records[1 + edges.indexOf(0.1)]).toEqual(['0.1', '-0.1']);
    expect(records[1 + edges.indexOf(2)]).toEqual(['2', '-2']);
    expect(records[1 + edges.indexOf(1e-7)]).toEqual(['1e-7', '-1e-7']);
    // The sign of zero is not kept (as in JavaScript's own text); infinities are spelled out.
    expect(records.slice(-2)).toEqual([
      ['0', 'Infinity'],
      ['-Infinity', ''],
    ]);
  });

  test('wide rows (450 columns) are exported whole', async () => {
    const width = 450;
    const table = exportTable((db) => {
      const columns = Array.from({ length: width }, (_, i) => `c${i}`);
      db.exec(`CREATE TABLE wide (${columns.join(', ')})`);
      const insert = db.prepare(`INSERT INTO wide VALUES (${columns.map(() => '?').join(', ')})`);
      for (let row = 0; row < 3; row++) insert.run(...columns.map((_, i) => (i % 3 === 0 ? `v${row}.${i}, "q"` : i % 3 === 1 ? BigInt(row * i) : null)));
    }, 'SELECT * FROM wide');
    const { bytes } = await table.run();
    expect(bytes.toString('utf8')).toBe(csvLine(table.columns) + table.rows.map((row) => csvLine(row)).join(''));
  });

  test('rows wider than a SQLite function takes (1,100 columns) go through the row-by-row path, byte for byte the same', async () => {
    const width = 1100;
    const table = exportTable((db) => {
      const columns = Array.from({ length: width }, (_, i) => `c${i}`);
      db.exec(`CREATE TABLE wider (${columns.join(', ')})`);
      const insert = db.prepare(`INSERT INTO wider VALUES (${columns.map(() => '?').join(', ')})`);
      for (let row = 0; row < 4; row++)
        insert.run(...columns.map((_, i) => (i % 4 === 0 ? `v${row}.${i}, "q"` : i % 4 === 1 ? BigInt(row * i) : i % 4 === 2 ? row / 8 : null)));
    }, 'SELECT * FROM wider');
    const { bytes, result } = await table.run();
    expect(bytes.toString('utf8')).toBe(csvLine(table.columns) + table.rows.map((row) => csvLine(row)).join(''));
    expect(result.metadata).toMatchObject({ rows: 4 });
  });
});

describe('sqlite export_query keeps the order of the statement', () => {
  // The export wraps the statement in an aggregate; SQLite must still feed it the rows in the
  // statement's own order. Each statement's file must equal its rows, in order, as the statement
  // returns them by itself.
  const setup = (db: Database.Database) => {
    db.exec('CREATE TABLE a (id INTEGER PRIMARY KEY, k INTEGER, label TEXT); CREATE TABLE b (a_id INTEGER, amount REAL); CREATE INDEX b_a ON b(a_id)');
    const next = randomBits(99n);
    const insertA = db.prepare('INSERT INTO a (k, label) VALUES (?, ?)');
    const insertB = db.prepare('INSERT INTO b VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 3000; i++) insertA.run(Number(next() % 50n), `label ${Number(next() % 1000n)}`);
      for (let i = 0; i < 6000; i++) insertB.run(Number(next() % 3000n) + 1, Number(next() % 100000n) / 100);
    })();
  };
  const statements = [
    'SELECT * FROM a ORDER BY label DESC, id',
    'SELECT a.id, a.label, b.amount FROM a JOIN b ON b.a_id = a.id ORDER BY b.amount, a.id, b.rowid',
    'SELECT k, count(*) AS n, sum(id) FROM a GROUP BY k ORDER BY n DESC, k',
    'SELECT DISTINCT label FROM a ORDER BY label',
    'SELECT id, label FROM a WHERE k < 10 UNION ALL SELECT a_id, amount FROM b WHERE amount > 900 ORDER BY 2 DESC, 1',
    'SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY id DESC) AS r FROM a ORDER BY k, r',
    'SELECT * FROM (SELECT * FROM a ORDER BY id DESC LIMIT 500 OFFSET 20) ORDER BY label, id',
    'WITH t AS (SELECT k, max(id) AS m FROM a GROUP BY k) SELECT * FROM t ORDER BY m DESC',
    "VALUES (3, 'c'), (1, 'a'), (2, 'b')",
  ];
  for (const sql of statements) {
    test(sql, async () => {
      const table = exportTable(setup, sql);
      const { bytes } = await table.run();
      expect(table.rows.length).toBeGreaterThan(2);
      expect(bytes.toString('utf8')).toBe(csvLine(table.columns) + table.rows.map((row) => csvLine(row)).join(''));
    });
  }
});

describe('sqlite export_query stops when asked', () => {
  function bigDatabase() {
    const dir = makeTempDir();
    const dbPath = join(dir, 'big.db');
    const db = new Database(dbPath);
    db.exec('CREATE TABLE t (v INTEGER); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 100000) INSERT INTO t SELECT i FROM n');
    db.close();
    return { dir, dbPath };
  }

  test('the statement timeout stops an export part-way and leaves no file', async () => {
    const { dir, dbPath } = bigDatabase();
    const configs = configsFor([`slow${++tables}=${dbPath}`], dir).map((config) => ({ ...config, statementTimeoutMs: 300 }));
    const started = Date.now();
    const result = await makeRunner(configs, dir).run('sqlite', { operation: 'export_query', sql: 'SELECT a.v, b.v FROM t a, t b', output_path: 'slow.csv' });
    expect(result.ok).toBe(false);
    expect(result.metadata.error).toBe('timeout');
    expect(result.output).toContain('statement timeout (0.3 s)');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(readdirSync(dir).sort()).toEqual(['big.db']);
  });

  test('a cancel during one long SQLite step (no row yet) still answers within seconds and leaves no file', async () => {
    const { dir, dbPath } = bigDatabase();
    const runner = makeRunner(configsFor([`step${++tables}=${dbPath}`], dir), dir);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    // One row at the very end: about 10^10 joined rows are counted inside a single SQLite step.
    const result = await runner.run('sqlite', { operation: 'export_query', sql: 'SELECT count(*) FROM t a, t b', output_path: 'never.csv' }, controller.signal);
    expect(result.ok).toBe(false);
    expect(result.metadata.error).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(readdirSync(dir).sort()).toEqual(['big.db']);
  });
});

describe('the SQLite process writes only the export file it was handed', () => {
  /** A sink that hands over another file than its own: what the child is told to open. */
  function handingOver(file: { path: string; dev: string; ino: string }): CsvSink {
    return {
      setColumns: () => undefined,
      writeRows: async () => undefined,
      writeEncoded: async () => undefined,
      setRowCount: () => undefined,
      directFile: async () => file,
      directWritten: () => undefined,
    };
  }

  function identity(path: string) {
    const stat = statSync(path, { bigint: true });
    return { path, dev: String(stat.dev), ino: String(stat.ino) };
  }

  async function attempt(sink: CsvSink) {
    const dir = makeTempDir();
    const dbPath = join(dir, 'one.db');
    const db = new Database(dbPath);
    db.exec("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('secret row')");
    db.close();
    const driver = new SqliteProcessDriver(configsFor([`handover${++tables}=${dbPath}`], dir)[0]!, true);
    const options = { readOnly: true, signal: new AbortController().signal };
    await driver.connect();
    try {
      const started = Date.now();
      const error = await driver.exportCsv('SELECT v FROM t', sink, options).then(
        () => null,
        (caught: unknown) => caught as Error,
      );
      return { error, ms: Date.now() - started };
    } finally {
      await driver.close();
    }
  }

  test('a link put where the temporary file was: refused, and the file it points at is unchanged', async () => {
    const dir = makeTempDir();
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, '');
    const link = join(dir, '.out.csv.tmp');
    symlinkSync(victim, link);
    // Even with the identity of the file the link points at.
    const { error } = await attempt(handingOver({ ...identity(victim), path: link }));
    expect(error?.message).toMatch(/ELOOP|symbolic link/i);
    expect(readFileSync(victim, 'utf8')).toBe('');
  });

  test('another file under the same name: refused before anything is written', async () => {
    const dir = makeTempDir();
    const created = join(dir, 'created.tmp');
    writeFileSync(created, '');
    const swapped = join(dir, 'swapped.tmp');
    writeFileSync(swapped, '');
    const { error } = await attempt(handingOver({ ...identity(created), path: swapped }));
    expect(error?.message).toContain('was replaced meanwhile; nothing was written');
    expect(readFileSync(swapped, 'utf8')).toBe('');
    expect(readFileSync(created, 'utf8')).toBe('');
  });

  test('a file that is no longer empty: refused, its contents kept', async () => {
    const dir = makeTempDir();
    const path = join(dir, 'full.tmp');
    writeFileSync(path, 'kept');
    const { error } = await attempt(handingOver(identity(path)));
    expect(error?.message).toContain('was replaced meanwhile');
    expect(readFileSync(path, 'utf8')).toBe('kept');
  });

  test('a FIFO put in its place: refused at once instead of waiting for a reader', async () => {
    const dir = makeTempDir();
    const fifo = join(dir, 'fifo.tmp');
    execFileSync('mkfifo', [fifo]);
    const { error, ms } = await attempt(handingOver(identity(fifo)));
    expect(error?.message).toMatch(/ENXIO|replaced meanwhile/);
    expect(ms).toBeLessThan(10_000);
  });

  test('a sink without a file of its own is refused with a clear error', async () => {
    const sink: CsvSink = { setColumns: () => undefined, writeRows: async () => undefined, writeEncoded: async () => undefined, setRowCount: () => undefined };
    const { error } = await attempt(sink);
    expect(error?.message).toContain('needs an empty file of its own');
  });
});
