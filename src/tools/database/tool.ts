import { LocalBackend } from '../../backends/local.js';
import type { Profile } from '../../profiles/schema.js';
import { formatBytes, resolveToolPath, shownPath } from '../paths.js';
import { success, ToolError, type Tool, type ToolContext, type ToolParameters, type ToolResult } from '../types.js';
import { checkCreateOnlyTarget } from '../write-policy.js';
import { describeDatabase } from './config.js';
import { driverFor, takeTurn } from './connections.js';
import { CsvExportFile, EXPORT_PREVIEW_ROWS, ExportRefused } from './csv.js';
import { DEFAULT_ROW_LIMIT, formatDescription, formatQueryResult, formatTable, formatTableList, MAX_ROW_LIMIT, MORE_ROWS_HINT, plural, tableCutNote } from './format.js';
import { scrubSecrets } from './secrets.js';
import { checkReadOnlyStatement, ReadOnlyViolation } from './statement-check.js';
import { checkDuckdbFileAccess } from './duckdb-check.js';
import { ENGINES, type DatabaseConfig, type DatabaseDriver, type Engine, type RunOptions } from './types.js';

/**
 * The database tools (README "Databases"): one per engine with configured databases, all with the same
 * parameters. This file owns what is shared (which database, the statement check, limits,
 * formatting, export files, error text); drivers only talk to their engine.
 */

export const DATABASE_OPERATIONS = ['query', 'list_tables', 'describe', 'export_query'] as const;
export type DatabaseOperation = (typeof DATABASE_OPERATIONS)[number];

export type DatabaseArgs = {
  database?: string;
  operation: DatabaseOperation;
  sql?: string;
  table_pattern?: string;
  table_name?: string;
  output_path?: string;
  row_limit?: number;
};

const ENGINE_TITLES: Record<Engine, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL', mysql: 'MySQL/MariaDB', oracle: 'Oracle', vertica: 'Vertica', duckdb: 'DuckDB (SQL over CSV, Parquet and JSON files)' };

function describeTool(engine: Engine, configs: readonly DatabaseConfig[], readOnly: boolean): string {
  const list = configs.map((config) => `- ${config.alias}: ${describeDatabase(config)}`).join('\n');
  const mode = readOnly
    ? 'READ-ONLY: exactly one statement per call, and only reads (SELECT, WITH, VALUES, EXPLAIN, SHOW, ...); writes, DDL, locking clauses, SELECT INTO and functions with side effects are refused, and the engine itself runs the statement in a read-only transaction that is rolled back.'
    : 'MUTATIONS mode: any statement runs and is committed.';
  return `Query a ${ENGINE_TITLES[engine]} database. Databases (the "database" parameter${configs.length === 1 ? ' may be omitted' : ' is required'}):
${list}
Operations:
- query {sql, row_limit?}: runs the SQL and shows the rows as a table, ${DEFAULT_ROW_LIMIT} rows by default, at most ${MAX_ROW_LIMIT}; only limit+1 rows are fetched, and a cut result says "${MORE_ROWS_HINT}". NULL is shown as NULL, newlines as \\n, values over the cell width are cut with "…"; numbers and dates are exact.
- list_tables {table_pattern?}: tables and views with their schema; table_pattern is a SQL LIKE pattern (e.g. "order%").
- describe {table_name}: columns with types, nullability and defaults, the primary key, foreign keys and indexes (table_name may be schema.table).
- export_query {sql, output_path}: streams the whole result, any number of rows, to a new CSV file (RFC 4180, header row); never overwrites; returns the row count, size, columns and the first ${EXPORT_PREVIEW_ROWS} rows. Use it for results larger than a query shows.
${mode}`;
}

