import pg from 'pg';
import Cursor from 'pg-cursor';
import { ToolError } from '../../core/types.js';
import { writeEngineCsv } from '../csv.js';
import { ExtendedCopyOut } from './pg-copy-out.js';
import { ConnectionHealth, explainConnectError, EXPORT_BATCH_ROWS, numberedPlaceholders, runCancellable, serverLogin } from './server-support.js';
import { cutForDisplay } from '../values.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * PostgreSQL through pg. Read-only mode: the session defaults to read-only transactions and
 * every statement runs inside `BEGIN READ ONLY` ... `ROLLBACK`, followed by `DISCARD ALL`.
 * Every user statement goes through the extended protocol, which takes exactly one statement:
 * queries through a cursor (fetching only limit+1 rows), exports as `COPY (query) TO STDOUT WITH
 * (FORMAT csv, HEADER)` written by PostgreSQL itself (pg-copy-out.ts). Every value arrives as
 * the server's text, so numerics, big integers and dates stay exact.
 *
 * Why DISCARD ALL: some session state survives a ROLLBACK. Session advisory locks
 * (pg_advisory_lock, also from inside a user function the statement check cannot see into) would
 * be held for as long as quarry keeps the connection, and PREPARE'd statements would stay. DISCARD
 * ALL releases and drops them. It also resets settings, so the session's own settings are
 * startup parameters (their reset values), not SETs.
 */

