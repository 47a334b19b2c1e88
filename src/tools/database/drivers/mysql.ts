import mysql from 'mysql2';
import { ToolError } from '../../core/types.js';
import { tokenize } from '../sql/lexer.js';
import { cutForDisplay } from '../values.js';
import { ConnectionHealth, explainConnectError, EXPORT_BATCH_ROWS, runCancellable, serverLogin, splitQualifiedName } from './server-support.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * MySQL and MariaDB through mysql2. Read-only mode: the session's transactions default to READ
 * ONLY, every statement runs inside `START TRANSACTION READ ONLY` ... `ROLLBACK`, and the driver
 * never sends multiple statements (nor LOAD DATA LOCAL files).
 *
 * After every read-only statement the session is reset (COM_RESET_CONNECTION) and set up again:
 * much of a MySQL session survives a ROLLBACK and would outlive the statement: GET_LOCK locks,
 * LOCK TABLES, HANDLERs, PREPAREd statements, user variables and SET SESSION settings (a changed
 * sql_mode such as ANSI_QUOTES would make the server read quotes differently from the statement
 * check). The statement check refuses all of these; the reset makes sure nothing that slips past
 * it (say, from inside a stored function) lasts. Rows stream from the server; a query stops reading after
 * limit+1 rows by dropping the connection (the server aborts the statement; the next call
 * reconnects). Decimals, big integers and dates arrive as strings.
 */

/** sql_mode flags that would make the server read quotes differently from the statement check. */
const QUOTING_MODES = new Set(['NO_BACKSLASH_ESCAPES', 'ANSI_QUOTES', 'ANSI']);

type Connection = mysql.Connection;

/**
 * Settles with the error when a connection fails or the server closes it. A streaming query
 * (no callback) is not told when its connection dies (mysql2 reports it on the connection
 * only), so a KILL from the server left it waiting for ever; every statement also waits on this.
 */
const lost = new WeakMap<Connection, Promise<Error>>();

function whenLost(connection: Connection): Promise<Error> {
  return lost.get(connection) ?? new Promise<Error>(() => undefined);
}

