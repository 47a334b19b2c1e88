import vertica, { type Client, type VerticaClientConfig } from 'vertica-nodejs';
import { ToolError } from '../../core/types.js';
import { ConnectionHealth, EXPORT_BATCH_ROWS, runCancellable, serverLogin, splitQualifiedName } from './server-support.js';
import { cutForDisplay } from '../values.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * Vertica through vertica-nodejs (a fork of node-postgres). Read-only mode: the session's
 * transactions default to READ ONLY and every statement runs inside `START TRANSACTION READ
 * ONLY` ... `ROLLBACK`; the statement check refuses Vertica's meta-functions, which commit on
 * their own. Rows arrive one by one; a query stops after limit+1 rows by cancelling the
 * statement at the server. Values arrive as the server's text (exact).
 */

const RAW_TYPES = { getTypeParser: () => (value: string) => value };
export const VERTICA_BEGIN_READ_ONLY = 'START TRANSACTION READ ONLY';
export const VERTICA_SESSION_READ_ONLY = 'SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY';

export type VerticaClientFactory = (config: VerticaClientConfig) => Client;

export class VerticaDriver implements DatabaseDriver {
  readonly engine = 'vertica' as const;
  private client: Client | null = null;
  private readonly health = new ConnectionHealth();

  /** `createClient` is replaceable so that tests can record what would reach the server. */
  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
    private readonly createClient: VerticaClientFactory = (clientConfig) => new vertica.Client(clientConfig),
  ) {}

  private clientConfig(): VerticaClientConfig {
    return {
      ...serverLogin(this.config),
      connectionTimeoutMillis: this.config.connectTimeoutMs,
      types: RAW_TYPES,
    };
  }

  async connect(signal: AbortSignal): Promise<void> {
    const current = this.client;
    if (await this.health.reusable(current !== null, () => current!.query('SELECT 1'))) return;
    await this.close();
    const client = this.createClient(this.clientConfig());
    client.on('error', () => {
      this.health.broken = true;
    });
    await runCancellable(
      signal,
      () => client.end(),
      () => client.connect(),
    );
    await client.query(`SET SESSION RUNTIMECAP '${Math.ceil(this.config.statementTimeoutMs / 1000)} seconds'`);
    if (this.readOnly) await client.query(VERTICA_SESSION_READ_ONLY);
    this.client = client;
    this.health.reset();
  }

  private async run<T>(options: RunOptions, work: (client: Client) => Promise<T>): Promise<T> {
    const client = this.client;
    if (!client) throw new Error('not connected');
    this.health.touch();
    if (options.readOnly) await client.query(VERTICA_BEGIN_READ_ONLY);
    try {
      const result = await work(client);
      if (!options.readOnly) await client.query('COMMIT');
      return result;
    } finally {
      if (options.readOnly) {
        await client.query('ROLLBACK').catch(() => {
          this.health.broken = true;
        });
      }
    }
  }

  /** Streams rows to `onRow`; returning false stops the statement (cancelled at the server). */
  private stream(client: Client, sql: string, signal: AbortSignal, onFields: (columns: string[]) => void, onRow: (row: CellValue[]) => boolean): Promise<void> {
    const query = new vertica.Query({ text: sql, rowMode: 'array' });
    const cancel = () => this.createClient(this.clientConfig()).cancel(client, query);
    return runCancellable(
      signal,
      cancel,
      () =>
        new Promise<void>((resolve, reject) => {
          let stopped = false;
          let sawFields = false;
          query.on('row', (row: CellValue[], result: { fields?: { name: string }[] }) => {
            if (stopped) return;
            if (!sawFields) {
              sawFields = true;
              onFields((result.fields ?? []).map((field) => field.name));
            }
            if (!onRow(row)) {
              stopped = true;
              cancel();
              resolve();
            }
          });
          query.on('error', (error: Error) => (stopped ? undefined : reject(error)));
          query.on('end', (result: { fields?: { name: string }[] } | undefined) => {
            if (!sawFields) onFields((result?.fields ?? []).map((field) => field.name));
            resolve();
          });
          client.query(query);
        }),
    );
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    return this.run(options, async (client) => {
      let columns: string[] = [];
      const rows: CellValue[][] = [];
      let more = false;
      await this.stream(
        client,
        sql,
        options.signal,
        (names) => (columns = names),
        (row) => {
          if (rows.length === limit) {
            more = true;
            return false;
          }
          rows.push(cutForDisplay(row, rows.length));
          return true;
        },
      );
      return { columns, rows, more };
    });
  }

  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    await this.run(options, async (client) => {
      let batch: CellValue[][] = [];
      let writing = Promise.resolve();
      await this.stream(
        client,
        sql,
        options.signal,
        (columns) => sink.setColumns(columns),
        (row) => {
          batch.push(row);
          if (batch.length === EXPORT_BATCH_ROWS) {
            const full = batch;
            batch = [];
            writing = writing.then(() => sink.writeRows(full));
          }
          return true;
        },
      );
      await writing;
      await sink.writeRows(batch);
    });
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    const { schema, table: name } = splitQualifiedName(table);
    return this.run(options, async (client) => {
      const columns = (
        await client.query({
          text: `SELECT table_schema, column_name, data_type, is_nullable::varchar, column_default FROM v_catalog.columns
               WHERE table_schema = COALESCE(?, CURRENT_SCHEMA()) AND table_name = ? ORDER BY ordinal_position`,
          values: [schema, name],
          rowMode: 'array',
        })
      ).rows as [string, string, string, string, string | null][];
      if (!columns[0]) throw new ToolError(`no such table or view: ${table}; use operation list_tables to see the tables`, 'not_found');
      const actualSchema = columns[0][0];
      const constraints = (
        await client.query({
          text: `SELECT constraint_type, constraint_name, column_name, reference_table_name, reference_column_name FROM v_catalog.constraint_columns
               WHERE table_schema = ? AND table_name = ? AND constraint_type IN ('p', 'f') ORDER BY constraint_name`,
          values: [actualSchema, name],
          rowMode: 'array',
        })
      ).rows as [string, string, string, string | null, string | null][];
      const primaryKey = constraints.filter(([type]) => type === 'p').map(([, , column]) => column);
      return {
        schema: actualSchema,
        name,
        columns: columns.map(([, column, type, nullable, defaultValue]) => ({
          name: column,
          type,
          nullable: nullable === 'true',
          default: defaultValue,
          primaryKey: primaryKey.includes(column),
        })),
        primaryKey,
        foreignKeys: constraints
          .filter(([type]) => type === 'f')
          .map(([, constraint, column, refTable, refColumn]) => `${constraint}: ${column} -> ${refTable}(${refColumn})`),
        // Vertica stores data in projections, not indexes.
        indexes: [],
      };
    });
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.run(options, async (client) => (await client.query({ text: sql, values: [...params], rowMode: 'array' })).rows as CellValue[][]);
  }

  connectionLost(): boolean {
    return this.health.broken;
  }

  async ping(options: RunOptions): Promise<string> {
    return this.run(options, async (client) => {
      const result = await client.query({ text: 'SELECT version()', rowMode: 'array' });
      return String(result.rows[0]?.[0] ?? 'Vertica');
    });
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }
}
