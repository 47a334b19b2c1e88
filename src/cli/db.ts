import type { Argv } from 'yargs';
import { readConfigFile } from '../config/config-file.js';
import { describeDatabase, loadDatabaseConfigs } from '../config/databases.js';
import { configFileLocation } from '../config/home.js';
import type { DatabaseConfig } from '../tools/database/types.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../errors.js';
import { databaseOptions, withDatabaseOptions } from './options.js';
import { DEFAULT_MAX_DISTINCT } from '../tools/database/values-index/limits.js';

/**
 * `quarry db list` (configured databases, never with passwords) and `quarry db check [ALIAS]`
 * (opens a read-only connection to each and runs a trivial query).
 */

interface DbArgv {
  db?: string[];
  databases?: string;
  config?: string;
  format: 'text' | 'json';
}

function loadConfigs(argv: DbArgv, listing: boolean): DatabaseConfig[] {
  const cwd = process.cwd();
  const config = readConfigFile(configFileLocation(argv.config, process.env, cwd));
  return loadDatabaseConfigs({ ...databaseOptions(argv), config, passwordsOptional: listing, env: process.env, cwd });
}

function listDatabases(configs: DatabaseConfig[], format: 'text' | 'json'): void {
  if (format === 'json') {
    const entries = configs.map((config) => ({
      alias: config.alias,
      engine: config.engine,
      target: describeDatabase(config),
      source: config.source,
      connect_timeout_s: config.connectTimeoutMs / 1000,
      statement_timeout_s: config.statementTimeoutMs / 1000,
    }));
    process.stdout.write(`${JSON.stringify({ databases: entries }, null, 2)}\n`);
    return;
  }
  if (configs.length === 0) {
    process.stdout.write(
      'No databases configured. Use --db [ALIAS=]TARGET, --databases FILE, SQLITE_DB/POSTGRES_*/MYSQL_*/ORACLE_*/VERTICA_*/CLICKHOUSE_* or databases: in config.yaml.\n',
    );
    return;
  }
  const width = Math.max(...configs.map((config) => config.alias.length));
  for (const config of configs) {
    process.stdout.write(`${config.alias.padEnd(width)}  ${describeDatabase(config)}  (from ${config.source})\n`);
  }
}

async function checkDatabase(config: DatabaseConfig): Promise<{ ok: boolean; text: string }> {
  const [{ driverFor }, { scrubSecrets }, { connectionErrorText }] = await Promise.all([
    import('../tools/database/connections.js'),
    import('../tools/database/secrets.js'),
    import('../tools/database/connection-errors.js'),
  ]);
  if (config.ssh) {
    // The tunnel first, on a line of its own: then a failure says which of the two failed.
    const tunnel = await checkTunnel(config);
    (tunnel.ok ? process.stdout : process.stderr).write(`${scrubSecrets(tunnel.text, config)}\n`);
    if (!tunnel.ok) return { ok: false, text: `err ${config.alias}: database not checked (its SSH tunnel failed)` };
  }
  const started = Date.now();
  const signal = AbortSignal.timeout(config.connectTimeoutMs + config.statementTimeoutMs);
  try {
    const driver = await driverFor(config, true);
    await driver.connect(signal);
    const version = await driver.ping({ readOnly: true, signal });
    return { ok: true, text: `ok  ${config.alias}: ${version.split('\n')[0]} (${Date.now() - started} ms)` };
  } catch (error) {
    const message = connectionErrorText(error) ?? (error instanceof Error ? error.message : String(error));
    return { ok: false, text: `err ${config.alias}: ${scrubSecrets(message, config)}` };
  }
}

/** `quarry db index`: builds the value index, with a progress bar on a terminal. */
async function indexDatabase(config: DatabaseConfig, tables: string | undefined, maxDistinct: number | undefined): Promise<number> {
  if (maxDistinct !== undefined && (!Number.isInteger(maxDistinct) || maxDistinct < 1)) throw new UsageError('--max-distinct must be a positive integer');
  const [{ driverFor, closeAllDatabaseConnections }, { scrubSecrets }, { buildValueIndex }] = await Promise.all([
    import('../tools/database/connections.js'),
    import('../tools/database/secrets.js'),
    import('../tools/database/values-index/build.js'),
  ]);
  const tty = Boolean(process.stderr.isTTY);
  const signal = new AbortController().signal;
  try {
    const driver = await driverFor(config, true);
    await driver.connect(signal);
    const summary = await buildValueIndex(
      config,
      driver,
      { readOnly: true, signal },
      {
        ...(tables !== undefined ? { tablePattern: tables } : {}),
        ...(maxDistinct !== undefined ? { maxDistinct } : {}),
        onProgress: (done, total, table) => {
          if (!tty) return;
          const width = 30;
          const filled = Math.round((done / Math.max(1, total)) * width);
          process.stderr.write(
            `\r\x1b[K[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} tables${table ? `  ${table}` : ''}${done === total ? '\n' : ''}`,
          );
        },
      },
    );
    process.stdout.write(
      `Indexed ${config.alias}: ${summary.tables} tables, ${summary.columns} text columns (${summary.overLimit} with more distinct values than the limit, ` +
        `left to the scan), ${summary.values.toLocaleString('en-US')} values from ${summary.rows.toLocaleString('en-US')} rows in ${summary.seconds.toFixed(1)} s\n` +
        `${summary.skipped.length ? `not indexed (could not be read): ${summary.skipped.map((table) => `${table.table} (${table.reason})`).join(', ')}\n` : ''}` +
        `${summary.path}\n`,
    );
    return EXIT_OK;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`quarry: db index ${config.alias} failed: ${scrubSecrets(message, config).split('\n')[0]}\n`);
    return EXIT_FAILED;
  } finally {
    await closeAllDatabaseConnections();
  }
}

