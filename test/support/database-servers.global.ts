import { clickhouseInstalled, startClickhouse } from './clickhouse.js';
import { startMariadb, startPostgres, type RunningServer } from './servers.js';

/**
 * vitest globalSetup: starts PostgreSQL and MariaDB once for the whole suite and stops them at
 * the end. Test files read the URLs from the environment (QUARRY_TEST_PG_URL, ...).
 * When vitest is given file filters and none of them is a database test, the servers are not
 * started, so running one unrelated test file stays fast.
 */

const DATABASE_TEST_FILTER = /database|db|servers/i;

function wantsServers(argv: readonly string[]): boolean {
  const runIndex = argv.findIndex((arg) => arg === 'run' || arg.endsWith('vitest.mjs') || arg.endsWith('/vitest'));
  const filters = argv.slice(runIndex + 1).filter((arg) => !arg.startsWith('-') && arg !== 'run');
  // A folder above the database tests (test/, test/tools) holds them too.
  const holdsDatabaseTests = (filter: string) => 'test/tools/database/'.startsWith(`${filter.replace(/^\.\//, '').replace(/\/+$/, '')}/`);
  return filters.length === 0 || filters.some((filter) => DATABASE_TEST_FILTER.test(filter) || holdsDatabaseTests(filter));
}

export default async function setup(): Promise<() => Promise<void>> {
  if (!wantsServers(process.argv)) return async () => undefined;
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
