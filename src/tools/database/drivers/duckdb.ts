import { DuckDBInstance, DuckDBTypeId, type DuckDBConnection, type DuckDBDataChunk, type DuckDBResult, type DuckDBValue } from '@duckdb/node-api';
import duckdbBindings from '@duckdb/node-bindings';
import { basename } from 'node:path';
import { ToolError } from '../../core/types.js';
import { duckdbReaderFor, isGlob } from '../../../config/duckdb.js';
import { sqlIdentifier, sqlString } from './duckdb-files.js';
import { describeFileView, explicitReadCsv, sniffCsv, type FileView } from './duckdb-sniff.js';
import { duckdbOptionSql } from '../../../config/duckdb-options.js';
import { numberedPlaceholders } from './server-support.js';
import { ReadOnlyViolation } from '../sql/statement-check.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * DuckDB through the official Node client (@duckdb/node-api), for SQL over CSV, Parquet and JSON
 * files and DuckDB database files (docs/guide/duckdb-files.md).
 *
 * The engine's own read-only layer, set up once when the database is opened:
 * - a database file alone is opened with access_mode=READ_ONLY; configured files become views in
 *   an in-memory database (a database file beside them is attached READ_ONLY);
 * - every operation runs in its own connection inside `BEGIN TRANSACTION READ ONLY`, rolled back
 *   afterwards, so not even the in-memory catalog can change;
 * - enable_external_access=false with allowed_paths set to exactly the configured files (globs
 *   are expanded when the database is opened), autoinstall/autoload of extensions off, and then
 *   lock_configuration=true, so no statement can read another file, write a file, attach a
 *   database, load an extension or undo any of this. The settings are read back and the open
 *   fails if one did not take.
 * - the statement must be exactly one statement that DuckDB itself calls a SELECT, EXPLAIN or
 *   CALL (table functions; the statement check allows only read-only ones).
 */