export function createDatabaseTool(engine: Engine, configs: readonly DatabaseConfig[], profile: Profile): Tool<DatabaseArgs> {
  if (configs.length === 0) throw new Error(`no ${engine} databases configured`);
  const readOnly = profile.database !== 'mutations';
  const aliases = configs.map((config) => config.alias);
  return {
    name: engine,
    description: describeTool(engine, configs, readOnly),
    parameters: databaseParameters(configs.length > 1, { type: 'string', enum: aliases, description: `Alias of the database: ${aliases.join(', ')}` }),
    // The aliases are checked by pickDatabase (with the list in its message), so the checker is the build's.
    validationParameters: databaseValidationParameters(configs.length > 1),
    // Reads never change anything; mutations mode can, and export_query writes a file.
    readOnly,
    callIsReadOnly: (args) => readOnly && args.operation !== 'export_query',
    run: async (args, context) => {
      const config = pickDatabase(engine, configs, args.database);
      // The statement is checked before waiting for the connection or opening it.
      let sql = '';
      try {
        if (args.operation === 'query' || args.operation === 'export_query') sql = statementToRun(requireArg(args, 'sql'), engine, readOnly);
        // DuckDB reads files by name: only the configured ones (duckdb-check.ts).
        if (sql && engine === 'duckdb' && readOnly) checkDuckdbFileAccess(sql, config);
      } catch (error) {
        throw toToolError(error, config, context.signal, args.operation);
      }
      let endTurn: () => void;
      try {
        endTurn = await takeTurn(config, readOnly, context.signal);
      } catch {
        throw new ToolError(`cancelled: the ${engine} ${args.operation} was stopped before it started`, { error: 'cancelled' });
      }
      const started = Date.now();
      const timeout = AbortSignal.timeout(config.statementTimeoutMs);
      const options: RunOptions = { readOnly, signal: AbortSignal.any([context.signal, timeout]) };
      try {
        const result = await runOperation(engine, config, options, args, sql, context);
        result.metadata = { database: config.alias, engine, operation: args.operation, durationMs: Date.now() - started, ...result.metadata };
        return result;
      } catch (error) {
        if (timeout.aborted && !context.signal.aborted) {
          throw new ToolError(`${engine} ${args.operation} stopped: it ran longer than the statement timeout (${config.statementTimeoutMs / 1000} s)`, { error: 'timeout' });
        }
        throw toToolError(error, config, context.signal, args.operation);
      } finally {
        endTurn();
      }
    },
  };
}

function databaseParameters(several: boolean, database: ToolParameters['properties'][string]): ToolParameters {
  return {
    type: 'object',
    properties: {
      database,
      operation: { type: 'string', enum: [...DATABASE_OPERATIONS], description: 'What to do' },
      sql: { type: 'string', description: 'One SQL statement (query, export_query)' },
      table_pattern: { type: 'string', description: 'SQL LIKE pattern for list_tables (default %)' },
      table_name: { type: 'string', description: 'Table or view for describe (schema.table allowed)' },
      output_path: { type: 'string', description: 'New CSV file for export_query (relative to the working directory)' },
      row_limit: { type: 'integer', minimum: 1, maximum: MAX_ROW_LIMIT, description: `Rows to show for query (default ${DEFAULT_ROW_LIMIT}, at most ${MAX_ROW_LIMIT})` },
    },
    required: several ? ['database', 'operation'] : ['operation'],
    additionalProperties: false,
  };
}

/** The database tools' schema without their aliases: one of two shapes for every engine and configuration. */
export function databaseValidationParameters(several: boolean): ToolParameters {
  return databaseParameters(several, { type: 'string', description: 'Alias of the database' });
}

function pickDatabase(engine: Engine, configs: readonly DatabaseConfig[], alias: string | undefined): DatabaseConfig {
  if (alias === undefined) {
    if (configs.length === 1) return configs[0]!;
    throw new ToolError(`${engine}: several databases are configured; pass "database" as one of: ${configs.map((c) => c.alias).join(', ')}`);
  }
  const config = configs.find((candidate) => candidate.alias === alias);
  if (!config) throw new ToolError(`${engine}: no database "${alias}"; configured: ${configs.map((c) => c.alias).join(', ')}`, { error: 'invalid_arguments' });
  return config;
}

function requireArg(args: DatabaseArgs, name: 'sql' | 'table_name' | 'output_path'): string {
  const value = args[name];
  if (typeof value !== 'string' || value.trim() === '') throw new ToolError(`operation ${args.operation} needs "${name}"`);
  return value;
}

/** The statement as the driver will run it: checked in read-only mode, trimmed of trailing semicolons otherwise. */
export function statementToRun(sql: string, engine: Engine, readOnly: boolean): string {
  if (readOnly) return checkReadOnlyStatement(sql, engine).sql;
  return sql.trim().replace(/;+\s*$/, '');
}

