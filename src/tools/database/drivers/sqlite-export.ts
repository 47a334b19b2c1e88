import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { packageRoot } from '../../../config/home.js';
import { ToolError } from '../../core/types.js';
import {
  CHUNK_BYTES,
  CONTROL_INTS,
  MAX_IN_FLIGHT,
  SLOT_FREE,
  SLOT_STATE,
  STOP,
  STOP_CANCEL,
  STOP_TIMEOUT,
  wrapStatement,
  type ExportJob,
  type ExportMessage,
} from './sqlite-export-protocol.js';
import { ReadOnlyViolation } from '../sql/statement-check.js';
import type { CsvSink, DatabaseConfig, RunOptions } from '../types.js';

/**
 * The main-thread half of a SQLite export (the other half, and why, is sqlite-export-worker.ts):
 * starts the worker on its own read-only connection, writes the chunks it sends in order, and
 * turns a cancel or the statement timeout into a stop request. A worker that does not stop
 * within STOP_GRACE_MS (SQLite busy in one long step, such as a big sort) is terminated.
 */

const STOP_GRACE_MS = 2000;
/**
 * The worker makes short-lived strings only. V8's default young generation let the process grow
 * to about 115 MB on a 1,000,000-row export; 8 MB keeps it near 90 MB at the same speed
 * (4 MB was as fast and 4 MB smaller, 2 MB a quarter slower).
 */
const WORKER_YOUNG_GENERATION_MB = 8;

/** Compiled JavaScript beside this module; under the test runner (TypeScript sources) the build's copy. */
function workerUrl(): URL {
  const beside = new URL('./sqlite-export-worker.js', import.meta.url);
  if (existsSync(beside)) return beside;
  return pathToFileURL(join(packageRoot(), 'dist/tools/database/drivers/sqlite-export-worker.js'));
}

export async function exportInWorker(config: DatabaseConfig, sql: string, columnCount: number, sink: CsvSink, options: RunOptions): Promise<void> {
  const sinkName = `quarry_csv_${randomBytes(8).toString('hex')}`;
  const job: ExportJob = {
    path: config.path!,
    readOnly: options.readOnly,
    busyTimeoutMs: config.connectTimeoutMs,
    sql: wrapStatement(sql, columnCount, (columns) => `SELECT ${sinkName}(${columns}) FROM quarry_statement`),
    sinkName,
    control: new SharedArrayBuffer(CONTROL_INTS * Int32Array.BYTES_PER_ELEMENT),
    chunks: new SharedArrayBuffer(MAX_IN_FLIGHT * CHUNK_BYTES),
  };
  const control = new Int32Array(job.control);
  const worker = new Worker(workerUrl(), { workerData: job, resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB } });

  return new Promise<void>((resolve, reject) => {
    let writing: Promise<void> = Promise.resolve();
    let writeError: unknown = null;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const requestStop = (code: number): void => {
      if (Atomics.compareExchange(control, STOP, 0, code) !== 0) return;
      for (let slot = 0; slot < MAX_IN_FLIGHT; slot++) Atomics.notify(control, SLOT_STATE + slot);
      graceTimer = setTimeout(() => {
        worker.unref();
        void worker.terminate();
        finish(stopError(code === STOP_TIMEOUT ? 'timeout' : 'cancel', config));
      }, STOP_GRACE_MS);
    };
    const onAbort = (): void => requestStop(STOP_CANCEL);
    const statementTimer = setTimeout(() => requestStop(STOP_TIMEOUT), config.statementTimeoutMs);

    function finish(error: unknown): void {
      if (settled) return;
      settled = true;
      clearTimeout(statementTimer);
      clearTimeout(graceTimer);
      options.signal.removeEventListener('abort', onAbort);
      // Every write already queued completes (or fails) before the caller commits or discards the file.
      void writing.then(() => {
        const failure = error ?? writeError;
        if (failure) reject(failure);
        else resolve();
      });
    }

    if (options.signal.aborted) requestStop(STOP_CANCEL);
    else options.signal.addEventListener('abort', onAbort, { once: true });

    worker.on('message', (message: ExportMessage) => {
      switch (message.type) {
        case 'chunk':
          writing = writing
            .then(() => (writeError ? undefined : sink.writeEncoded(Buffer.from(job.chunks, message.slot * CHUNK_BYTES, message.bytes), message.rows)))
            .catch((error: unknown) => {
              writeError ??= error;
              requestStop(STOP_CANCEL);
            })
            .finally(() => {
              // Only now, with its bytes written out (or the export failed), may the worker refill the slot.
              Atomics.store(control, SLOT_STATE + message.slot, SLOT_FREE);
              Atomics.notify(control, SLOT_STATE + message.slot);
            });
          break;
        case 'done':
          finish(null);
          break;
        case 'stopped':
          // A failed write stops the worker too; then the write error is what happened.
          finish(writeError ? null : stopError(message.reason, config));
          break;
        case 'refused':
          finish(new ReadOnlyViolation(message.message));
          break;
        case 'failed':
          finish(new Error(message.message));
          break;
      }
    });
    worker.on('error', (error) => finish(error));
    worker.on('exit', (code) => finish(new Error(`the SQLite export thread ended unexpectedly (exit code ${code})`)));
  });
}

export function stopError(reason: 'cancel' | 'timeout', config: DatabaseConfig): ToolError {
  return reason === 'timeout'
    ? new ToolError(`the statement ran longer than the statement timeout (${config.statementTimeoutMs / 1000} s) and was stopped`, 'timeout')
    : new ToolError('cancelled: the SQLite statement was stopped', 'cancelled');
}
