import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { csvLine } from '../csv.js';
import {
  CHUNK_BYTES,
  EXPORT_CACHE_SIZE,
  MAX_IN_FLIGHT,
  NOT_READ_ONLY,
  SLOT_FREE,
  SLOT_POSTED,
  SLOT_STATE,
  STOP,
  STOP_TIMEOUT,
  type ExportJob,
  type ExportMessage,
} from './sqlite-export-protocol.js';
import type { CellValue } from '../types.js';

/**
 * A SQLite export in its own thread (started by sqlite.ts). better-sqlite3 hands rows over one
 * `iterate()` call at a time, which costs more than SQLite's own work; calling a JavaScript
 * aggregate from inside the statement costs a fraction of that. The whole statement then runs
 * in one synchronous call, so it runs here, in a worker, and the main thread stays free to
 * cancel, time out and show progress.
 *
 * The statement is `SELECT <sink>(c0, …) FROM (<the user's statement>)`. The sink is an
 * aggregate other than count/min/max, so SQLite keeps the inner ORDER BY and feeds the rows in
 * that order (SQLite's select.c: an ORDER BY in a FROM subquery is only dropped when the outer
 * query has its own ORDER BY or a join; an aggregate outer query never flattens an ordered
 * subquery). Its name is random, so the user's statement cannot call it.
 *
 * Encoded CSV goes back to the main thread through a ring of MAX_IN_FLIGHT shared 1 MiB slots:
 * nothing is allocated per chunk, and memory stays flat however fast SQLite is. Each slot has an
 * owner flag in the control array: the worker writes into a slot only after it has seen the slot
 * FREE, and hands it over by setting it POSTED before posting the message; the main thread sets
 * it FREE again only once the slot's bytes are written out (sqlite-export.ts). The worker
 * therefore never touches bytes the main thread has not written yet, however slow the disk.
 * (Counting chunks in flight was not enough: the worker filled the next slot before waiting,
 * overwriting a chunk still queued for writing.)
 */

/** Lines gathered as one string before they are encoded into the chunk. */
const TEXT_CHARS = 64 * 1024;
/** Rows between two looks at the stop flag. */
const ROWS_PER_CHECK = 512;

class Stopped extends Error {}

function run(job: ExportJob, port: NonNullable<typeof parentPort>): void {
  const control = new Int32Array(job.control);
  const encoder = new TextEncoder();
  let slot = 0;
  let chunk = new Uint8Array(job.chunks, 0, CHUNK_BYTES);
  let used = 0;
  let text = '';
  let rows = 0;
  let rowsInChunk = 0;

  const checkStop = (): void => {
    if (Atomics.load(control, STOP) !== 0) throw new Stopped();
  };
  /** Waits until the main thread has written slot `slot` out; a stop request also wakes this up. */
  const acquire = (): void => {
    while (Atomics.load(control, SLOT_STATE + slot) !== SLOT_FREE) {
      checkStop();
      Atomics.wait(control, SLOT_STATE + slot, SLOT_POSTED, 1000);
    }
    checkStop();
  };
  const post = (last = false): void => {
    if (used === 0) return;
    Atomics.store(control, SLOT_STATE + slot, SLOT_POSTED);
    port.postMessage({ type: 'chunk', slot, bytes: used, rows: rowsInChunk } satisfies ExportMessage);
    slot = (slot + 1) % MAX_IN_FLIGHT;
    chunk = new Uint8Array(job.chunks, slot * CHUNK_BYTES, CHUNK_BYTES);
    used = 0;
    rowsInChunk = 0;
    if (!last) acquire();
  };
  const encodeText = (): void => {
    let rest = text;
    text = '';
    while (rest.length > 0) {
      const { read, written } = encoder.encodeInto(rest, chunk.subarray(used));
      used += written;
      if (read === rest.length) break;
      rest = rest.slice(read);
      post();
    }
  };

  let db: Database.Database | null = null;
  try {
    db = new Database(job.path, { readonly: job.readOnly, fileMustExist: true, timeout: job.busyTimeoutMs });
    if (job.readOnly) db.pragma('query_only = ON');
    db.pragma(`cache_size = ${EXPORT_CACHE_SIZE}`);
    db.aggregate(job.sinkName, {
      start: 0,
      varargs: true,
      safeIntegers: true,
      step: (_count: number, ...values: CellValue[]) => {
        text += csvLine(values);
        rowsInChunk++;
        if (++rows % ROWS_PER_CHECK === 0) checkStop();
        if (text.length >= TEXT_CHARS) encodeText();
        return 0;
      },
    });
    const statement = db.prepare(job.sql);
    if (job.readOnly && !(statement.readonly && statement.reader)) {
      port.postMessage({ type: 'refused', message: NOT_READ_ONLY } satisfies ExportMessage);
      return;
    }
    statement.pluck(true).get();
    encodeText();
    post(true);
    port.postMessage({ type: 'done', rows } satisfies ExportMessage);
  } catch (error) {
    if (error instanceof Stopped) {
      port.postMessage({ type: 'stopped', reason: Atomics.load(control, STOP) === STOP_TIMEOUT ? 'timeout' : 'cancel' } satisfies ExportMessage);
    } else {
      port.postMessage({ type: 'failed', message: error instanceof Error ? error.message : String(error) } satisfies ExportMessage);
    }
  } finally {
    db?.close();
  }
}

if (parentPort && (workerData as Partial<ExportJob> | null)?.sinkName) run(workerData as ExportJob, parentPort);