/** Which optional packages (drivers, ssh2, charts) this installation can load (docs/guide/install.md). */
async function installedPackagesLine(): Promise<string> {
  const { optionalPackageVersions } = await import('../tools/core/optional-packages.js');
  const packages = optionalPackageVersions();
  const installed = packages.filter((entry) => entry.version !== null).map((entry) => `${entry.name} ${entry.version}`);
  const missing = packages.filter((entry) => entry.version === null).map((entry) => entry.name);
  return `packages: ${installed.join(', ') || '(none)'}${missing.length ? `; not installed: ${missing.join(', ')} (npm install -g NAME adds one)` : ''}`;
}

async function checkTunnel(config: DatabaseConfig): Promise<{ ok: boolean; text: string }> {
  const { tunnelFor } = await import('../tools/database/ssh-tunnel.js');
  const tunnel = tunnelFor(config.ssh!);
  const started = Date.now();
  try {
    await tunnel.open(config.connectTimeoutMs);
    return { ok: true, text: `ok  ${config.alias}: tunnel ${tunnel.name} (${Date.now() - started} ms)` };
  } catch (error) {
    return { ok: false, text: `err ${config.alias}: tunnel: ${error instanceof Error ? error.message : String(error)}` };
  }
}

export function registerDbCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command('db', 'Configured databases: db list, db check [ALIAS], db index ALIAS', (y) =>
    withDatabaseOptions(y)
      .option('config', { type: 'string', describe: 'Config file with databases: (default: $QUARRY_HOME/config.yaml)' })
      .option('format', { choices: ['text', 'json'] as const, default: 'text' as const })
      .command(
        'list',
        'List configured databases (passwords are never shown)',
        () => undefined,
        (argv) => {
          listDatabases(loadConfigs(argv as unknown as DbArgv, true), (argv as unknown as DbArgv).format);
          setExit(EXIT_OK);
        },
      )
      .command(
        'check [alias]',
        'Connect to each database (or one) and run a trivial read-only query',
        (c) => c.positional('alias', { type: 'string' }),
        async (argv) => {
          const configs = loadConfigs(argv as unknown as DbArgv, false);
          const alias = argv.alias as string | undefined;
          const selected = alias ? configs.filter((config) => config.alias === alias) : configs;
          if (alias && selected.length === 0) throw new UsageError(`no database "${alias}"; configured: ${configs.map((c) => c.alias).join(', ') || '(none)'}`);
          if (selected.length === 0) throw new UsageError('no databases configured (see quarry db list)');
          process.stdout.write(`${await installedPackagesLine()}\n`);
          let failed = false;
          try {
            for (const config of selected) {
              const result = await checkDatabase(config);
              failed ||= !result.ok;
              (result.ok ? process.stdout : process.stderr).write(`${result.text}\n`);
            }
          } finally {
            await (await import('../tools/database/connections.js')).closeAllDatabaseConnections();
          }
          setExit(failed ? EXIT_FAILED : EXIT_OK);
        },
      )
      .command(
        'index <alias>',
        'Build the value index that find_values looks values up in (docs/guide/databases.md "Knowing the data")',
        (c) =>
          c
            .positional('alias', { type: 'string', demandOption: true })
            .option('tables', { type: 'string', describe: 'SQL LIKE pattern of the tables to index (default: all)' })
            .option('max-distinct', {
              type: 'number',
              describe: `Distinct values kept per column; columns with more keep none (default ${DEFAULT_MAX_DISTINCT})`,
            }),
        async (argv) => {
          const configs = loadConfigs(argv as unknown as DbArgv, false);
          const config = configs.find((candidate) => candidate.alias === argv.alias);
          if (!config) throw new UsageError(`no database "${argv.alias}"; configured: ${configs.map((c) => c.alias).join(', ') || '(none)'}`);
          setExit(await indexDatabase(config, argv.tables as string | undefined, argv['max-distinct'] as number | undefined));
        },
      )
      .demandCommand(1, 'name a subcommand: quarry db list | quarry db check [ALIAS] | quarry db index ALIAS'),
  );
}