/** Statement types (DuckDB's StatementType) that read-only mode runs. */
const READ_STATEMENT_TYPES = new Set([1 /* SELECT */, 4 /* EXPLAIN */, 19 /* CALL */]);
/** Statements that can be the body of a subquery, so the driver can put the limit and text conversion around them. */
const WRAPPABLE = /^\s*(\(\s*)*(SELECT|WITH|VALUES|FROM|TABLE)\b/i;
/** Rows handed to the CSV sink at once (DuckDB produces chunks of 2048). */
const EXPORT_BATCH_ROWS = 8192;

export class DuckdbDriver implements DatabaseDriver {
  readonly engine = 'duckdb' as const;
  private instance: DuckDBInstance | null = null;
  private opening: Promise<DuckDBInstance> | null = null;
  /** The configured file views, by view name, with what was detected (duckdb-sniff.ts). */
  private readonly fileViews = new Map<string, FileView>();

  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
  ) {}

  async connect(): Promise<void> {
    if (this.instance) return;
    this.opening ??= this.open().finally(() => (this.opening = null));
    this.instance = await this.opening;
  }

  private async open(): Promise<DuckDBInstance> {
    const files = Object.entries(this.config.files ?? {});
    const path = this.config.path;
    const directFile = path !== undefined && files.length === 0;
    const options: Record<string, string> = { autoinstall_known_extensions: 'false', autoload_known_extensions: 'false' };
    if (directFile && this.readOnly) options.access_mode = 'READ_ONLY';
    let instance: DuckDBInstance;
    try {
      instance = await DuckDBInstance.create(directFile ? path : ':memory:', options);
    } catch (error) {
      throw new ToolError(`cannot open DuckDB database ${path ?? '(in memory)'}: ${firstLine(error)}`, 'database_error');
    }
    try {
      const connection = await instance.connect();
      try {
        await this.setUp(connection, files, directFile);
      } finally {
        connection.closeSync();
      }
    } catch (error) {
      instance.closeSync();
      throw error;
    }
    return instance;
  }

  /** Views over the configured files, then the locked-down settings, read back to be sure. */
  private async setUp(connection: DuckDBConnection, files: [string, string][], directFile: boolean): Promise<void> {
    const allowed: string[] = [];
    if (!directFile && this.config.path) {
      const name =
        basename(this.config.path)
          .replace(/\.[^.]*$/, '')
          .replace(/[^A-Za-z0-9_]/g, '_') || 'db';
      await run(
        connection,
        `ATTACH ${sqlString(this.config.path)} AS ${sqlIdentifier(name)}${this.readOnly ? ' (READ_ONLY)' : ''}`,
        `cannot open DuckDB database ${this.config.path}`,
      );
      await run(connection, `SET search_path = ${sqlString(`memory.main,${name}.main`)}`, 'cannot set the search path');
    }
    for (const [view, file] of files) {
      const reader = duckdbReaderFor(file);
      if (!reader)
        throw new ToolError(`${file}: not a CSV, Parquet or JSON file (by its extension), so DuckDB cannot read it as view ${view}`, 'unsupported_format');
      let paths = [file];
      if (isGlob(file)) {
        const listed = await connection.runAndReadAll(`SELECT file FROM glob(${sqlString(file)}) ORDER BY file`);
        paths = listed.getRowsJS().map((row) => String(row[0]));
        if (paths.length === 0) throw new ToolError(`${file}: the glob matches no files, so view ${view} cannot be created`, 'not_found');
      }
      allowed.push(...paths);
      const source = sourceSql(paths);
      const fileView: FileView = { view, file, paths, reader, options: this.config.fileOptions?.[view] ?? {}, sniffed: null };
      this.fileViews.set(view, fileView);
      // CSV: sniffed once here, and the view defined with what was found (duckdb-sniff.ts); where
      // that fails, DuckDB's own detection in every statement, as before.
      if (reader === 'read_csv') {
        fileView.sniffed = await sniffCsv(connection, fileView).catch(() => null);
        if (fileView.sniffed) {
          try {
            await connection.run(viewSql(view, explicitReadCsv(source, fileView, fileView.sniffed)));
            await connection.run(`SELECT * FROM ${sqlIdentifier(view)} LIMIT 0`);
            continue;
          } catch {
            fileView.sniffed = null;
          }
        }
      }
      const options = Object.entries(fileView.options).map(([name, value]) => duckdbOptionSql(name, value));
      await run(connection, viewSql(view, `${reader}(${[source, ...options].join(', ')})`), `cannot read ${file} as view ${view}`);
      // Reading the view's columns now reports a bad file when the database is opened, not on first use.
      await run(connection, `SELECT * FROM ${sqlIdentifier(view)} LIMIT 0`, `cannot read ${file} as view ${view}`);
    }
    await connection.run(`SET allowed_paths = [${allowed.map(sqlString).join(', ')}]`);
    await connection.run('SET allowed_directories = []');
    await connection.run('SET enable_external_access = false');
    await connection.run('SET lock_configuration = true');
    const settings = await connection.runAndReadAll(
      `SELECT current_setting('enable_external_access')::VARCHAR, current_setting('lock_configuration')::VARCHAR,
              current_setting('autoinstall_known_extensions')::VARCHAR, current_setting('autoload_known_extensions')::VARCHAR,
              current_setting('access_mode')::VARCHAR`,
    );
    const [external, locked, autoinstall, autoload, accessMode] = settings.getRowsJS()[0]!.map((value) => String(value).toLowerCase());
    const wrong = [
      external !== 'false' && 'enable_external_access',
      locked !== 'true' && 'lock_configuration',
      autoinstall !== 'false' && 'autoinstall_known_extensions',
      autoload !== 'false' && 'autoload_known_extensions',
      directFile && this.readOnly && accessMode !== 'read_only' && 'access_mode',
    ].filter(Boolean);
    if (wrong.length) throw new ToolError(`refused to use DuckDB: its read-only settings did not take (${wrong.join(', ')})`, 'refused');
  }

  /** One connection per operation, in a read-only transaction, interrupted when the signal aborts. */
  private async withConnection<T>(options: RunOptions, body: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    if (!this.instance) throw new Error('not connected');
    const connection = await this.instance.connect();
    const interrupt = () => connection.interrupt();
    options.signal.addEventListener('abort', interrupt, { once: true });
    try {
      if (options.signal.aborted) throw new ToolError('cancelled: the DuckDB statement was stopped', 'cancelled');
      if (options.readOnly) await connection.run('BEGIN TRANSACTION READ ONLY');
      return await body(connection);
    } finally {
      options.signal.removeEventListener('abort', interrupt);
      connection.closeSync();
    }
  }

  /** Exactly one statement, of a type read-only mode runs; returns its column names. */
  private async prepare(connection: DuckDBConnection, sql: string, options: RunOptions) {
    const extracted = await connection.extractStatements(sql);
    if (extracted.count !== 1) {
      throw new ReadOnlyViolation(`refused: DuckDB found ${extracted.count} statements; exactly one is allowed per call`);
    }
    const prepared = await extracted.prepare(0);
    if (options.readOnly && !READ_STATEMENT_TYPES.has(prepared.statementType)) {
      throw new ReadOnlyViolation('refused: DuckDB reports that this statement is not a read (SELECT, EXPLAIN or CALL), and read-only mode runs only reads');
    }
    return prepared;
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    return this.withConnection(options, async (connection) => {
      const prepared = await this.prepare(connection, sql, options);
      if (!READ_STATEMENT_TYPES.has(prepared.statementType)) {
        const result = await prepared.run();
        return { columns: [], rows: [], more: false, affectedRows: result.rowsChanged };
      }
      const columns = Array.from({ length: prepared.columnCount }, (_, index) => prepared.columnName(index));
      const result = WRAPPABLE.test(sql) && columns.length > 0 ? await connection.stream(textQuery(sql, limit + 1)) : await prepared.stream();
      const rows: CellValue[][] = [];
      for await (const chunk of rowsOf(result)) {
        for (const row of chunk) {
          if (rows.length === limit) return { columns, rows, more: true };
          rows.push(row);
        }
      }
      return { columns, rows, more: false };
    });
  }

  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    await this.withConnection(options, async (connection) => {
      const prepared = await this.prepare(connection, sql, options);
      const columns = Array.from({ length: prepared.columnCount }, (_, index) => prepared.columnName(index));
      if (columns.length === 0) throw new ToolError('export_query needs a statement that returns rows', 'bad_value');
      sink.setColumns(columns);
      if (WRAPPABLE.test(sql)) {
        const types = columns.map((_, index) => prepared.columnTypeId(index));
        await exportEncoded(await connection.stream(csvLinesQuery(sql, types)), sink, options);
        return;
      }
      const result = await prepared.stream();
      let batch: CellValue[][] = [];
      for await (const chunk of rowsOf(result)) {
        if (options.signal.aborted) throw new ToolError('cancelled: the DuckDB export was stopped', 'cancelled');
        for (const row of chunk) batch.push(row);
        if (batch.length >= EXPORT_BATCH_ROWS) {
          await sink.writeRows(batch);
          batch = [];
        }
      }
      await sink.writeRows(batch);
    });
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    return this.withConnection(options, async (connection) => {
      const dot = table.lastIndexOf('.');
      const schema = dot > 0 ? table.slice(0, dot) : null;
      const name = dot > 0 ? table.slice(dot + 1) : table;
      // Names in any case, as DuckDB resolves them (an exact match first).
      const where =
        `lower(table_name) = lower($1) AND ($2::VARCHAR IS NULL OR lower(schema_name) = lower($2) OR lower(database_name || '.' || schema_name) = ` +
        `lower($2))`;
      const found = await connection.runAndReadAll(
        `SELECT DISTINCT database_name, schema_name, database_name = current_database() AS here, table_name, table_name = $1 AS exact FROM duckdb_columns() ` +
          `WHERE ${where} ORDER BY exact DESC, here DESC, 1, 2 LIMIT 1`,
        [name, schema],
      );
      const target = found.getRowsJS()[0];
      if (!target) throw new ToolError(`no such table or view: ${table}; use operation list_tables to see the tables`, 'not_found');
      const [database, schemaName, actual] = [String(target[0]), String(target[1]), String(target[3])];
      const scope = [actual, database, schemaName];
      const exact = `table_name = $1 AND database_name = $2 AND schema_name = $3`;
      const columnRows = (
        await connection.runAndReadAll(
          `SELECT column_name, data_type, is_nullable, column_default FROM duckdb_columns() WHERE ${exact} ORDER BY column_index`,
          scope,
        )
      ).getRowsJS();
      const constraints = (
        await connection.runAndReadAll(
          `SELECT constraint_type, constraint_column_names, constraint_text FROM duckdb_constraints() WHERE ${exact} AND constraint_type IN ('PRIMARY KEY', ` +
            `'FOREIGN KEY') ORDER BY constraint_index`,
          scope,
        )
      ).getRowsJS();
      const indexes = (
        await connection.runAndReadAll(`SELECT index_name, is_unique, expressions FROM duckdb_indexes() WHERE ${exact} ORDER BY index_name`, scope)
      ).getRowsJS();
      const view = database === 'memory' ? this.fileViews.get(name) : undefined;
      const notes = view ? await describeFileView(connection, view, sourceSql(view.paths)) : undefined;
      const primaryKey = (constraints.find((row) => row[0] === 'PRIMARY KEY')?.[1] as string[] | undefined) ?? [];
      return {
        schema: database === 'memory' ? schemaName : `${database}.${schemaName}`,
        name: actual,
        columns: columnRows.map((row) => ({
          name: String(row[0]),
          type: String(row[1]),
          nullable: row[2] === true,
          default: row[3] === null ? null : String(row[3]),
          primaryKey: primaryKey.includes(String(row[0])),
        })),
        primaryKey,
        foreignKeys: constraints.filter((row) => row[0] === 'FOREIGN KEY').map((row) => String(row[2])),
        indexes: indexes.map((row) => `${String(row[0])}${row[1] ? ' UNIQUE' : ''} ${String(row[2])}`),
        ...(notes ? { notes } : {}),
      };
    });
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.withConnection(options, async (connection) => {
      const reader = await connection.runAndReadAll(numberedPlaceholders(sql, '$'), [...params] as DuckDBValue[]);
      // DuckDB's own values (dates as DuckDB writes them), not JavaScript Dates.
      return reader.getRows().map((row) => row.map(toCell));
    });
  }

  async ping(options: RunOptions): Promise<string> {
    return this.withConnection(options, async (connection) => {
      const reader = await connection.runAndReadAll('SELECT version()');
      return `DuckDB ${String(reader.getRowsJS()[0]![0])}`;
    });
  }

  async close(): Promise<void> {
    await this.opening?.catch(() => undefined);
    this.instance?.closeSync();
    this.instance = null;
  }
}

