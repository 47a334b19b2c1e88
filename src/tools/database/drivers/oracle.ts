import oracledb, { type OracleConnection, type OracleMetadata } from 'oracledb';
import { ToolError } from '../../core/types.js';
import { ConnectionHealth, EXPORT_BATCH_ROWS, numberedPlaceholders, runCancellable, splitQualifiedName } from './server-support.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * Oracle through oracledb in thin mode (no client libraries). Read-only mode: every statement
 * runs in a transaction opened with `SET TRANSACTION READ ONLY` and ended with a rollback.
 * oracledb executes exactly one statement per call. Numbers, dates and timestamps are fetched
 * as strings (ISO formats set for the session), so nothing is rounded. Cancelling calls
 * `connection.break()`; the statement timeout is the connection's callTimeout.
 */

/** Session formats so dates read as ISO text. */
export const ORACLE_SESSION_SETUP = [
  `ALTER SESSION SET NLS_DATE_FORMAT = 'YYYY-MM-DD HH24:MI:SS'`,
  `ALTER SESSION SET NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF'`,
  `ALTER SESSION SET NLS_TIMESTAMP_TZ_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF TZH:TZM'`,
  `ALTER SESSION SET NLS_NUMERIC_CHARACTERS = '.,'`,
];
export const ORACLE_BEGIN_READ_ONLY = 'SET TRANSACTION READ ONLY';

const AS_STRING = new Set([
  oracledb.DB_TYPE_NUMBER,
  oracledb.DB_TYPE_DATE,
  oracledb.DB_TYPE_TIMESTAMP,
  oracledb.DB_TYPE_TIMESTAMP_TZ,
  oracledb.DB_TYPE_TIMESTAMP_LTZ,
  oracledb.DB_TYPE_CLOB,
  oracledb.DB_TYPE_NCLOB,
]);
const fetchAsExactText = (metadata: OracleMetadata) => (AS_STRING.has(metadata.dbType) ? { type: oracledb.STRING } : undefined);

export type OracleConnector = (config: DatabaseConfig) => Promise<OracleConnection>;

const connectWithOracledb: OracleConnector = (config) =>
  oracledb.getConnection({ user: config.user, password: config.password, connectString: config.dsn, connectTimeout: config.connectTimeoutMs / 1000 });

export class OracleDriver implements DatabaseDriver {
  readonly engine = 'oracle' as const;
  private connection: OracleConnection | null = null;
  private readonly health = new ConnectionHealth();

