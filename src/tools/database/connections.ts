import type { DatabaseConfig, DatabaseDriver } from './types.js';

/**
 * Open database connections, shared by every database tool of the process (and by delegate
 * children): opened lazily on first use, reused, and closed by closeAllDatabaseConnections(),
 * which the CLI calls at exit. Driver modules are imported only when a database of that engine
 * is first used, so start-up never loads pg, mysql2, oracledb or better-sqlite3.
 */

const drivers = new Map<string, Promise<DatabaseDriver>>();

async function createDriver(config: DatabaseConfig, readOnly: boolean): Promise<DatabaseDriver> {
  switch (config.engine) {
    case 'sqlite':
      return new (await import('./sqlite.js')).SqliteDriver(config, readOnly);
    case 'postgres':
      return new (await import('./postgres.js')).PostgresDriver(config, readOnly);
    case 'mysql':
      return new (await import('./mysql.js')).MysqlDriver(config, readOnly);
    case 'oracle':
      return new (await import('./oracle.js')).OracleDriver(config, readOnly);
    case 'vertica':
      return new (await import('./vertica.js')).VerticaDriver(config, readOnly);
    case 'duckdb':
      return new (await import('./duckdb.js')).DuckdbDriver(config, readOnly);
  }
}

/** The driver for a database in a mode (read-only and mutations connections are kept apart). */
export function driverFor(config: DatabaseConfig, readOnly: boolean): Promise<DatabaseDriver> {
  // Keyed by what is connected to, not only the alias: two workspaces in one process (tests,
  // delegate children with other settings) may use one alias for different databases.
  const target = [config.engine, config.path, JSON.stringify(config.files ?? null), config.host, config.port, config.database, config.user, config.dsn].map((part) => part ?? '').join('\u0000');
  const key = `${config.alias}\u0000${target}\u0000${readOnly ? 'ro' : 'rw'}`;
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
}