function sourceSql(paths: readonly string[]): string {
  return paths.length === 1 ? sqlString(paths[0]!) : `[${paths.map(sqlString).join(', ')}]`;
}

function viewSql(view: string, from: string): string {
  return `CREATE OR REPLACE VIEW ${sqlIdentifier(view)} AS SELECT * FROM ${from}`;
}

/**
 * The statement as a subquery whose every column DuckDB itself turns into text, so values are
 * exactly DuckDB's own rendering (decimals, dates, nested types) and cross into JavaScript as
 * strings; a limit inside the statement lets DuckDB stop early (top-N for ORDER BY).
 */
function textQuery(sql: string, limit?: number): string {
  return `SELECT COLUMNS(*)::VARCHAR FROM (\n${sql}\n) AS quarry_statement${limit === undefined ? '' : ` LIMIT ${limit}`}`;
}

/**
 * The statement as one finished CSV line per row, encoded by DuckDB itself (in parallel, in C++):
 * each value is DuckDB's text as in textQuery, NULL an empty field, quoted only when it holds a
 * comma, a quote or a line break, quotes doubled, lines ending in CRLF: the conventions of the
 * shared CSV writer (csv.ts), byte for byte. JavaScript then only copies each chunk's lines out (linesOf).
 *
 * The columns are renamed by position (the statement's own names may repeat), and only columns
 * whose type can render one of those characters are searched for them: the text of a number,
 * date, time, timestamp, boolean or UUID never holds one, and skipping the search there took
 * about a third off DuckDB's encoding time.
 */
