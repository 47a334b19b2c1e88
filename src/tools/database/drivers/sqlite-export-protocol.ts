/** What the main thread and the SQLite export worker (sqlite-export-worker.ts) say to each other. */

export interface ExportJob {
  path: string;
  readOnly: boolean;
  busyTimeoutMs: number;
  /** The wrapped statement, calling `sinkName`. */
  sql: string;
  sinkName: string;
  /**
   * Int32Array view: [STOP] is set by the main thread (1 cancel, 2 timeout); [SLOT_STATE + i] says
   * who owns slot i: SLOT_FREE (the worker may fill it) or SLOT_POSTED (the main thread owns it
   * until its bytes are written out, then sets it free again).
   */
  control: SharedArrayBuffer;
  /** MAX_IN_FLIGHT slots of CHUNK_BYTES, filled in turn: chunk k is in slot k % MAX_IN_FLIGHT. */
  chunks: SharedArrayBuffer;
}

export type ExportMessage =
  | { type: 'chunk'; slot: number; bytes: number; rows: number }
  | { type: 'done'; rows: number }
  | { type: 'stopped'; reason: 'cancel' | 'timeout' }
  | { type: 'refused'; message: string }
  | { type: 'failed'; message: string };

export const STOP = 0;
/** Index of slot 0's state in the control array; slot i's is SLOT_STATE + i. */
export const SLOT_STATE = 1;
export const SLOT_FREE = 0;
export const SLOT_POSTED = 1;
export const STOP_CANCEL = 1;
export const STOP_TIMEOUT = 2;
export const MAX_IN_FLIGHT = 4;
export const CHUNK_BYTES = 1 << 20;
export const CONTROL_INTS = SLOT_STATE + MAX_IN_FLIGHT;

/** Page cache for exports, in SQLite's notation (negative: KiB): SQLite's own default, since an export reads each page once. */
export const EXPORT_CACHE_SIZE = -2000;
export const NOT_READ_ONLY = 'refused by SQLite: this statement is not a read-only query (SQLite reports it can change the database or its attachments)';

/**
 * A statement as the body of a CTE whose columns are renamed c0..cN, followed by `select`,
 * which gets that column list. Duplicate or odd column names then do not matter.
 */
export function wrapStatement(sql: string, columnCount: number, select: (columns: string) => string): string {
  const columns = Array.from({ length: columnCount }, (_, i) => `c${i}`).join(',');
  return `WITH quarry_statement(${columns}) AS (\n${sql}\n) ${select(columns)}`;
}
