import type Database from 'better-sqlite3';
import { writeSync } from 'node:fs';
import {
  EXPORT_FD,
  FRAME_COLUMNS,
  FRAME_CSV,
  FRAME_END,
  FRAME_HEADER_BYTES,
  type ChildError,
  type ChildReply,
  type ChildRequest,
} from './sqlite-child-protocol.js';
import { EXPORT_CACHE_SIZE, wrapStatement } from './sqlite-export-protocol.js';
import { SqliteDriver } from './sqlite.js';
import { csvLine } from '../csv.js';
import { nodeCrypto } from '../../../node-crypto.js';
import { ToolError } from '../../core/types.js';
import { ReadOnlyViolation } from '../sql/statement-check.js';
import type { CellValue, CsvSink, RunOptions } from '../types.js';

/**
 * The process a SQLite database is used in (started by sqlite-process.ts). better-sqlite3 runs a
 * statement in one synchronous call on the calling thread, and this build of SQLite has neither a
 * progress handler nor sqlite3_interrupt: a long step (a recursive CTE, a big sort) can only be
 * stopped by ending the process it runs in. A worker thread cannot be ended in the middle of a
 * native call (its terminate() waits for the call to return). So quarry keeps one such process
 * per database connection and kills it on Ctrl+C, the statement timeout or the profile budget.
 *
 * Requests come one at a time over the IPC channel; an export writes its CSV as frames to its own
 * pipe (sqlite-child-protocol.ts), in this process's only thread.
 *
 * An export runs the statement as `SELECT <sink>(c0, …) FROM (<the user's statement>)` in one
 * call: better-sqlite3 hands rows over one `iterate()` call at a time, which costs more than
 * SQLite's own work, and calling a JavaScript aggregate from inside the statement costs a
 * fraction of that. The sink is an aggregate other than count/min/max, so SQLite keeps the inner
 * ORDER BY and feeds the rows in that order (SQLite's select.c: an ORDER BY in a FROM subquery is
 * only dropped when the outer query has its own ORDER BY or a join; an aggregate outer query
 * never flattens an ordered subquery). Its name is random, so the user's statement cannot call it.
 */

/** Lines gathered as one string before they are encoded and written. */
const TEXT_CHARS = 64 * 1024;

const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + TEXT_CHARS * 3 + 1024);
const pause = new Int32Array(new SharedArrayBuffer(4));