function csvLinesQuery(sql: string, types: readonly DuckDBTypeId[]): string {
  const fields = types.map((type, index) => {
    const column = `quarry_${index + 1}`;
    if (PLAIN_TEXT_TYPES.has(type)) return `coalesce(${column}::VARCHAR, '')`;
    return (
      `CASE WHEN ${column} IS NULL THEN '' WHEN regexp_matches(${column}::VARCHAR, '[",\r\n]') THEN '"' || replace(${column}::VARCHAR, '"', '""') || ` +
      `'"' ELSE ${column}::VARCHAR END`
    );
  });
  const names = types.map((_, index) => `quarry_${index + 1}`).join(', ');
  return `SELECT concat(${fields.join(", ',', ")}, chr(13) || chr(10)) FROM (\n${sql}\n) AS quarry_statement(${names})`;
}

/** Types whose text (DuckDB's ::VARCHAR) never holds a comma, a quote or a line break. */
const PLAIN_TEXT_TYPES: ReadonlySet<DuckDBTypeId> = new Set([
  DuckDBTypeId.BOOLEAN,
  DuckDBTypeId.TINYINT,
  DuckDBTypeId.SMALLINT,
  DuckDBTypeId.INTEGER,
  DuckDBTypeId.BIGINT,
  DuckDBTypeId.HUGEINT,
  DuckDBTypeId.UTINYINT,
  DuckDBTypeId.USMALLINT,
  DuckDBTypeId.UINTEGER,
  DuckDBTypeId.UBIGINT,
  DuckDBTypeId.UHUGEINT,
  DuckDBTypeId.FLOAT,
  DuckDBTypeId.DOUBLE,
  DuckDBTypeId.DECIMAL,
  DuckDBTypeId.DATE,
  DuckDBTypeId.TIME,
  DuckDBTypeId.TIME_NS,
  DuckDBTypeId.TIME_TZ,
  DuckDBTypeId.TIMESTAMP,
  DuckDBTypeId.TIMESTAMP_S,
  DuckDBTypeId.TIMESTAMP_MS,
  DuckDBTypeId.TIMESTAMP_NS,
  DuckDBTypeId.TIMESTAMP_TZ,
  DuckDBTypeId.UUID,
]);

