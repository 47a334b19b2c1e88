/** Minimal typings for the driver packages that ship none (only what quarry uses). */

declare module 'pg-cursor' {
  import type { Submittable, Connection, FieldDef } from 'pg';
  interface CursorConfig {
    rowMode?: 'array';
    types?: { getTypeParser(oid: number, format?: string): (value: string) => unknown };
  }
  class Cursor implements Submittable {
    constructor(text: string, values?: unknown[], config?: CursorConfig);
    submit(connection: Connection): void;
    read(rows: number, callback: (error: Error | undefined, rows: unknown[][], result: { fields: FieldDef[] }) => void): void;
    close(callback: (error?: Error) => void): void;
  }
  export default Cursor;
}

declare module 'vertica-nodejs' {
  import { EventEmitter } from 'node:events';
  export interface VerticaFieldDef {
    name: string;
  }
  export interface VerticaClientConfig {
    host?: string;
    port?: number;
    database?: string;
    user?: string;
    password?: string;
    connectionTimeoutMillis?: number;
    query_timeout?: number;
    types?: { getTypeParser(oid: number, format?: string): (value: string) => unknown };
  }
  export class Query extends EventEmitter {
    constructor(config: { text: string; rowMode?: 'array' });
  }
  export class Client extends EventEmitter {
    constructor(config: VerticaClientConfig);
    processID: number | null;
    connect(): Promise<void>;
    query(text: string): Promise<{ rows: unknown[][]; fields: VerticaFieldDef[] }>;
    query(config: { text: string; values?: unknown[]; rowMode: 'array' }): Promise<{ rows: unknown[][]; fields: VerticaFieldDef[] }>;
    query(query: Query): Query;
    cancel(client: Client, query: Query): void;
    end(): Promise<void>;
  }
  const vertica: { Client: typeof Client; Query: typeof Query };
  export default vertica;
}

declare module 'oracledb' {
  export const OUT_FORMAT_ARRAY: number;
  export const DB_TYPE_NUMBER: unknown;
  export const DB_TYPE_DATE: unknown;
  export const DB_TYPE_TIMESTAMP: unknown;
  export const DB_TYPE_TIMESTAMP_TZ: unknown;
  export const DB_TYPE_TIMESTAMP_LTZ: unknown;
  export const DB_TYPE_CLOB: unknown;
  export const DB_TYPE_NCLOB: unknown;
  export const STRING: unknown;
  export interface OracleMetadata {
    name: string;
    dbType?: unknown;
  }
  export interface OracleResultSet {
    metaData: OracleMetadata[];
    getRows(count: number): Promise<unknown[][]>;
    close(): Promise<void>;
  }
  export interface OracleExecuteOptions {
    resultSet?: boolean;
    outFormat?: number;
    autoCommit?: boolean;
    fetchTypeHandler?: (metadata: OracleMetadata) => { type: unknown } | undefined;
  }
  export interface OracleConnection {
    callTimeout: number;
    execute(
      sql: string,
      binds?: unknown[],
      options?: OracleExecuteOptions,
    ): Promise<{ rows?: unknown[][]; metaData?: OracleMetadata[]; resultSet?: OracleResultSet; rowsAffected?: number }>;
    commit(): Promise<void>;
    rollback(): Promise<void>;
    break(): Promise<void>;
    ping(): Promise<void>;
    close(): Promise<void>;
    isHealthy(): boolean;
    oracleServerVersionString?: string;
  }
  export function getConnection(config: { user?: string; password?: string; connectString?: string; connectTimeout?: number }): Promise<OracleConnection>;
  export const thin: boolean;
}