async function runOperation(engine: Engine, config: DatabaseConfig, options: RunOptions, args: DatabaseArgs, sql: string, context: ToolContext): Promise<ToolResult> {
  const driver = await driverFor(config, options.readOnly);
  await driver.connect(options.signal);
  switch (args.operation) {
    case 'query': {
      const limit = args.row_limit ?? DEFAULT_ROW_LIMIT;
      const result = await driver.query(sql, limit, options);
      return success(formatQueryResult(result.columns, result.rows, result.more, limit, result.affectedRows), {
        rows: result.rows.length,
        more: result.more,
        columns: result.columns,
        ...(result.more ? { moreHint: MORE_ROWS_HINT } : {}),
      });
    }
    case 'list_tables': {
      const tables = await driver.listTables(args.table_pattern, options);
      if (tables.length === 0) return success(`No tables or views${args.table_pattern ? ` match ${JSON.stringify(args.table_pattern)}` : ''}.`, { tables: 0 });
      return success(formatTableList(tables, args.table_pattern), { tables: tables.length });
    }
    case 'describe':
      return describeTable(driver, requireArg(args, 'table_name'), options);
    case 'export_query':
      return exportQuery(driver, sql, requireArg(args, 'output_path'), options, context);
  }
}

async function describeTable(driver: DatabaseDriver, table: string, options: RunOptions): Promise<ToolResult> {
  const description = await driver.describe(table, options);
  return success(formatDescription(description), { columns: description.columns.length });
}

async function exportQuery(driver: DatabaseDriver, sql: string, outputPath: string, options: RunOptions, context: ToolContext): Promise<ToolResult> {
  // Database tools run on this machine (README "Daytona backend"), so the file is written here whatever the backend.
  const backend = context.backend.name === 'local' ? context.backend : new LocalBackend();
  const requested = await resolveToolPath(backend, context.workingDir, outputPath);
  const target = await checkCreateOnlyTarget(backend, requested, { workingDir: context.workingDir, writeRoots: context.profile.write_roots });
  const file = await CsvExportFile.create(target, { showProgress: process.stderr.isTTY === true, onProgress: context.onProgress });
  let summary;
  try {
    await driver.exportCsv(sql, file, options);
    summary = await file.commit();
  } catch (error) {
    await file.discard();
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new ToolError(`refused: ${outputPath} appeared while exporting; nothing was overwritten (choose a new name)`);
    throw error;
  }
  const shown = shownPath(context.workingDir, requested);
  const table = summary.preview.length ? formatTable(summary.columns, summary.preview) : null;
  const cut = table ? tableCutNote(table, 'preview row', summary.columns) : '';
  const preview = table ? `\nfirst ${plural(summary.preview.length, 'row')}:\n${table.text}${cut ? `\n(${cut})` : ''}` : '';
  return success(
    `Exported ${plural(summary.rows, 'row')} (${formatBytes(summary.bytes)}, ${plural(summary.columns.length, 'column')}) to ${shown}\ncolumns: ${summary.columns.join(', ')}${preview}`,
    { path: summary.path, rows: summary.rows, bytes: summary.bytes, columns: summary.columns },
  );
}

/** Every failure becomes a model-readable error without passwords (driver text included). */
export function toToolError(error: unknown, config: DatabaseConfig, signal: AbortSignal, operation: string): ToolError {
  if (error instanceof ToolError) return new ToolError(scrubSecrets(error.message, config), error.metadata);
  if (error instanceof ExportRefused) return new ToolError(`refused: ${error.message}`, { error: 'exists' });
  if (error instanceof ReadOnlyViolation) return new ToolError(error.message, { error: 'read_only_violation' });
  if (signal.aborted) return new ToolError(`cancelled: the ${config.engine} ${operation} was stopped`, { error: 'cancelled' });
  const message = error instanceof Error ? error.message : String(error);
  return new ToolError(`${config.engine} error (${config.alias}): ${scrubSecrets(message, config)}`, { error: 'database_error' });
}

/** One tool per engine that has configured databases, in the order of ENGINES. */
export function createDatabaseTools(configs: readonly DatabaseConfig[], profile: Profile): Tool<DatabaseArgs>[] {
  return ENGINES.filter((engine) => configs.some((config) => config.engine === engine)).map((engine) =>
    createDatabaseTool(engine, configs.filter((config) => config.engine === engine), profile),
  );
}
