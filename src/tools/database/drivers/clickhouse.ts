import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { ToolError } from '../../core/types.js';
import { writeEngineCsv } from '../csv.js';
import { runCancellable, splitQualifiedName } from './server-support.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * ClickHouse over HTTP through @clickhouse/client (docs/guide/databases.md "ClickHouse"). Read-only mode's second
 * layer is ClickHouse's own `readonly=1`, sent with every request; the statement timeout is
 * `max_execution_time`. Every statement has a query id: cancelling sends `KILL QUERY WHERE
 * query_id = ...` (servers before 21.x keep running a query whose HTTP connection closed) and
 * closes the request. Values arrive as text (TabSeparated), so decimals and 64-bit integers stay
 * exact; exports are ClickHouse's own CSVWithNames with records ended by CRLF and NULL (`\N`)
 * written as an empty field, quarry's CSV conventions.
 */

const QUERY_FORMAT = 'TabSeparatedWithNamesAndTypes';
const LIMITABLE = /^\s*(\(\s*)*(SELECT|WITH)\b/i;
/** Statements that answer with rows (the others run as commands in mutations mode). */
const RETURNS_ROWS = /^\s*(\(\s*)*(SELECT|WITH|SHOW|DESC|DESCRIBE|EXISTS|EXPLAIN)\b/i;
/** The last column of catalog/search.ts's statements: each row's share of the total. */
const WINDOW_COUNT = /,\s*COUNT\(\*\) OVER \(\) AS \w+(?=\s+FROM)/;

export class ClickhouseDriver implements DatabaseDriver {
  readonly engine = 'clickhouse' as const;
  private client: ClickHouseClient | null = null;
  /** Whether the server takes query parameters (hasParameters), once known. */
  private parameters: Promise<boolean> | null = null;

  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
  ) {}

  /** Settings sent with every request; readonly last, so that the ones before it are still allowed. */
  private settings(): Record<string, string | number> {
    const settings: Record<string, string | number> = { max_execution_time: Math.max(1, Math.ceil(this.config.statementTimeoutMs / 1000)) };
    if (this.readOnly) settings.readonly = '1';
    return settings;
  }

  async connect(signal: AbortSignal): Promise<void> {
    if (this.client) return;
    const client = createClient({
      url: `http://${this.config.host ?? 'localhost'}:${this.config.port ?? 8123}`,
      username: this.config.user ?? 'default',
      password: this.config.password ?? '',
      database: this.config.database ?? 'default',
      application: 'quarry',
      request_timeout: this.config.statementTimeoutMs + this.config.connectTimeoutMs,
      log: { level: ClickHouseLogLevel.OFF },
      // The server's gzip of a large result costs it more time than the bytes cost the network (bench/clickhouse.bench.mjs).
      compression: { response: false, request: false },
    });
    try {
      await this.text(client, 'SELECT 1', randomUUID(), AbortSignal.any([signal, AbortSignal.timeout(this.config.connectTimeoutMs)]));
    } catch (error) {
      await client.close().catch(() => undefined);
      if ((error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError') {
        if (signal.aborted) throw error;
        throw new ToolError(
          `could not connect to clickhouse at ${this.config.host}:${this.config.port ?? 8123}: no answer within ${this.config.connectTimeoutMs / 1000} s ` +
            '(connect_timeout)',
          'connect_timeout',
        );
      }
      throw error;
    }
    this.client = client;
  }

  private connected(): ClickHouseClient {
    if (!this.client) throw new Error('not connected');
    return this.client;
  }

  /** One request's whole answer as text, with the read-only settings, cancellable by query id. */
  private async text(client: ClickHouseClient, sql: string, queryId: string, signal: AbortSignal, params?: Record<string, unknown>): Promise<string> {
    const result = await client.exec({
      query: `${sql}\nFORMAT ${QUERY_FORMAT}`,
      query_id: queryId,
      abort_signal: signal,
      clickhouse_settings: this.settings(),
      ...(params ? { query_params: params } : {}),
    });
    const chunks: Buffer[] = [];
    for await (const chunk of result.stream as Readable) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  /** Runs work with cancellation: an abort kills the query on the server by its id (and closes the request). */
  private run<T>(options: RunOptions, work: (queryId: string) => Promise<T>): Promise<T> {
    const client = this.connected();
    const queryId = randomUUID();
    return runCancellable(
      options.signal,
      () => this.kill(client, queryId),
      () => work(queryId),
    );
  }

  private async kill(client: ClickHouseClient, queryId: string): Promise<void> {
    await client.command({ query: `KILL QUERY WHERE query_id = ${literal(queryId)}`, clickhouse_settings: this.settings() });
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    // Mutations mode (the eval profile): a statement without rows runs as a command, since a FORMAT
    // clause after INSERT ... VALUES would be read as its data.
    if (!options.readOnly && !this.readOnly && !RETURNS_ROWS.test(sql)) {
      const summary = await this.run(options, async (queryId) => {
        const result = await this.connected().command({ query: sql, query_id: queryId, abort_signal: options.signal, clickhouse_settings: this.settings() });
        return result.summary;
      }).catch((error: unknown) => {
        throw asWritten(error, sql, 0);
      });
      // Servers before 19.x send no summary header: then the count is not known, and not claimed.
      const written = summary?.written_rows;
      return { columns: [], rows: [], more: false, ...(written !== undefined ? { affectedRows: Number(written) } : {}) };
    }
    // The limit is pushed down to the server: it stops reading after limit+1 rows.
    const prefix = 'SELECT * FROM (\n';
    const statement = LIMITABLE.test(sql) ? `${prefix}${sql}\n)\nLIMIT ${limit + 1}` : sql;
    const table = await this.run(options, (queryId) => this.text(this.connected(), statement, queryId, options.signal)).catch((error: unknown) => {
      // Servers before 20.6 have no EXPLAIN: their parser fails on its first word.
      if (/^\s*EXPLAIN\b/i.test(sql) && /Syntax error: failed at position 1\b/.test((error as Error).message ?? ''))
        throw new ToolError('explain: this ClickHouse server has no EXPLAIN (it needs 20.6 or newer); count or sample rows instead', 'unsupported');
      throw asWritten(error, sql, statement === sql ? 0 : prefix.length);
    });
    const { columns, rows } = parseTsv(table);
    return { columns, rows: rows.slice(0, limit), more: rows.length > limit };
  }

  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    await this.run(options, async (queryId) => {
      const result = await this.connected().exec({
        query: `${sql}\nFORMAT CSVWithNames`,
        query_id: queryId,
        abort_signal: options.signal,
        clickhouse_settings: this.settings(),
      });
      const csv = new ClickhouseCsv();
      async function* converted(): AsyncGenerator<Buffer> {
        for await (const chunk of result.stream as Readable) yield csv.convert(chunk as Buffer);
      }
      if (!(await writeEngineCsv(converted(), sink))) throw new ToolError('ClickHouse returned no header for the export', 'database_error');
      sink.setRowCount(csv.records - 1);
    }).catch((error: unknown) => {
      throw asWritten(error, sql, 0);
    });
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    const { schema, table: name } = splitQualifiedName(table.replace(/`/g, '"'));
    const database = schema ?? this.config.database ?? 'default';
    const rows = await this.catalog(
      'SELECT name, type, default_kind, default_expression, is_in_primary_key FROM system.columns WHERE database = ? AND table = ?',
      [database, name],
      options,
    );
    if (rows.length === 0) throw new ToolError(`clickhouse: no table "${table}" in database ${database}; use list_tables or search`, 'not_found');
    const columns = rows.map(([column, type, kind, expression, primary]) => ({
      name: String(column),
      type: String(type),
      nullable: String(type).startsWith('Nullable('),
      default: kind ? `${String(kind)} ${String(expression)}` : null,
      primaryKey: String(primary) === '1',
    }));
    const primaryKey = columns.filter((column) => column.primaryKey).map((column) => column.name);
    return { schema: database, name, columns, primaryKey, foreignKeys: [], indexes: [] };
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    // quarry's own values (find_values' value, search patterns) are query parameters ({p0:String}) where the
    // server has them; servers before 19.x have none, and there they are spliced as escaped literals.
    const bound = params.length > 0 && (await this.hasParameters(options));
    const { statement, values } = bindParameters(sql, params, bound);
    // Servers before 21.x have no window functions: the total that search and list_tables add to
    // every row (COUNT(*) OVER ()) is counted by a query of its own.
    const windowCount = WINDOW_COUNT.exec(statement);
    if (windowCount) {
      const plain = statement.replace(WINDOW_COUNT, '');
      const [[total] = []] = await this.catalogRows(`SELECT count() FROM (\n${plain.replace(/\s+LIMIT \d+\s*$/, '')}\n)`, values, options);
      return (await this.catalogRows(plain, values, options)).map((row) => [...row, total]);
    }
    return this.catalogRows(statement, values, options);
  }

  private async catalogRows(statement: string, values: Record<string, unknown> | undefined, options: RunOptions): Promise<CellValue[][]> {
    const table = await this.run(options, (queryId) => this.text(this.connected(), statement, queryId, options.signal, values));
    return parseTsv(table).rows;
  }

  /** Whether the server takes query parameters: asked once per connection. */
  private async hasParameters(options: RunOptions): Promise<boolean> {
    this.parameters ??= this.run(options, (queryId) =>
      this.text(this.connected(), 'SELECT {quarry_probe:String}', queryId, options.signal, { quarry_probe: 'ok' }),
    ).then(
      (answer) => parseTsv(answer).rows[0]?.[0] === 'ok',
      (error: unknown) => {
        // A cancel is asked again next time; any other failure (18.16: "Unknown setting param_quarry_probe") means
        // escaped literals, which every server reads.
        this.parameters = options.signal.aborted ? null : Promise.resolve(false);
        if (options.signal.aborted) throw error;
        return false;
      },
    );
    return this.parameters;
  }

  async ping(options: RunOptions): Promise<string> {
    const [row] = await this.catalog('SELECT version()', [], options);
    return `ClickHouse ${String(row?.[0] ?? '')}`;
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.parameters = null;
    await client?.close();
  }
}

/**
 * A server error as it concerns the statement the user wrote: ClickHouse ends its messages with a
 * newline, and a syntax error names a position (and a line and column) in quarry's wrapping of the
 * statement (`SELECT * FROM (...) LIMIT n FORMAT ...`): the position is told in the user's text
 * (`prefix` characters of wrapping before it), or as its end, and what stood there from the text.
 */
export function asWritten(error: unknown, sql: string, prefix: number): unknown {
  if (!(error instanceof Error) || error instanceof ToolError) return error;
  error.message = error.message.trimEnd();
  const found = /failed at position (\d+)(?: \(line \d+, col \d+\))?: [\s\S]*?(?=\. Expected |,? e\.what\(\)|$)/.exec(error.message);
  if (!found) return error;
  const offset = Number(found[1]) - 1 - prefix;
  const where =
    offset >= 0 && offset < sql.trimEnd().length
      ? `position ${offset + 1}: ${sql.slice(offset, offset + 40).replace(/\s+/g, ' ')}`
      : 'the end of the statement';
  error.message = error.message.replace(found[0], `failed at ${where}`);
  return error;
}

/** A ClickHouse string literal (or NULL, or a number); a NUL byte is written as \0, which the parser reads back. */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return `'${String(value).replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\0/g, '\\0')}'`;
}

/** A query parameter's ClickHouse type for a value quarry binds. */
function parameterType(value: unknown): string {
  if (value === null || value === undefined) return 'Nullable(String)';
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value))) return 'Int64';
  if (typeof value === 'number') return 'Float64';
  return 'String';
}

/**
 * quarry's catalogue statements with their `?` placeholders (none inside its literals) as query
 * parameters `{p0:String}` with their values, or, for servers without parameters, as escaped literals.
 */
export function bindParameters(sql: string, params: readonly unknown[], bound: boolean): { statement: string; values?: Record<string, unknown> } {
  let index = 0;
  if (!bound) return { statement: sql.replace(/\?/g, () => literal(params[index++])) };
  const values: Record<string, unknown> = {};
  const statement = sql.replace(/\?/g, () => {
    const name = `p${index}`;
    const value = params[index++];
    values[name] = typeof value === 'number' || typeof value === 'bigint' || value === null || value === undefined ? value : String(value);
    return `{${name}:${parameterType(value)}}`;
  });
  return { statement, values };
}

const TSV_ESCAPES: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0', "'": "'", '\\': '\\', N: '' };

/** TabSeparatedWithNamesAndTypes: names, types, then rows; `\N` alone is NULL. */
function parseTsv(text: string): { columns: string[]; rows: CellValue[][] } {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const field = (raw: string): CellValue => (raw === '\\N' ? null : raw.replace(/\\(.)/g, (_, ch: string) => TSV_ESCAPES[ch] ?? ch));
  const split = (line: string) => (line === '' ? [''] : line.split('\t'));
  const columns = lines.length ? split(lines[0]!).map((name) => String(field(name))) : [];
  return { columns, rows: lines.slice(2).map((line) => split(line).map(field)) };
}

const QUOTE = 0x22;
const NEWLINE = 0x0a;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const CARRIAGE_RETURN = 0x0d;
const LETTER_N = 0x4e;

/**
 * ClickHouse's CSV as quarry writes CSV: records end with CRLF (a newline inside a quoted field
 * stays as it is) and NULL, which ClickHouse writes as an unquoted `\N`, is an empty field.
 * Across chunk boundaries. The bytes are only read here, the state kept in locals; the runs
 * between changes (one per record) are copied by Buffer.copy. (Writing every byte from
 * JavaScript and keeping the state on the object took most of an export's time:
 * bench/clickhouse.bench.mjs.)
 */
export class ClickhouseCsv {
  private quoted = false;
  /** The last byte of the previous chunk: a backslash after a comma or a newline opens a field. */
  private lastByte = NEWLINE;
  /** 1: a `\` at a field's start (held back); 2: `\N` at a field's start, not yet ended. */
  private pendingNull = 0;
  records = 0;

  convert(chunk: Buffer): Buffer {
    const end = chunk.length;
    // Every byte copied at most once, plus a CR per newline and the two bytes of a `\N` held back from the last chunk.
    const out = Buffer.allocUnsafe(end * 2 + 4);
    let length = 0;
    let quoted = this.quoted;
    let pending = this.pendingNull;
    let records = this.records;
    // Where the bytes not yet copied begin.
    let run = 0;
    for (let at = 0; at < end; at++) {
      const byte = chunk[at]!;
      if (quoted) {
        // A doubled quote inside a field closes and reopens it: the state comes out the same.
        if (byte === QUOTE) quoted = false;
        continue;
      }
      if (pending !== 0) {
        if (pending === 1 && byte === LETTER_N) {
          pending = 2;
          run = at + 1;
          continue;
        }
        // `\N` followed by the field's end is NULL, written as nothing; anything else was not NULL after all.
        if (pending === 1 || (byte !== COMMA && byte !== NEWLINE)) {
          out[length++] = BACKSLASH;
          if (pending === 2) out[length++] = LETTER_N;
        }
        pending = 0;
      }
      if (byte === QUOTE) quoted = true;
      else if (byte === NEWLINE) {
        length += chunk.copy(out, length, run, at);
        out[length++] = CARRIAGE_RETURN;
        run = at;
        records++;
      } else if (byte === BACKSLASH) {
        const previous = at > 0 ? chunk[at - 1] : this.lastByte;
        if (previous === COMMA || previous === NEWLINE) {
          length += chunk.copy(out, length, run, at);
          run = at + 1;
          pending = 1;
        }
      }
    }
    length += chunk.copy(out, length, run, end);
    if (end > 0) this.lastByte = chunk[end - 1]!;
    this.quoted = quoted;
    this.pendingNull = pending;
    this.records = records;
    return out.subarray(0, length);
  }
}