export class MysqlDriver implements DatabaseDriver {
  readonly engine = 'mysql' as const;
  private connection: Connection | null = null;
  private readonly health = new ConnectionHealth();

  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
  ) {}

  private connectionOptions(): mysql.ConnectionOptions {
    return {
      ...serverLogin(this.config),
      connectTimeout: this.config.connectTimeoutMs,
      multipleStatements: false,
      supportBigNumbers: true,
      bigNumberStrings: true,
      decimalNumbers: false,
      dateStrings: true,
      rowsAsArray: true,
      // LOAD DATA LOCAL INFILE would make the client read a local file for the server.
      flags: ['-LOCAL_FILES'],
    };
  }

  private open(): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const connection = mysql.createConnection(this.connectionOptions());
      let markLost!: (error: Error) => void;
      lost.set(connection, new Promise<Error>((resolve) => (markLost = resolve)));
      connection.on('error', (error: Error) => {
        if (this.connection === connection) this.health.broken = true;
        markLost(error);
      });
      connection.once('end', () => markLost(new Error('the server closed the connection')));
      connection.connect((error) => (error ? reject(explainConnectError(error, this.config, 3306)) : resolve(connection)));
    });
  }

  private static exec(connection: Connection, sql: string, values: unknown[] = []): Promise<unknown[][]> {
    return new Promise((resolve, reject) => {
      connection.query({ sql, values, rowsAsArray: true }, (error, rows) => (error ? reject(error) : resolve(rows as unknown[][])));
    });
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.connection;
    if (await this.health.reusable(current !== null, () => MysqlDriver.exec(current!, 'SELECT 1'))) return;
    await this.close();
    const connection = await runCancellable(
      signal,
      () => undefined,
      () => this.open(),
    );
    try {
      await this.setUpSession(connection);
    } catch (error) {
      connection.destroy();
      throw error;
    }
    this.connection = connection;
    this.health.reset();
  }

  /** Quoting the way the statement check reads it, the statement timeout, and read-only transactions. */
  private async setUpSession(connection: Connection): Promise<void> {
    const [[version, sqlMode] = []] = (await MysqlDriver.exec(connection, 'SELECT VERSION(), @@SESSION.sql_mode')) as [string, string][];
    const mode = String(sqlMode ?? '')
      .split(',')
      .filter((flag) => flag && !QUOTING_MODES.has(flag.toUpperCase()))
      .join(',');
    const timeout = /mariadb/i.test(String(version))
      ? `max_statement_time = ${this.config.statementTimeoutMs / 1000}`
      : `max_execution_time = ${Math.round(this.config.statementTimeoutMs)}`;
    await MysqlDriver.exec(connection, `SET SESSION sql_mode = ?, SESSION ${timeout}`, [mode]);
    if (this.readOnly) await MysqlDriver.exec(connection, 'SET SESSION TRANSACTION READ ONLY');
  }

  /** Drops everything the last statement left in the session (see the class comment) and sets it up again. */
  private async resetSession(connection: Connection): Promise<void> {
    await new Promise<void>((resolve, reject) => connection.reset((error) => (error ? reject(error) : resolve())));
    await this.setUpSession(connection);
  }

  /** KILL QUERY from a second connection: the running statement fails promptly. */
  private async cancelRunning(connection: Connection): Promise<void> {
    const killer = await this.open();
    try {
      await MysqlDriver.exec(killer, `KILL QUERY ${Number(connection.threadId)}`);
    } finally {
      killer.destroy();
    }
  }

  private async run<T>(options: RunOptions, work: (connection: Connection) => Promise<T>): Promise<T> {
    const connection = this.connection;
    if (!connection) throw new Error('not connected');
    this.health.touch();
    if (!options.readOnly)
      return runCancellable(
        options.signal,
        () => this.cancelRunning(connection),
        () => work(connection),
      );
    await MysqlDriver.exec(connection, 'START TRANSACTION READ ONLY');
    try {
      return await runCancellable(
        options.signal,
        () => this.cancelRunning(connection),
        () => work(connection),
      );
    } finally {
      if (this.connection === connection && this.health.broken) this.abandon(connection);
      if (this.connection === connection) {
        try {
          await MysqlDriver.exec(connection, 'ROLLBACK');
          await this.resetSession(connection);
        } catch {
          // A session that cannot be cleaned up is never reused.
          this.health.broken = true;
        }
      }
    }
  }

  /** Drops a connection whose result is not needed any more; the server aborts the statement. */
  private abandon(connection: Connection): void {
    if (this.connection === connection) this.connection = null;
    connection.destroy();
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    return this.run(options, async (connection) => {
      // With the limit in the statement the server can stop early (a top-N sort for ORDER BY)
      // instead of sorting every row for limit+1 of them. MariaDB ignores ORDER BY in a derived
      // table, so the limit is appended to the statement itself, and only where it has no
      // LIMIT (or locking or INTO clause) of its own at the top level.
      const limited = appendLimit(sql, limit + 1);
      if (limited === null) return this.readRows(connection, sql, limit, false);
      try {
        return await this.readRows(connection, limited, limit, true);
      } catch (error) {
        if (!LIMIT_REFUSALS.has(Number((error as { errno?: number }).errno))) throw error;
        return this.readRows(connection, sql, limit, false);
      }
    });
  }

  /**
   * Up to `limit` rows and whether there are more. Without a LIMIT in the statement the server
   * would go on sending every row, so the connection is dropped after limit+1 (the server aborts
   * the statement); with one, the last row is simply the end.
   */
  private readRows(connection: Connection, sql: string, limit: number, limitedByServer: boolean): Promise<QueryResult> {
    return new Promise<QueryResult>((resolve, reject) => {
      let columns: string[] | null = null;
      const rows: CellValue[][] = [];
      let more = false;
      let settled = false;
      const settle = (result: QueryResult | Error) => {
        if (settled) return;
        settled = true;
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      const query = connection.query({ sql, rowsAsArray: true });
      void whenLost(connection).then(settle);
      // mysql2 emits 'fields' with undefined for statements without a result set.
      query.on('fields', (fields: { name: string }[] | undefined) => {
        columns = fields ? fields.map((field) => field.name) : null;
      });
      query.on('result', (row: unknown) => {
        if (settled) return;
        if (!columns) {
          settle({ columns: [], rows: [], more: false, affectedRows: Number((row as { affectedRows?: number }).affectedRows ?? 0) });
          return;
        }
        if (rows.length === limit) {
          more = true;
          if (limitedByServer) return;
          this.abandon(connection);
          settle({ columns, rows, more: true });
          return;
        }
        rows.push(cutForDisplay(row as CellValue[], rows.length));
      });
      query.on('error', (error: Error) => settle(error));
      query.on('end', () => settle({ columns: columns ?? [], rows, more }));
    });
  }

  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    await this.run(
      options,
      (connection) =>
        new Promise<void>((resolve, reject) => {
          let batch: CellValue[][] = [];
          let failed = false;
          let writing = Promise.resolve();
          const query = connection.query({ sql, rowsAsArray: true });
          const fail = (error: unknown) => {
            if (failed) return;
            failed = true;
            // The connection may be paused mid-result (a failed write, such as a full disk): it would
            // never finish the statement, so the rollback after it would wait for ever. Dropping it
            // makes the server abort the statement; the next call opens a new connection.
            this.abandon(connection);
            reject(error);
          };
          query.on('fields', (fields: { name: string }[] | undefined) => sink.setColumns((fields ?? []).map((field) => field.name)));
          query.on('result', (row: unknown) => {
            batch.push(row as CellValue[]);
            if (batch.length < EXPORT_BATCH_ROWS) return;
            const full = batch;
            batch = [];
            connection.pause();
            writing = writing.then(() => sink.writeRows(full)).then(() => connection.resume(), fail);
          });
          query.on('error', fail);
          void whenLost(connection).then(fail);
          query.on('end', () => {
            writing
              .then(() => sink.writeRows(batch))
              .then(() => {
                if (failed) return;
                failed = true;
                resolve();
              }, fail);
          });
        }),
    );
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    const { schema, table: name } = splitQualifiedName(table.replaceAll('`', '"'));
    return this.run(options, async (connection) => {
      const where = 'table_schema = COALESCE(?, DATABASE()) AND table_name = ?';
      const found = (await MysqlDriver.exec(connection, `SELECT table_schema FROM information_schema.tables WHERE ${where}`, [schema, name])) as [string][];
      if (!found[0]) throw new ToolError(`no such table or view: ${table}; use operation list_tables to see the tables`, 'not_found');
      const actualSchema = found[0][0];
      const columns = (await MysqlDriver.exec(
        connection,
        `SELECT column_name, column_type, is_nullable, column_default, column_key FROM information_schema.columns WHERE ${where} ORDER BY ordinal_position`,
        [actualSchema, name],
      )) as [string, string, string, string | null, string][];
      const foreignKeys = (await MysqlDriver.exec(
        connection,
        `SELECT constraint_name, column_name, referenced_table_schema, referenced_table_name, referenced_column_name FROM information_schema.key_column_usage
         WHERE ${where} AND referenced_table_name IS NOT NULL ORDER BY constraint_name, ordinal_position`,
        [actualSchema, name],
      )) as [string, string, string, string, string][];
      const indexes = (await MysqlDriver.exec(
        connection,
        `SELECT index_name, MIN(non_unique), GROUP_CONCAT(column_name ORDER BY seq_in_index SEPARATOR ', ') FROM information_schema.statistics
         WHERE ${where} GROUP BY index_name ORDER BY index_name`,
        [actualSchema, name],
      )) as [string, string | number, string][];
      return {
        schema: actualSchema,
        name,
        columns: columns.map(([column, type, nullable, defaultValue, key]) => ({
          name: column,
          type,
          nullable: nullable === 'YES',
          default: defaultValue,
          primaryKey: key === 'PRI',
        })),
        primaryKey: columns.filter((column) => column[4] === 'PRI').map(([column]) => column),
        foreignKeys: foreignKeys.map(
          ([constraint, column, refSchema, refTable, refColumn]) => `${constraint}: ${column} -> ${refSchema}.${refTable}(${refColumn})`,
        ),
        indexes: indexes.map(([index, nonUnique, indexColumns]) => `${index}${Number(nonUnique) === 0 ? ' UNIQUE' : ''} (${indexColumns})`),
      };
    });
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.run(options, async (connection) => (await MysqlDriver.exec(connection, sql, [...params])) as CellValue[][]);
  }

  connectionLost(): boolean {
    return this.health.broken;
  }

  async ping(options: RunOptions): Promise<string> {
    return this.run(options, async (connection) => {
      const rows = (await MysqlDriver.exec(connection, 'SELECT VERSION()')) as [string][];
      return `MySQL/MariaDB ${rows[0]?.[0] ?? ''}`.trim();
    });
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    if (!connection) return;
    await new Promise<void>((resolve) => connection.end(() => resolve()));
  }
}