/** Server text for every type: nothing is parsed into a lossy JavaScript number or Date. */
const RAW_TYPES = { getTypeParser: () => (value: string) => value };
/** Statements COPY can wrap; others are exported through a cursor. */
/** Rows a query reads from its cursor at a time (values are cut after each batch). */
const QUERY_BATCH_ROWS = 25;
const COPYABLE = /^\s*(\(\s*)*(SELECT|WITH|VALUES|TABLE)\b/i;

export class PostgresDriver implements DatabaseDriver {
  readonly engine = 'postgres' as const;
  private client: pg.Client | null = null;
  /** Settles when the current client's connection fails or ends: nothing more will come on it. */
  private gone: Promise<void> = Promise.resolve();
  private readonly health = new ConnectionHealth();

  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
  ) {}

  private clientConfig(): pg.ClientConfig {
    return {
      ...serverLogin(this.config),
      connectionTimeoutMillis: this.config.connectTimeoutMs,
      statement_timeout: this.config.statementTimeoutMs,
      application_name: 'quarry',
      types: RAW_TYPES,
      // The statement check reads strings the standard way; the server must too.
      options: `-c standard_conforming_strings=on${this.readOnly ? ' -c default_transaction_read_only=on' : ''}`,
    };
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.client;
    if (await this.health.reusable(current !== null, () => current!.query('SELECT 1'))) return;
    await this.close();
    const client = new pg.Client(this.clientConfig());
    const gone = new Promise<void>((resolve) => {
      client.on('error', () => {
        this.health.broken = true;
        resolve();
      });
      client.once('end', () => {
        this.health.broken = true;
        resolve();
      });
    });
    await runCancellable(
      signal,
      () => client.end(),
      () => client.connect(),
    ).catch((error: unknown) => {
      throw explainConnectError(error, this.config, 5432);
    });
    this.client = client;
    this.gone = gone;
    this.health.reset();
  }

  /** Asks the server to cancel this connection's running statement (from a second connection). */
  private async cancelRunning(): Promise<void> {
    const pid = (this.client as unknown as { processID: number | null } | null)?.processID;
    if (!pid) return;
    const canceller = new pg.Client(this.clientConfig());
    canceller.on('error', () => undefined);
    try {
      await canceller.connect();
      await canceller.query('SELECT pg_cancel_backend($1)', [pid]);
    } finally {
      await canceller.end().catch(() => undefined);
    }
  }

  /** Runs work inside a read-only transaction that is always rolled back (autocommit in mutations mode). */
  private async run<T>(options: RunOptions, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = this.client;
    if (!client) throw new Error('not connected');
    this.health.touch();
    if (!options.readOnly)
      return runCancellable(
        options.signal,
        () => this.cancelRunning(),
        () => work(client),
      );
    await client.query('BEGIN READ ONLY');
    try {
      return await runCancellable(
        options.signal,
        () => this.cancelRunning(),
        () => work(client),
      );
    } finally {
      try {
        await client.query('ROLLBACK');
        await client.query('DISCARD ALL');
      } catch {
        // A session that cannot be cleaned up is never reused.
        this.health.broken = true;
      }
    }
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    return this.run(options, async (client) => {
      if (!COPYABLE.test(sql)) return readRows(client, sql, limit, this.gone);
      // The limit inside the statement lets the planner bound its work: an ORDER BY becomes a
      // top-N sort instead of sorting every row to hand over limit+1. The subquery keeps its
      // ORDER BY (PostgreSQL does not pull up a sorted subquery, and the LIMIT bound passes
      // through the subquery scan to the sort). Where the wrapped form is refused but the
      // statement alone is not (a data-modifying WITH must be at the top level), the statement
      // runs alone; in read-only mode a savepoint keeps the transaction usable for that.
      const limited = `SELECT * FROM (\n${sql}\n) AS quarry_query LIMIT ${limit + 1}`;
      if (options.readOnly) await client.query('SAVEPOINT quarry_limit');
      try {
        const result = await readRows(client, limited, limit, this.gone);
        if (options.readOnly) await client.query('RELEASE SAVEPOINT quarry_limit');
        return result;
      } catch (error) {
        if (!/^(42|0A)/.test((error as { code?: string }).code ?? '')) throw error;
        if (options.readOnly) await client.query('ROLLBACK TO SAVEPOINT quarry_limit');
        return readRows(client, sql, limit, this.gone);
      }
    });
  }

  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    if (!COPYABLE.test(sql)) {
      await this.exportThroughCursor(sql, sink, options);
      return;
    }
    await this.run(options, async (client) => {
      // On lines of its own, so that a trailing "--" comment the check misread could not hide the ")".
      // COPY ends records with LF; every export ends them with CRLF (docs/guide/databases.md "export_query"): the stream converts each row's end.
      const stream = client.query(new ExtendedCopyOut(`COPY (\n${sql}\n) TO STDOUT WITH (FORMAT csv, HEADER true)`, { crlf: true }));
      // The header is the first CSV record; quarry writes it through the sink with the column names.
      if (!(await writeEngineCsv(stream as AsyncIterable<Buffer>, sink))) throw new ToolError('PostgreSQL returned no header for the export', 'database_error');
      sink.setRowCount(stream.rowCount);
    });
  }

  private async exportThroughCursor(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    await this.run(options, async (client) => {
      const cursor = client.query(new Cursor(sql, [], { rowMode: 'array', types: RAW_TYPES }));
      try {
        for (;;) {
          const { rows, fields } = await new Promise<{ rows: unknown[][]; fields: { name: string }[] }>((resolve, reject) => {
            cursor.read(EXPORT_BATCH_ROWS, (error, rows, result) => (error ? reject(error) : resolve({ rows, fields: result?.fields ?? [] })));
          });
          sink.setColumns(fields.map((field) => field.name));
          if (rows.length === 0) return;
          await sink.writeRows(rows as QueryResult['rows']);
        }
      } finally {
        await closeCursor(cursor, this.gone);
      }
    });
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    return this.run(options, async (client) => {
      const found = await client.query<[string, string, string]>({
        text: `SELECT c.oid::text, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)`,
        values: [table],
        rowMode: 'array',
      });
      const row = found.rows[0];
      if (!row) throw new ToolError(`no such table or view: ${table}; use operation list_tables to see the tables`, 'not_found');
      const [oid, schema, name] = row;
      const columns = await client.query<[string, string, string, string | null, string]>({
        text: `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull::text, pg_get_expr(d.adbin, d.adrelid),
                 (EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY (i.indkey)))::text
               FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
               WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
        values: [oid],
        rowMode: 'array',
      });
      const primaryKey = await client.query<[string]>({
        text: `SELECT a.attname FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
               WHERE i.indrelid = $1::oid AND i.indisprimary ORDER BY k.position`,
        values: [oid],
        rowMode: 'array',
      });
      const foreignKeys = await client.query<[string, string]>({
        text: `SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::oid AND contype = 'f' ORDER BY conname`,
        values: [oid],
        rowMode: 'array',
      });
      const indexes = await client.query<[string, string]>({
        text:
          `SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::oid ORDER BY ` +
          `c.relname`,
        values: [oid],
        rowMode: 'array',
      });
      return {
        schema,
        name,
        columns: columns.rows.map(([column, type, notNull, defaultValue, primary]) => ({
          name: column,
          type,
          nullable: notNull !== 'true',
          default: defaultValue,
          primaryKey: primary === 'true',
        })),
        primaryKey: primaryKey.rows.map(([column]) => column),
        foreignKeys: foreignKeys.rows.map(([constraint, definition]) => `${constraint}: ${definition}`),
        indexes: indexes.rows.map(([index, definition]) => `${index}: ${definition}`),
      };
    });
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.run(options, async (client) => {
      const result = await client.query<CellValue[]>({ text: numberedPlaceholders(sql, '$'), values: [...params], rowMode: 'array' });
      return result.rows;
    });
  }

  connectionLost(): boolean {
    return this.health.broken;
  }

  async ping(options: RunOptions): Promise<string> {
    return this.run(options, async (client) => {
      const result = await client.query<[string]>({ text: 'SELECT version()', rowMode: 'array' });
      return result.rows[0]?.[0] ?? 'PostgreSQL';
    });
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }
}

/**
 * Closes a cursor, unless the connection is gone: pg-cursor's close() waits for the server's
 * answer, which a terminated backend or a restarted server never sends (the process then hung
 * on an unsettled promise and Node exited with code 13, without a word).
 */
async function closeCursor(cursor: Cursor, gone: Promise<void>): Promise<void> {
  if ((cursor as unknown as { state?: string }).state === 'error') return;
  await Promise.race([new Promise<void>((resolve) => cursor.close(() => resolve())), gone]);
}

/** Up to limit+1 rows through a cursor (the statement as the server plans it for a cursor). */
async function readRows(client: pg.Client, sql: string, limit: number, gone: Promise<void>): Promise<QueryResult> {
  const cursor = client.query(new Cursor(sql, [], { rowMode: 'array', types: RAW_TYPES }));
  try {
    // In batches, cutting long values as they arrive, so only a batch is ever held whole.
    const rows: CellValue[][] = [];
    let columns: string[] = [];
    for (;;) {
      const want = Math.min(QUERY_BATCH_ROWS, limit + 1 - rows.length);
      const batch = await new Promise<{ rows: unknown[][]; fields: { name: string }[] }>((resolve, reject) => {
        cursor.read(want, (error, rows, result) => (error ? reject(error) : resolve({ rows, fields: result?.fields ?? [] })));
      });
      if (rows.length === 0) columns = batch.fields.map((field) => field.name);
      for (const row of batch.rows) rows.push(cutForDisplay(row as CellValue[], rows.length));
      if (batch.rows.length < want || rows.length > limit) break;
    }
    const more = rows.length > limit;
    return { columns, rows: more ? rows.slice(0, limit) : rows, more };
  } finally {
    await closeCursor(cursor, gone);
  }
}
