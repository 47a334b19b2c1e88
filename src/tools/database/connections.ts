import { importOptional } from '../core/optional-packages.js';
import { closeAllTunnels } from './ssh-tunnel.js';
import type { DatabaseConfig, DatabaseDriver, QueryResult } from './types.js';

/**
 * Open database connections, shared by every database tool of the process (and by delegate
 * children): opened lazily on first use, reused, and closed by closeAllDatabaseConnections(),
 * which the CLI calls at exit. Driver modules are imported only when a database of that engine
 * is first used, so start-up never loads pg, mysql2, oracledb or better-sqlite3; every driver but
 * SQLite's is an optional package (docs/guide/install.md), and a missing one is one line saying how
 * to install it.
 */

const drivers = new Map<string, Promise<DatabaseDriver>>();
/** The last call queued on each driver: calls on one connection run one after another. */
const turns = new Map<string, Promise<void>>();

async function createDriver(config: DatabaseConfig, readOnly: boolean): Promise<DatabaseDriver> {
  // Behind an ssh: block, the engine's driver connects to the tunnel's loopback port (docs/guide/databases.md "SSH tunnels").
  if (config.ssh) return (await import('./drivers/tunneled.js')).tunneledDriver(config, (direct) => createDriver(direct, readOnly));
  switch (config.engine) {
    case 'sqlite':
      return new (await import('./drivers/sqlite-process.js')).SqliteProcessDriver(config, readOnly);
    case 'postgres':
      return new (await importOptional(['pg', 'pg-cursor'], loadPostgresDriver)).PostgresDriver(config, readOnly);
    case 'mysql':
      return new (await importOptional(['mysql2'], () => import('./drivers/mysql.js'))).MysqlDriver(config, readOnly);
    case 'oracle':
      return new (await importOptional(['oracledb'], () => import('./drivers/oracle.js'))).OracleDriver(config, readOnly);
    case 'vertica':
      return new (await importOptional(['vertica-nodejs'], () => import('./drivers/vertica.js'))).VerticaDriver(config, readOnly);
    case 'duckdb':
      return new (await importOptional(['@duckdb/node-api', '@duckdb/node-bindings'], () => import('./drivers/duckdb.js'))).DuckdbDriver(config, readOnly);
    case 'clickhouse':
      return new (await importOptional(['@clickhouse/client'], () => import('./drivers/clickhouse.js'))).ClickhouseDriver(config, readOnly);
  }
}

/**
 * pg asks when it is loaded whether it runs on Cloudflare Workers; without a global `navigator`
 * (Node 20 has none) it constructs a `Response`, which loads Node's whole fetch implementation
 * (about 35 ms). A `navigator` that says Node.js, for the moment pg loads, answers it directly.
 */
async function loadPostgresDriver(): Promise<typeof import('./drivers/postgres.js')> {
  if ('navigator' in globalThis) return import('./drivers/postgres.js');
  Object.defineProperty(globalThis, 'navigator', { value: { userAgent: `Node.js/${process.versions.node}` }, configurable: true });
  try {
    return await import('./drivers/postgres.js');
  } finally {
    delete (globalThis as { navigator?: unknown }).navigator;
  }
}

function driverKey(config: DatabaseConfig, readOnly: boolean): string {
  // Keyed by what is connected to, not only the alias: two workspaces in one process (tests,
  // delegate children with other settings) may use one alias for different databases.
  const target = [
    config.engine,
    config.path,
    JSON.stringify(config.files ?? null),
    JSON.stringify(config.fileOptions ?? null),
    config.host,
    config.port,
    config.database,
    config.user,
    config.dsn,
    JSON.stringify(config.ssh ?? null),
  ]
    .map((part) => part ?? '')
    .join('\u0000');
  return `${config.alias}\u0000${target}\u0000${readOnly ? 'ro' : 'rw'}`;
}

/**
 * Waits for this call's turn on the database's connection and returns the function that ends
 * the turn. A driver holds one connection with one transaction at a time, so calls made
 * together (several tool calls in one model message run at once) take turns: two connect()s
 * racing leaked a client and kept the process alive, and two statements shared one
 * transaction. Each call's statement timeout starts when its turn does (docs/guide/databases.md).
 * An abort while waiting gives up the place in the queue.
 */
export async function takeTurn(config: DatabaseConfig, readOnly: boolean, signal: AbortSignal): Promise<() => void> {
  const key = driverKey(config, readOnly);
  const previous = turns.get(key) ?? Promise.resolve();
  let end!: () => void;
  const mine = new Promise<void>((resolve) => {
    end = resolve;
  });
  const tail = previous.then(() => mine);
  turns.set(key, tail);
  const release = (): void => {
    end();
    if (turns.get(key) === tail) turns.delete(key);
  };
  if (signal.aborted) {
    // Still in the chain, so later calls keep their order; this one gives its turn away at once.
    release();
    throw signal.reason;
  }
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      previous,
      new Promise<never>((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } catch (error) {
    release();
    throw error;
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
  return release;
}

/** The driver for a database in a mode (read-only and mutations connections are kept apart). */
export function driverFor(config: DatabaseConfig, readOnly: boolean): Promise<DatabaseDriver> {
  const key = driverKey(config, readOnly);
  let driver = drivers.get(key);
  if (!driver) {
    driver = createDriver(config, readOnly);
    drivers.set(key, driver);
    driver.catch(() => drivers.delete(key));
  }
  return driver;
}

/** Closes every open connection; safe to call more than once. */
export async function closeAllDatabaseConnections(): Promise<void> {
  const open = [...drivers.values()];
  drivers.clear();
  await Promise.allSettled(open.map(async (driver) => (await driver).close()));
  await closeAllTunnels();
}

/**
 * One already-checked statement on a database, in its turn on the connection, with the
 * database's statement timeout: for callers outside the database tools (the chart tool, eval's
 * scoring), so they queue with the tools' own calls instead of racing them.
 */
export async function queryInTurn(config: DatabaseConfig, statement: string, limit: number, readOnly: boolean, signal: AbortSignal): Promise<QueryResult> {
  const endTurn = await takeTurn(config, readOnly, signal);
  try {
    const options = { readOnly, signal: AbortSignal.any([signal, AbortSignal.timeout(config.statementTimeoutMs)]) };
    const driver = await driverFor(config, readOnly);
    await driver.connect(options.signal);
    return await driver.query(statement, limit, options);
  } finally {
    endTurn();
  }
}