function writeAll(bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) {
    try {
      done += writeSync(EXPORT_FD, bytes, done, bytes.length - done);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

function writeFrame(id: number, type: number, payload: string | Uint8Array, rows: number): void {
  let bytes: number;
  if (typeof payload === 'string') {
    if (payload.length * 3 > frame.length - FRAME_HEADER_BYTES) {
      writeFrame(id, type, Buffer.from(payload, 'utf8'), rows);
      return;
    }
    bytes = frame.write(payload, FRAME_HEADER_BYTES, 'utf8');
    frame.writeUInt32LE(id, 0);
    frame.writeUInt32LE(type, 4);
    frame.writeUInt32LE(bytes, 8);
    frame.writeUInt32LE(rows, 12);
    writeAll(frame.subarray(0, FRAME_HEADER_BYTES + bytes));
    return;
  }
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  header.writeUInt32LE(id, 0);
  header.writeUInt32LE(type, 4);
  header.writeUInt32LE(payload.length, 8);
  header.writeUInt32LE(rows, 12);
  writeAll(header);
  writeAll(payload);
}

/** The CsvSink of an export request: every call is written to the pipe before it returns. */
function frameSink(id: number): CsvSink {
  return {
    setColumns(columns, encodedHeader) {
      writeFrame(id, FRAME_COLUMNS, JSON.stringify({ columns, ...(encodedHeader === undefined ? {} : { header: encodedHeader }) }), 0);
    },
    async writeRows(rows) {
      let text = '';
      for (const row of rows) text += csvLine(row);
      writeFrame(id, FRAME_CSV, text, rows.length);
    },
    async writeEncoded(chunk, rowCount) {
      writeFrame(id, FRAME_CSV, chunk, rowCount);
    },
    setRowCount() {},
  };
}

/** Where the export's aggregate sends its lines (one aggregate per connection, registered once). */
let lines: ((values: CellValue[]) => void) | null = null;
let sinkName: string | null = null;

/** A wrappable statement's export, in this thread: `SELECT sink(c0, …) FROM (statement)`. */
async function exportHere(db: Database.Database, sql: string, columnCount: number, sink: CsvSink): Promise<void> {
  if (!sinkName) {
    sinkName = `quarry_csv_${nodeCrypto().randomBytes(8).toString('hex')}`;
    db.aggregate(sinkName, {
      start: 0,
      varargs: true,
      safeIntegers: true,
      step: (_count: number, ...values: CellValue[]) => {
        lines?.(values);
        return 0;
      },
    });
  }
  let text = '';
  let rows = 0;
  lines = (values) => {
    text += csvLine(values);
    rows++;
    if (text.length >= TEXT_CHARS) {
      void sink.writeEncoded(text, rows);
      text = '';
      rows = 0;
    }
  };
  const cacheSize = db.pragma('cache_size', { simple: true }) as number;
  db.pragma(`cache_size = ${EXPORT_CACHE_SIZE}`);
  try {
    db.prepare(wrapStatement(sql, columnCount, (columns) => `SELECT ${sinkName}(${columns}) FROM quarry_statement`))
      .pluck(true)
      .get();
  } finally {
    lines = null;
    db.pragma(`cache_size = ${cacheSize}`);
  }
  if (rows > 0) await sink.writeEncoded(text, rows);
}

let driver: SqliteDriver | null = null;
/** Nothing aborts here: the parent stops a statement by ending this process. */
const never = new AbortController().signal;

async function handle(request: ChildRequest): Promise<unknown> {
  if (request.op === 'open') {
    driver = new SqliteDriver(request.config, request.readOnly, (sql, columnCount, sink, _options, db) => exportHere(db, sql, columnCount, sink));
    await driver.connect();
    return null;
  }
  if (!driver) throw new Error('the SQLite process has no open database');
  const options: RunOptions = { readOnly: request.readOnly, signal: never };
  switch (request.op) {
    case 'query':
      return driver.query(request.sql, request.limit, options);
    case 'describe':
      return driver.describe(request.table, options);
    case 'catalog':
      return driver.catalog(request.sql, request.params, options);
    case 'ping':
      return driver.ping(options);
    case 'export': {
      const sink = frameSink(request.id);
      let rows = 0;
      const counting: CsvSink = {
        ...sink,
        async writeRows(batch) {
          rows += batch.length;
          await sink.writeRows(batch);
        },
        async writeEncoded(chunk, rowCount) {
          rows += rowCount;
          await sink.writeEncoded(chunk, rowCount);
        },
      };
      await driver.exportCsv(request.sql, counting, options);
      writeFrame(request.id, FRAME_END, '', rows);
      return rows;
    }
  }
}

function describeError(error: unknown): ChildError {
  if (error instanceof ReadOnlyViolation) return { message: error.message, readOnlyViolation: true };
  if (error instanceof ToolError) return { message: error.message, kind: error.kind, metadata: error.metadata };
  return { message: error instanceof Error ? error.message : String(error) };
}

if (process.send) {
  process.on('message', (request: ChildRequest) => {
    void handle(request).then(
      (value) => process.send!({ id: request.id, ok: true, value } satisfies ChildReply),
      (error: unknown) => process.send!({ id: request.id, ok: false, error: describeError(error) } satisfies ChildReply),
    );
  });
  // quarry closed the connection or ended: so does this process.
  process.on('disconnect', () => process.exit(0));
}
