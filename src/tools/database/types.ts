/** Shared database types: engines, configured databases and the per-engine driver interface. */

// Engines and a configured database are defined with the configuration that makes them (src/config/databases.ts).
import type { Engine } from '../../config/databases.js';
export { ENGINES, type DatabaseConfig, type Engine } from '../../config/databases.js';

/** The profile's query_guard (docs/guide/databases.md "Knowing the data"): the plan's row estimate is checked before query and export_query. */
export interface QueryGuard {
  max_estimated_rows: number;
  action: 'ask' | 'refuse';
}
export const QUERY_GUARD_ACTIONS = ['ask', 'refuse'] as const;

/** A value as drivers hand it over: already exact (decimals, big integers and dates arrive as strings). */
export type CellValue = string | number | bigint | boolean | Buffer | Date | null | undefined | object;

export interface QueryResult {
  columns: string[];
  rows: CellValue[][];
  /** True when the statement had more rows than the limit (only limit+1 were fetched). */
  more: boolean;
  /** For statements without a result set (mutations mode): rows changed. */
  affectedRows?: number;
}

export interface RunOptions {
  /** Read-only mode: the engine's own read-only guard around the statement. */
  readOnly: boolean;
  /** Aborting cancels the running statement at the server. */
  signal: AbortSignal;
}

/** Where an export's CSV goes: either the engine's own CSV bytes or rows for quarry to encode. */
export interface CsvSink {
  /** The column names, once known (before any row); the header line as the engine wrote it, if it did. */
  setColumns(columns: string[], encodedHeader?: string): void;
  /** Rows to encode (values as a query returns them). */
  writeRows(rows: CellValue[][]): Promise<void>;
  /** Already-encoded CSV lines (no header), e.g. from the engine itself. */
  writeEncoded(chunk: Buffer | string, rowCount: number): Promise<void>;
  /** The final row count, for engines that report it only at the end. */
  setRowCount(rows: number): void;
  /**
   * The open, still empty file this sink writes, for a driver whose own process can write the
   * whole CSV (header included) into it itself (sqlite-process.ts); null once anything was
   * written. The driver then reports with directProgress and directWritten instead of the calls above.
   */
  directFile?(): Promise<{ path: string; dev: string; ino: string } | null>;
  /** Rows and bytes written so far into directFile (for progress). */
  directProgress?(rows: number, bytes: number): void;
  /** What was written into directFile, when done: the columns, the totals and the first bytes after the header. */
  directWritten?(written: { columns: string[]; rows: number; bytes: number; head: Uint8Array }): void;
}

export interface ColumnInfo {
  name: string;
  type: string;
  nullable: boolean;
  default: string | null;
  primaryKey: boolean;
  /** The column's comment, where the engine keeps one (filled in by catalog/describe.ts). */
  comment?: string | null;
}

export interface TableDescription {
  schema: string | null;
  name: string;
  columns: ColumnInfo[];
  primaryKey: string[];
  foreignKeys: string[];
  indexes: string[];
  /** The table's comment, where the engine keeps one (filled in by catalog/describe.ts). */
  comment?: string | null;
  /** Foreign keys in other tables that reference this one (filled in by catalog/describe.ts). */
  referencedBy?: string[];
  /** Lines about where the rows come from (a DuckDB file view: what was detected, warnings). */
  notes?: string[];
}

/**
 * What differs per engine. The shared tool (tool.ts) owns the statement check, formatting,
 * limits and export files; a driver only talks to its engine. Every method runs the engine's
 * own read-only guard when `readOnly` is set.
 */
export interface DatabaseDriver {
  readonly engine: Engine;
  /** Opens the connection (or re-opens a dead one); cheap when already open and healthy. */
  connect(signal: AbortSignal): Promise<void>;
  /** Runs one statement and returns at most `limit` rows; fetches no more than limit+1. */
  query(sql: string, limit: number, options: RunOptions): Promise<QueryResult>;
  /** Streams the whole result into the sink with constant memory. */
  exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void>;
  describe(table: string, options: RunOptions): Promise<TableDescription>;
  /**
   * Runs one internal statement (catalogue reads, samples, profiles, plans: catalog/) with bound
   * parameters, written with `?` placeholders, under the same read-only guard as `query`, and
   * returns every row as the driver hands values over. The statement is quarry's own, never the
   * model's text, so it is not wrapped with a limit: each one bounds its own rows.
   */
  catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]>;
  /** A trivial round trip (`quarry db check`); returns the server's version text. */
  ping(options: RunOptions): Promise<string>;
  /** Whether the connection was lost since it was opened (a server driver's; a file engine's never is). */
  connectionLost?(): boolean;
  close(): Promise<void>;
}
