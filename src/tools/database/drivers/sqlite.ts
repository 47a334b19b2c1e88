import Database from 'better-sqlite3';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { EXPORT_CACHE_SIZE, NOT_READ_ONLY, wrapStatement } from './sqlite-export-protocol.js';
import { withDoubleQuotedStrings } from './sqlite-dqs.js';
import { ToolError } from '../../core/types.js';
import { ReadOnlyViolation } from '../sql/statement-check.js';
import { cutForDisplay } from '../values.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * SQLite through better-sqlite3. Read-only mode opens the file read-only and sets
 * `PRAGMA query_only`; on top, every prepared statement must be one SQLite itself calls
 * read-only and row-returning, which refuses ATTACH, DETACH and VACUUM INTO (SQLite counts
 * ATTACH as read-only because it does not change the file). better-sqlite3 prepares exactly
 * one statement, so multiple statements are refused by the driver too.
 *
 * better-sqlite3 is synchronous and this build cannot interrupt a statement, so quarry uses this
 * class only inside a child process of its own (sqlite-child.ts), which it kills to stop a
 * statement (sqlite-process.ts); that process also says how ordinary queries are exported.
 */

/** Rows read between two checks of the abort signal. */
const ROWS_PER_CHUNK = 5000;
/** SQLite takes at most 1000 arguments per function call (SQLITE_MAX_FUNCTION_ARG in better-sqlite3's build). */
const MAX_SINK_ARGUMENTS = 1000;
/** Leading keywords whose statement can be the body of a CTE, so an export can wrap it. */
const WRAPPABLE = /^\s*(\(\s*)*(SELECT|WITH|VALUES)\b/i;

type SqliteStatement = Database.Statement<unknown[], unknown>;
export type WrappedExport = (sql: string, columnCount: number, sink: CsvSink, options: RunOptions, db: Database.Database) => Promise<void>;

export class SqliteDriver implements DatabaseDriver {
  readonly engine = 'sqlite' as const;
  private db: Database.Database | null = null;

  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
    /** How a wrappable statement is exported (sqlite-child.ts: in one call, through a JavaScript aggregate). */
    private readonly exportWrapped: WrappedExport,
  ) {}

  async connect(): Promise<void> {
    if (this.db?.open) return;
    try {
      this.db = new Database(this.config.path!, { readonly: this.readOnly, fileMustExist: true, timeout: this.config.connectTimeoutMs });
    } catch (error) {
      throw new ToolError(`cannot open SQLite database ${this.config.path}: ${(error as Error).message}`, 'database_error');
    }
    if (this.readOnly) this.db.pragma('query_only = ON');
  }

  private prepare(sql: string, options: RunOptions): SqliteStatement {
    if (!this.db) throw new Error('not connected');
    const statement = this.db.prepare(sql);
    if (options.readOnly && !(statement.readonly && statement.reader)) {
      throw new ReadOnlyViolation(NOT_READ_ONLY);
    }
    return statement;
  }

  /** Double-quoted string literals accepted as the sqlite3 program accepts them (sqlite-dqs.ts). */
  private acceptDoubleQuotedStrings(sql: string): string {
    return this.db ? withDoubleQuotedStrings(this.db, sql) : sql;
  }

  async query(original: string, limit: number, options: RunOptions): Promise<QueryResult> {
    const sql = this.acceptDoubleQuotedStrings(original);
    const statement = this.prepare(sql, options);
    if (!statement.reader) {
      const info = statement.run();
      return { columns: [], rows: [], more: false, affectedRows: info.changes };
    }
    const columns = statement.columns().map((column) => column.name);
    const limited = this.withLimit(sql, columns.length, limit + 1, options) ?? statement;
    limited.raw(true).safeIntegers(true);
    const rows: CellValue[][] = [];
    const deadline = Date.now() + this.config.statementTimeoutMs;
    const iterator = limited.iterate() as IterableIterator<CellValue[]>;
    try {
      for (;;) {
        const next = iterator.next();
        if (next.done) return { columns, rows, more: false };
        if (rows.length === limit) return { columns, rows, more: true };
        rows.push(cutForDisplay(next.value, rows.length));
        if (rows.length % ROWS_PER_CHUNK === 0) await this.checkpoint(options.signal, deadline);
      }
    } finally {
      iterator.return?.();
    }
  }

  /**
   * The statement with `LIMIT n` around it, so that an ORDER BY keeps only the first n rows while
   * sorting (SQLite's top-N sort) instead of sorting the whole table to hand over n rows. SQLite
   * keeps a FROM subquery's ORDER BY when the outer query has no ORDER BY, join or aggregate.
   * Columns are renamed c0..cN so that duplicate names do not matter; the names shown come from
   * the statement itself. Null when the statement cannot be wrapped (PRAGMA, WITH … INSERT).
   */
  private withLimit(sql: string, columnCount: number, limit: number, options: RunOptions): SqliteStatement | null {
    if (!WRAPPABLE.test(sql) || columnCount === 0) return null;
    try {
      return this.prepare(
        wrapStatement(sql, columnCount, () => `SELECT * FROM quarry_statement LIMIT ${limit}`),
        options,
      );
    } catch {
      return null;
    }
  }

  private async checkpoint(signal: AbortSignal, deadline: number): Promise<void> {
    await yieldToEventLoop();
    if (signal.aborted) throw new ToolError('cancelled: the SQLite statement was stopped', 'cancelled');
    if (Date.now() > deadline) {
      throw new ToolError(`the statement ran longer than the statement timeout (${this.config.statementTimeoutMs / 1000} s) and was stopped`, 'timeout');
    }
  }

  async exportCsv(original: string, sink: CsvSink, options: RunOptions): Promise<void> {
    const sql = this.acceptDoubleQuotedStrings(original);
    const statement = this.prepare(sql, options);
    if (!statement.reader) throw new ToolError('export_query needs a statement that returns rows', 'bad_value');
    const columns = statement.columns().map((column) => column.name);
    sink.setColumns(columns);
    const deadline = Date.now() + this.config.statementTimeoutMs;
    if (WRAPPABLE.test(sql) && columns.length > 0 && columns.length <= MAX_SINK_ARGUMENTS) {
      await this.exportWrapped(sql, columns.length, sink, options, this.db!);
      return;
    }
    // An export reads each page once, so better-sqlite3's 16 MB page cache only made peak memory
    // grow with the table up to that size; SQLite's own default is enough.
    const db = this.db!;
    const cacheSize = db.pragma('cache_size', { simple: true }) as number;
    db.pragma(`cache_size = ${EXPORT_CACHE_SIZE}`);
    try {
      await this.exportRows(statement, sink, options, deadline);
    } finally {
      if (db.open) db.pragma(`cache_size = ${cacheSize}`);
    }
  }

  /**
   * Statements that cannot be wrapped (PRAGMA, EXPLAIN) or are wider than an aggregate takes:
   * rows cross into JavaScript one at a time, in this thread.
   */
  private async exportRows(statement: SqliteStatement, sink: CsvSink, options: RunOptions, deadline: number): Promise<void> {
    statement.raw(true).safeIntegers(true);
    let batch: CellValue[][] = [];
    for (const row of statement.iterate() as IterableIterator<CellValue[]>) {
      batch.push(row);
      if (batch.length === ROWS_PER_CHUNK) {
        await sink.writeRows(batch);
        batch = [];
        await this.checkpoint(options.signal, deadline);
      }
    }
    await sink.writeRows(batch);
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    // The name as given, else schema.table (list_tables and profile show main.t); in any case, as
    // SQLite resolves names (an exact match first, main before attached schemas).
    const dot = table.indexOf('.');
    const order = `ORDER BY name = ? DESC, schema = 'main' DESC, schema`;
    const exists = (this.prepare(`SELECT schema, name FROM pragma_table_list WHERE name = ? COLLATE NOCASE ${order}`, options).get(table, table) ??
      (dot > 0
        ? this.prepare(`SELECT schema, name FROM pragma_table_list WHERE schema = ? COLLATE NOCASE AND name = ? COLLATE NOCASE ${order}`, options).get(
            table.slice(0, dot),
            table.slice(dot + 1),
            table.slice(dot + 1),
          )
        : undefined)) as { schema: string; name: string } | undefined;
    if (!exists) throw new ToolError(`no such table or view: ${table}; use operation list_tables to see the tables`, 'not_found');
    const columns = this.prepare(
      `SELECT name, type, "notnull" AS not_null, dflt_value, pk FROM pragma_table_xinfo(?, ?) WHERE hidden = 0 ORDER BY cid`,
      options,
    ).all(exists.name, exists.schema) as { name: string; type: string; not_null: number; dflt_value: string | null; pk: number }[];
    const foreignKeys = this.prepare(
      `SELECT "from" AS source, "table" AS target, "to" AS target_column, on_delete FROM pragma_foreign_key_list(?, ?) ORDER BY id, seq`,
      options,
    ).all(exists.name, exists.schema) as { source: string; target: string; target_column: string | null; on_delete: string }[];
    const indexes = this.prepare(
      `SELECT il.name, il."unique" AS is_unique, group_concat(ii.name, ', ') AS columns FROM pragma_index_list(?, ?) AS il, pragma_index_info(il.name, ?) ` +
        `AS ii GROUP BY il.name ORDER BY il.name`,
      options,
    ).all(exists.name, exists.schema, exists.schema) as { name: string; is_unique: number; columns: string }[];
    return {
      schema: exists.schema,
      name: exists.name,
      columns: columns.map((column) => ({
        name: column.name,
        type: column.type || '(none)',
        nullable: !column.not_null && !column.pk,
        default: column.dflt_value,
        primaryKey: column.pk > 0,
      })),
      primaryKey: columns
        .filter((column) => column.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((column) => column.name),
      foreignKeys: foreignKeys.map(
        (fk) => `${fk.source} -> ${fk.target}(${fk.target_column ?? 'primary key'})${fk.on_delete !== 'NO ACTION' ? ` ON DELETE ${fk.on_delete}` : ''}`,
      ),
      indexes: indexes.map((index) => `${index.name}${index.is_unique ? ' UNIQUE' : ''} (${index.columns})`),
    };
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.prepare(sql, options)
      .raw(true)
      .safeIntegers(true)
      .all(...params) as CellValue[][];
  }

  async ping(options: RunOptions): Promise<string> {
    return `SQLite ${String(this.prepare('SELECT sqlite_version()', options).pluck(true).get())}`;
  }

  async close(): Promise<void> {
    this.db?.close();
    this.db = null;
  }
}