/** Server errors that mean "this statement cannot take a LIMIT there": parse error, LIMIT in a subquery, UNION and LIMIT. */
const LIMIT_REFUSALS = new Set([1064, 1221, 1235]);
/** Top-level words after which no LIMIT may be appended (the statement's own limit, locking, INTO, and so on). */
const NO_LIMIT_AFTER = new Set(['LIMIT', 'FETCH', 'OFFSET', 'FOR', 'LOCK', 'INTO', 'PROCEDURE']);

/** The statement with `LIMIT n` on a line of its own, or null where that would not simply cut its rows. */
export function appendLimit(sql: string, limit: number): string | null {
  let tokens;
  try {
    tokens = tokenize(sql, 'mysql');
  } catch {
    return null;
  }
  const first = tokens.find((token) => !(token.kind === 'punct' && token.value === '('));
  if (first?.kind !== 'word' || (first.value !== 'SELECT' && first.value !== 'WITH')) return null;
  let depth = 0;
  for (const token of tokens) {
    if (token.kind === 'punct') {
      if (token.value === '(') depth++;
      else if (token.value === ')') depth--;
      else if (token.value === ';' && depth === 0) return null;
      continue;
    }
    if (depth === 0 && token.kind === 'word' && NO_LIMIT_AFTER.has(token.value)) return null;
  }
  return `${sql}\nLIMIT ${limit}`;
}
