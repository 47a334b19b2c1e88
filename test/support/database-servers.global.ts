import { clickhouseInstalled, startClickhouse } from './clickhouse.js';
import { startMariadb, startPostgres, type RunningServer } from './servers.js';

/**
 * vitest globalSetup of the `database` project (vitest.config.ts): starts PostgreSQL and MariaDB
 * once for the run and stops them at the end. Test files read the URLs from the environment
 * (QUARRY_TEST_PG_URL, ...). vitest runs it only when the run holds a file of that project
 * (test/support/tiers.ts), so running one unrelated test file starts no server.
 */

export default async function setup(): Promise<() => Promise<void>> {
  const started: RunningServer[] = [];
  try {
    const postgres = await startPostgres();
    started.push(postgres);
    process.env.QUARRY_TEST_PG_URL = postgres.url;
    process.env.QUARRY_TEST_PG_ADMIN_URL = postgres.adminUrl;
    const mariadb = await startMariadb();
    started.push(mariadb);
    process.env.QUARRY_TEST_MYSQL_URL = mariadb.url;
    process.env.QUARRY_TEST_MYSQL_ADMIN_URL = mariadb.adminUrl;
    // ClickHouse where Debian's clickhouse-server is installed (.ci/run installs it); its tests say when it is not.
    if (clickhouseInstalled()) {
      const clickhouse = await startClickhouse();
      started.push(clickhouse);
      process.env.QUARRY_TEST_CLICKHOUSE_URL = clickhouse.url;
      process.env.QUARRY_TEST_CLICKHOUSE_ADMIN_URL = clickhouse.adminUrl;
      process.env.QUARRY_TEST_CLICKHOUSE_TCP_PORT = String(clickhouse.tcpPort);
    }
  } catch (error) {
    await Promise.allSettled(started.map((server) => server.stop()));
    throw new Error(`could not start the test database servers: ${(error as Error).message}`);
  }
  return async () => {
    await Promise.allSettled(started.map((server) => server.stop()));
  };
}
