import { ToolError } from '../../core/types.js';
import type { DatabaseConfig } from '../types.js';

/** Helpers shared by the drivers of server engines (PostgreSQL, MySQL, Oracle, Vertica). */

/** A connection idle longer than this is pinged before reuse (a dead one is reopened). */
export const PING_AFTER_IDLE_MS = 10_000;
/** Rows handed to an export sink at a time. */
export const EXPORT_BATCH_ROWS = 5000;

/** Where and as whom to connect, in the field names pg, mysql2 and vertica-nodejs share. */
export function serverLogin(config: DatabaseConfig): Pick<DatabaseConfig, 'host' | 'port' | 'database' | 'user' | 'password'> {
  return { host: config.host, port: config.port, database: config.database, user: config.user, password: config.password };
}

/**
 * A driver's bare connect-timeout error (pg: "timeout expired", mysql2: "connect ETIMEDOUT")
 * becomes one that says it was the connection, to which host and port, and after how many
 * seconds. Any other error is returned unchanged.
 */
export function explainConnectError(error: unknown, config: DatabaseConfig, defaultPort: number): unknown {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  if (!/timeout expired|connection timeout|ETIMEDOUT/i.test(message) && code !== 'ETIMEDOUT') return error;
  const seconds = config.connectTimeoutMs / 1000;
  return new ToolError(
    `could not connect to ${config.engine} at ${config.host ?? 'localhost'}:${config.port ?? defaultPort}: no answer within ${seconds} s (connect_timeout; ` +
      `raise it with ?connect_timeout=SECONDS or connect_timeout: in the databases YAML)`,
    'connect_timeout',
  );
}

/**
 * Runs `work` and calls `cancel` if the signal aborts meanwhile (the server-side cancel makes
 * `work` fail promptly). A signal already aborted never starts the work.
 */
export async function runCancellable<T>(signal: AbortSignal, cancel: () => Promise<void> | void, work: () => Promise<T>): Promise<T> {
  if (signal.aborted) throw new ToolError('cancelled before the statement started', 'cancelled');
  const onAbort = () => {
    void Promise.resolve()
      .then(cancel)
      .catch(() => undefined);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await work();
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Keeps the latest connection's health: whether it can be reused as is, pinged, or must be reopened. */
export class ConnectionHealth {
  private lastUsed = 0;
  broken = false;

  touch(): void {
    this.lastUsed = Date.now();
  }

  needsPing(): boolean {
    return Date.now() - this.lastUsed > PING_AFTER_IDLE_MS;
  }

  reset(): void {
    this.broken = false;
    this.touch();
  }

  /**
   * Whether an open connection can be reused: not marked broken and, when it has been idle,
   * answering a ping. False means: close it and open a new one.
   */
  async reusable(open: boolean, ping: () => Promise<unknown>): Promise<boolean> {
    if (!open || this.broken) return false;
    if (!this.needsPing()) return true;
    try {
      await ping();
      this.touch();
      return true;
    } catch {
      return false;
    }
  }
}

/** Splits `schema.table` (either part may be quoted with double quotes). */
/** `?` placeholders renumbered as the engine writes them (`$1`, `:1`); quarry's own statements have no `?` in literals. */
export function numberedPlaceholders(sql: string, prefix: '$' | ':'): string {
  let index = 0;
  return sql.replace(/\?/g, () => `${prefix}${++index}`);
}

export function splitQualifiedName(name: string): { schema: string | null; table: string } {
  const parts = name.match(/"(?:[^"]|"")*"|[^.]+/g)?.map((part) => (part.startsWith('"') ? part.slice(1, -1).replaceAll('""', '"') : part.trim())) ?? [name];
  if (parts.length >= 2) return { schema: parts[parts.length - 2]!, table: parts[parts.length - 1]! };
  return { schema: null, table: parts[0] ?? name };
}
