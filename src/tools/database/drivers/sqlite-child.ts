import type Database from 'better-sqlite3';
import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs';
import type { ChildError, ChildReply, ChildRequest, DirectFile, DirectWritten } from './sqlite-child-protocol.js';
import { EXPORT_CACHE_SIZE, wrapStatement } from './sqlite-export-protocol.js';
import { SqliteDriver } from './sqlite.js';
import { csvLine, PREVIEW_BYTES, PROGRESS_INTERVAL_MS } from '../csv.js';
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
 * Requests come one at a time over the IPC channel. An export writes its CSV, header first,
 * straight into the export's temporary file, which the parent created and hands over
 * (CsvSink.directFile); the parent only waits, and shows the progress this process sends. This
 * replaced frames through a pipe that the parent copied into the file: writing here took the
 * pipe's copies, its full-pipe waits and the parent's reads and writes off every exported byte
 * (docs/development/benchmarks.md).
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

/** Bytes gathered before an export writes them out. */
const DIRECT_WRITE_BYTES = 1 << 20;

/** Opens the parent's temporary file, refusing anything that is not that very file, still empty. */
function openDirect(file: DirectFile): number {
  // O_NONBLOCK: a FIFO put in its place fails at once (ENXIO) instead of waiting for a reader.
  const fd = openSync(file.path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (String(stat.dev) !== file.dev || String(stat.ino) !== file.ino || stat.size !== 0n || !stat.isFile()) {
      throw new Error(`the export's temporary file ${file.path} was replaced meanwhile; nothing was written`);
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** A CsvSink that writes the whole CSV, header first, into an open file (the parent's temporary file). */
class DirectSink implements CsvSink {
  private readonly buffer = Buffer.allocUnsafe(DIRECT_WRITE_BYTES + TEXT_CHARS * 3);
  private used = 0;
  /** Bytes written to the file so far. */
  private position = 0;
  private rows = 0;
  private columns: string[] = [];
  /** The header's length in bytes: the preview's first bytes start there. */
  private headerBytes = 0;
  /** The first PREVIEW_BYTES after the header, sent back for the preview (csv.ts keeps as many). */
  private readonly head = Buffer.allocUnsafe(PREVIEW_BYTES);
  private headBytes = 0;
  private lastProgress = Date.now();
  /** The first write error: the file has a gap from there on. */
  private failure: unknown = null;

  constructor(
    private readonly fd: number,
    private readonly id: number,
  ) {}

  setColumns(columns: string[], encodedHeader?: string): void {
    this.columns = columns;
    const header = encodedHeader ?? csvLine(columns);
    this.headerBytes = Buffer.byteLength(header, 'utf8');
    this.write(header, 0);
  }

  async writeRows(rows: CellValue[][]): Promise<void> {
    let text = '';
    for (const row of rows) text += csvLine(row);
    this.write(text, rows.length);
  }

  async writeEncoded(chunk: string | Buffer, rowCount: number): Promise<void> {
    this.write(chunk, rowCount);
  }

  setRowCount(): void {}

  /**
   * Takes encoded lines, synchronously: a write that fails (a full disk) throws here, inside the
   * caller, which for an export is the statement's own aggregate step, so SQLite stops at once.
   * After a failure every later call throws the same error: nothing is written past a gap.
   */
  write(chunk: string | Uint8Array, rowCount: number): void {
    if (this.failure) throw this.failure;
    try {
      if (typeof chunk === 'string' && chunk.length * 3 <= this.buffer.length - this.used) {
        this.used += this.buffer.write(chunk, this.used, 'utf8');
      } else {
        const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
        if (bytes.length > this.buffer.length - this.used) {
          this.flush();
          this.writeOut(bytes);
        } else {
          this.buffer.set(bytes, this.used);
          this.used += bytes.length;
        }
      }
      if (this.used >= DIRECT_WRITE_BYTES) this.flush();
    } catch (error) {
      this.failure = error;
      throw error;
    }
    this.rows += rowCount;
    // Checked per chunk (64K characters), not per megabyte: a slow statement's rows come slowly.
    const now = Date.now();
    if (now - this.lastProgress >= PROGRESS_INTERVAL_MS) {
      this.lastProgress = now;
      process.send?.({ id: this.id, progress: { rows: this.rows, bytes: this.position + this.used } } satisfies ChildReply);
    }
  }

  private flush(): void {
    if (this.used > 0) this.writeOut(this.buffer.subarray(0, this.used));
    this.used = 0;
  }

  private writeOut(bytes: Uint8Array): void {
    let done = 0;
    while (done < bytes.length) done += writeSync(this.fd, bytes, done, bytes.length - done, this.position + done);
    // The part of these bytes that falls in the preview's first bytes, by file position (once written).
    const from = Math.max(this.headerBytes + this.headBytes, this.position);
    const to = Math.min(this.headerBytes + PREVIEW_BYTES, this.position + bytes.length);
    if (to > from && from === this.headerBytes + this.headBytes) {
      this.head.set(bytes.subarray(from - this.position, to - this.position), this.headBytes);
      this.headBytes += to - from;
    }
    this.position += bytes.length;
  }

  /** Writes what is left and says what was written. */
  finish(): DirectWritten {
    if (this.failure) throw this.failure;
    this.flush();
    return { columns: this.columns, rows: this.rows, bytes: this.position, head: this.head.subarray(0, this.headBytes) };
  }
}

/** Where the export's aggregate sends its lines (one aggregate per connection, registered once). */
let lines: ((values: CellValue[]) => void) | null = null;
let sinkName: string | null = null;

/** A wrappable statement's export, in this thread: `SELECT sink(c0, …) FROM (statement)`. */
async function exportHere(db: Database.Database, sql: string, columnCount: number, sink: CsvSink): Promise<void> {
  // Writes must be synchronous here: a write error has to stop the statement from inside its step.
  if (!(sink instanceof DirectSink)) throw new Error('a SQLite export writes through its DirectSink');
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
      sink.write(text, rows);
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
  if (rows > 0) sink.write(text, rows);
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
      const fd = openDirect(request.file);
      try {
        const sink = new DirectSink(fd, request.id);
        await driver.exportCsv(request.sql, sink, options);
        return sink.finish();
      } finally {
        closeSync(fd);
      }
    }
  }
}

function describeError(error: unknown): ChildError {
  if (error instanceof ReadOnlyViolation) return { message: error.message, readOnlyViolation: true };
  if (error instanceof ToolError) return { message: error.message, kind: error.kind, metadata: error.metadata };
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return { message: error instanceof Error ? error.message : String(error), ...(typeof code === 'string' ? { code } : {}) };
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