async function exportEncoded(result: DuckDBResult, sink: CsvSink, options: RunOptions): Promise<void> {
  // One buffer for every chunk's lines: the sink has copied or written them once writeEncoded returns.
  let scratch: Buffer = Buffer.allocUnsafe(256 * 1024);
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    if (options.signal.aborted) throw new ToolError('cancelled: the DuckDB export was stopped', 'cancelled');
    const lines = linesOf(chunk, scratch);
    const rows = chunk.rowCount;
    // The chunk's strings are copied out: free them now. The chunk itself is freed only when
    // JavaScript's collector finds it, and this loop makes so little garbage that chunks piled
    // up (about 60 MB more at 1,000,000 rows).
    chunk.reset();
    if (lines.buffer !== scratch.buffer) scratch = Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength);
    await sink.writeEncoded(lines, rows);
  }
}

/**
 * The bytes of a chunk's CSV lines (column 0 of csvLinesQuery, never NULL), in `scratch` when they
 * fit (else in a new buffer, at least twice its size), copied from DuckDB's
 * vector without making a JavaScript string of each: node-api's getColumnValues decodes every
 * value on its own (a native call and a TextDecoder call per row), which cost about 1 s of CPU
 * per 1,000,000 rows, more than DuckDB took to read and encode them.
 *
 * A VARCHAR vector holds 16 bytes per value (DuckDB's string_t, little-endian): the length, then
 * the text itself when it is at most 12 bytes, or else a pointer to it. Values DuckDB wrote one
 * after another are adjacent in memory (each pointer is the previous one plus its length), and
 * each such run is copied with one native call; the runs are found from the pointers, so every
 * byte copied belongs to a value of the chunk, in order.
 */
export function linesOf(chunk: DuckDBDataChunk, scratch: Buffer = Buffer.alloc(0)): Buffer {
  const rows = chunk.rowCount;
  const data = duckdbBindings.vector_get_data(duckdbBindings.data_chunk_get_vector(chunk.chunk, 0), rows * STRING_T_BYTES);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let total = 0;
  for (let row = 0; row < rows; row++) total += view.getUint32(row * STRING_T_BYTES, true);
  const bytes = total <= scratch.length ? scratch.subarray(0, total) : Buffer.allocUnsafe(Math.max(total, 2 * scratch.length)).subarray(0, total);
  let used = 0;
  for (let row = 0; row < rows; ) {
    const offset = row * STRING_T_BYTES;
    const length = view.getUint32(offset, true);
    if (length <= STRING_T_INLINE) {
      bytes.set(data.subarray(offset + 4, offset + 4 + length), used);
      used += length;
      row++;
      continue;
    }
    let runBytes = length;
    let next = pointerAt(view, offset) + length;
    let end = row + 1;
    for (; end < rows; end++) {
      const size = view.getUint32(end * STRING_T_BYTES, true);
      if (size <= STRING_T_INLINE || pointerAt(view, end * STRING_T_BYTES) !== next) break;
      runBytes += size;
      next += size;
    }
    bytes.set(duckdbBindings.get_data_from_pointer(data.buffer as ArrayBuffer, data.byteOffset + offset + 8, runBytes), used);
    used += runBytes;
    row = end;
  }
  return bytes;
}

/** Size of DuckDB's string_t, and the longest text it holds inline. */
const STRING_T_BYTES = 16;
const STRING_T_INLINE = 12;

/** The pointer in a string_t (bytes 8-15; user-space addresses fit a double exactly). */
function pointerAt(view: DataView, offset: number): number {
  return view.getUint32(offset + 8, true) + view.getUint32(offset + 12, true) * 2 ** 32;
}

/** Rows chunk by chunk, values as text (DuckDB's rendering) or null. */
async function* rowsOf(result: DuckDBResult): AsyncGenerator<CellValue[][]> {
  for await (const rows of result.yieldRows()) yield rows.map((row) => row.map(toCell));
}

function toCell(value: DuckDBValue): CellValue {
  if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return value;
  return value.toString();
}

async function run(connection: DuckDBConnection, sql: string, failure: string): Promise<void> {
  try {
    await connection.run(sql);
  } catch (error) {
    throw new ToolError(`${failure}: ${firstLine(error)}`, 'database_error');
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