  /** `connector` is replaceable so that tests can record what would reach the server. */
  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
    private readonly connector: OracleConnector = connectWithOracledb,
  ) {}

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.connection;
    if (await this.health.reusable(current?.isHealthy() === true, () => current!.ping())) return;
    await this.close();
    const connection = await runCancellable(
      signal,
      () => undefined,
      () => this.connector(this.config),
    );
    connection.callTimeout = this.config.statementTimeoutMs;
    for (const statement of ORACLE_SESSION_SETUP) await connection.execute(statement);
    this.connection = connection;
    this.health.reset();
  }

  private async run<T>(options: RunOptions, work: (connection: OracleConnection) => Promise<T>): Promise<T> {
    const connection = this.connection;
    if (!connection) throw new Error('not connected');
    this.health.touch();
    if (options.readOnly) await connection.execute(ORACLE_BEGIN_READ_ONLY);
    try {
      const result = await runCancellable(
        options.signal,
        () => connection.break(),
        () => work(connection),
      );
      if (!options.readOnly) await connection.commit();
      return result;
    } finally {
      if (options.readOnly) {
        await connection.rollback().catch(() => {
          this.health.broken = true;
        });
      }
    }
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    return this.run(options, async (connection) => {
      const result = await connection.execute(sql, [], { resultSet: true, outFormat: oracledb.OUT_FORMAT_ARRAY, fetchTypeHandler: fetchAsExactText });
      if (!result.resultSet) return { columns: [], rows: [], more: false, affectedRows: result.rowsAffected ?? 0 };
      try {
        const rows = (await result.resultSet.getRows(limit + 1)) as CellValue[][];
        const more = rows.length > limit;
        return { columns: result.resultSet.metaData.map((column) => column.name), rows: more ? rows.slice(0, limit) : rows, more };
      } finally {
        await result.resultSet.close();
      }
    });
  }

  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    await this.run(options, async (connection) => {
      const result = await connection.execute(sql, [], { resultSet: true, outFormat: oracledb.OUT_FORMAT_ARRAY, fetchTypeHandler: fetchAsExactText });
      if (!result.resultSet) throw new ToolError('export_query needs a statement that returns rows', 'bad_value');
      try {
        sink.setColumns(result.resultSet.metaData.map((column) => column.name));
        for (;;) {
          const rows = (await result.resultSet.getRows(EXPORT_BATCH_ROWS)) as CellValue[][];
          if (rows.length === 0) return;
          await sink.writeRows(rows);
        }
      } finally {
        await result.resultSet.close();
      }
    });
  }

  private async rows(connection: OracleConnection, sql: string, binds: unknown[]): Promise<unknown[][]> {
    const result = await connection.execute(sql, binds, { outFormat: oracledb.OUT_FORMAT_ARRAY, fetchTypeHandler: fetchAsExactText });
    return result.rows ?? [];
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    const { schema, table: name } = splitQualifiedName(table);
    return this.run(options, async (connection) => {
      const owner = `COALESCE(:owner, SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA'))`;
      const upper = (value: string | null) => (value && value === value.toLowerCase() ? value.toUpperCase() : value);
      const binds = [upper(schema), upper(name)];
      const columns = (await this.rows(
        connection,
        `SELECT c.owner, c.column_name, c.data_type || CASE WHEN c.data_type IN ('VARCHAR2', 'NVARCHAR2', 'CHAR', 'RAW') THEN '(' || c.data_length || ')' ` +
          `WHEN c.data_precision IS NOT NULL THEN '(' || c.data_precision || ',' || c.data_scale || ')' END,
                c.nullable, c.data_default
         FROM all_tab_columns c WHERE c.owner = ${owner} AND c.table_name = :name ORDER BY c.column_id`,
        binds,
      )) as [string, string, string, string, string | null][];
      if (!columns[0]) throw new ToolError(`no such table or view: ${table}; use operation list_tables to see the tables`, 'not_found');
      const constraints = (await this.rows(
        connection,
        `SELECT con.constraint_type, con.constraint_name, cols.column_name, con.r_constraint_name
         FROM all_constraints con JOIN all_cons_columns cols ON cols.owner = con.owner AND cols.constraint_name = con.constraint_name
         WHERE con.owner = ${owner} AND con.table_name = :name AND con.constraint_type IN ('P', 'R') ORDER BY con.constraint_name, cols.position`,
        binds,
      )) as [string, string, string, string | null][];
      const indexes = (await this.rows(
        connection,
        `SELECT i.index_name, i.uniqueness, LISTAGG(c.column_name, ', ') WITHIN GROUP (ORDER BY c.column_position)
         FROM all_indexes i JOIN all_ind_columns c ON c.index_owner = i.owner AND c.index_name = i.index_name
         WHERE i.table_owner = ${owner} AND i.table_name = :name GROUP BY i.index_name, i.uniqueness ORDER BY i.index_name`,
        binds,
      )) as [string, string, string][];
      const primaryKey = constraints.filter(([type]) => type === 'P').map(([, , column]) => column);
      return {
        schema: columns[0][0],
        name: upper(name) ?? name,
        columns: columns.map(([, column, type, nullable, defaultValue]) => ({
          name: column,
          type,
          nullable: nullable === 'Y',
          default: defaultValue?.trim() ?? null,
          primaryKey: primaryKey.includes(column),
        })),
        primaryKey,
        foreignKeys: constraints
          .filter(([type]) => type === 'R')
          .map(([, constraint, column, referenced]) => `${constraint}: ${column} -> constraint ${referenced}`),
        indexes: indexes.map(([index, uniqueness, indexColumns]) => `${index}${uniqueness === 'UNIQUE' ? ' UNIQUE' : ''} (${indexColumns})`),
      };
    });
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.run(options, async (connection) => (await this.rows(connection, numberedPlaceholders(sql, ':'), [...params])) as CellValue[][]);
  }

  connectionLost(): boolean {
    return this.health.broken;
  }

  async ping(options: RunOptions): Promise<string> {
    return this.run(options, async (connection) => {
      const rows = await this.rows(connection, `SELECT banner FROM v$version WHERE ROWNUM = 1`, []);
      return String(rows[0]?.[0] ?? connection.oracleServerVersionString ?? 'Oracle');
    });
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    if (connection) await connection.close().catch(() => undefined);
  }
}
