import { formatBytes, resolveToolPath, shownPath } from '../core/paths.js';
import { effects } from '../core/effects.js';
import { success, ToolError, type Tool, type ToolContext, type ToolParameters, type ToolResult, type JsonSchema } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';
import { checkCreateOnlyTarget } from '../core/write-policy.js';
import { describeDatabase } from '../../config/databases.js';
import { driverFor, takeTurn } from './connections.js';
import { CsvExportFile, EXPORT_PREVIEW_ROWS, ReplacedTempFile } from './csv.js';
import { DEFAULT_ROW_LIMIT, formatDescription, formatQueryResult, formatTable, MAX_ROW_LIMIT, MORE_ROWS_HINT, plural, tableCutNote } from './format.js';
import { estimateRows, explainStatement, GUARDED_ENGINES } from './catalog/explain.js';
import { formatProfile, PROFILE_DEFAULT_COLUMNS, profileMarkdown, profileQuery, profileTable } from './catalog/profile.js';
import { sampleRowsQuery, targetFor } from './catalog/sampling.js';
import { addCatalogDetails, LIST_TABLES_LIMIT, listTables, SEARCH_LIMIT, SEARCH_OBJECTS, searchCatalog } from './catalog/search.js';
import { withNameSuggestions } from './catalog/names.js';
import { validateStatement } from './catalog/validate.js';
import { cutForDisplay } from './values.js';
import { FIND_VALUES_DESCRIPTION, FIND_VALUES_PARAMETERS, findValuesOperation } from './catalog/find-values-operation.js';
import { midWriteError, writeFileClearly } from '../core/file-write-support.js';
import type { Backend } from '../../backends/types.js';
import { statementToRun, toToolError } from './run-query.js';
import { checkDuckdbFileAccess } from './sql/duckdb-check.js';
import { ENGINES, type DatabaseConfig, type DatabaseDriver, type Engine, type QueryGuard, type RunOptions } from './types.js';

/**
 * The database tools (docs/guide/databases.md): one per engine with configured databases, all with the same
 * parameters. This file owns what is shared (which database, the statement check, limits,
 * formatting, export files, error text); drivers only talk to their engine.
 */

export const DATABASE_OPERATIONS = [
  'query',
  'list_tables',
  'describe',
  'export_query',
  'search',
  'find_values',
  'sample',
  'profile',
  'explain',
  'validate',
] as const;
export type DatabaseOperation = (typeof DATABASE_OPERATIONS)[number];
/** Operations whose "sql" is the model's statement, checked before anything runs. */
const STATEMENT_OPERATIONS: ReadonlySet<DatabaseOperation> = new Set(['query', 'export_query', 'explain', 'profile']);
export const SAMPLE_DEFAULT_ROWS = 10;
export const SAMPLE_MAX_ROWS = 100;

const ENGINE_TITLES: Record<Engine, string> = {
  sqlite: 'SQLite',
  postgres: 'PostgreSQL',
  mysql: 'MySQL/MariaDB',
  oracle: 'Oracle',
  vertica: 'Vertica',
  duckdb: 'DuckDB (SQL over CSV, Parquet and JSON files)',
  clickhouse: 'ClickHouse',
};

function describeTool(engine: Engine, configs: readonly DatabaseConfig[], readOnly: boolean, guard: QueryGuard | null): string {
  const list = configs.map((config) => `- ${config.alias}: ${describeDatabase(config)}`).join('\n');
  const mode = readOnly
    ? 'READ-ONLY: exactly one statement per call, and only reads (SELECT, WITH, VALUES, EXPLAIN, SHOW, ...); writes, DDL, locking clauses, SELECT INTO and ' +
      'functions with side effects are refused, and the engine itself runs the statement in a read-only transaction that is rolled back.'
    : 'MUTATIONS mode: any statement runs and is committed.';
  return (
    `Query a ${ENGINE_TITLES[engine]} database. Databases (the "database" parameter${configs.length === 1 ? ' may be omitted' : ' is required'}):
${list}
Operations:
- query {sql, row_limit?}: runs the SQL and shows the rows as a table, ${DEFAULT_ROW_LIMIT} rows by default, at most ${MAX_ROW_LIMIT}; only limit+1 rows ` +
    `are fetched, and a cut result says "${MORE_ROWS_HINT}". NULL is shown as NULL, newlines as \\n, values over the cell width are cut with "…" (a result of at most 10 rows shows them whole, one field per line); numbers ` +
    `and dates are exact.
- search {pattern, object?}: tables, views and columns whose name or comment contains the pattern (case-insensitive) in every schema, best matches first ` +
    `(exact name, prefix, substring, comment), at most ${SEARCH_LIMIT}; object is table, column or any (default). Start here on a large database.
- find_values {value, match?, table_pattern?, limit?}: ${FIND_VALUES_DESCRIPTION}
- list_tables {table_pattern?}: tables and views with their schema, estimated row count and comment, at most ${LIST_TABLES_LIMIT} with the total; ` +
    `table_pattern is a SQL LIKE pattern (e.g. "order%").
- describe {table_name}: columns with types, nullability, defaults and comments, the primary key, foreign keys (and the tables whose foreign keys reference ` +
    `this one) and indexes (table_name may be schema.table).
- sample {table_name, row_limit?}: a few representative rows (default ${SAMPLE_DEFAULT_ROWS}, at most ${SAMPLE_MAX_ROWS}), chosen without reading the whole ` +
    `table; says how they were chosen.
- profile {table_name | sql, columns?, output_path?}: per column the null share, distinct count, min, max, mean and standard deviation of numbers, text ` +
    `lengths and the top values of low-cardinality columns; large tables are sampled and the output says so; at most ${PROFILE_DEFAULT_COLUMNS} columns ` +
    `unless "columns" names them; within a time budget; output_path writes the whole profile as a new Markdown file.
- explain {sql}: the engine's plan with estimated rows and costs, without running the statement (no ANALYZE). Use it before a query that may scan a big table.
- validate {sql}: checks a statement without running it: the read-only check, the engine's parse and names (unknown ones with suggestions) and the ` +
    `query guard's row estimate, in one call. Use it before a costly query.
- export_query {sql, output_path}: streams the whole result, any number of rows, to a new CSV file (RFC 4180, header row); never overwrites; returns the ` +
    `row count, size, columns and the first ${EXPORT_PREVIEW_ROWS} rows. Use it for results larger than a query shows.
${mode}${
  guard && GUARDED_ENGINES.includes(engine)
    ? `\nQuery guard: before query and export_query the plan's row estimate is checked; a statement expected ` +
      `to read more than ${guard.max_estimated_rows.toLocaleString('en-US')} rows from one table is ` +
      `${guard.action === 'ask' ? 'run only if the user approves' : 'refused'}. Filter on indexed columns, aggregate, or check with explain first.`
    : ''
}`
  );
}

/** What the toolset builds the database tools with, from the profile and the workspace (src/agent/toolset.ts). */
export interface DatabaseToolOptions {
  /** database: readonly: the statement check and a read-only transaction; false under mutations. */
  readOnly: boolean;
  /** The plan's row estimate checked before query and export_query (query_guard), or null when off. */
  queryGuard: QueryGuard | null;
  /** Seconds the profile operation may take in all (profile_budget_seconds). */
  profileBudgetSeconds: number;
  /** Extra directories where export files may go (write_roots). */
  writeRoots: readonly string[];
  /** Where export_query's CSV and profile's Markdown are written: this machine, whatever the backend (docs/guide/daytona.md). */
  exportFiles: Backend;
}

export function createDatabaseTool(engine: Engine, configs: readonly DatabaseConfig[], tool: DatabaseToolOptions): Tool {
  if (configs.length === 0) throw new Error(`no ${engine} databases configured`);
  const { readOnly, queryGuard: guard } = tool;
  const aliases = configs.map((config) => config.alias);
  return defineTool({
    name: engine,
    description: describeTool(engine, configs, readOnly, guard),
    parameters: databaseParameters(configs.length > 1, { type: 'string', enum: aliases, description: `Alias of the database: ${aliases.join(', ')}` }),
    // The aliases are checked by pickDatabase (with the list in its message), so the checker is the build's.
    validationParameters: databaseValidationParameters(configs.length > 1),
    // Reads never change anything; mutations mode can, and export_query writes a file.
    readOnly,
    effects: effects({ reads: true, writesFiles: true, changesDatabase: !readOnly }),
    callIsReadOnly: (args) => readOnly && args.operation !== 'export_query' && !(args.operation === 'profile' && args.output_path !== undefined),
    run: async (args, context) => {
      const config = pickDatabase(engine, configs, args.database);
      // The statement is checked before waiting for the connection or opening it.
      let sql = '';
      try {
        if (STATEMENT_OPERATIONS.has(args.operation) && (args.operation !== 'profile' || args.sql !== undefined))
          sql = statementToRun(requireArg(args, 'sql'), engine, readOnly);
        // DuckDB reads files by name: only the configured ones (duckdb-check.ts).
        if (sql && engine === 'duckdb' && readOnly) checkDuckdbFileAccess(sql, config);
      } catch (error) {
        throw toToolError(error, config, context.signal, args.operation);
      }
      let endTurn: () => void;
      try {
        endTurn = await takeTurn(config, readOnly, context.signal);
      } catch {
        throw new ToolError(`cancelled: the ${engine} ${args.operation} was stopped before it started`, 'cancelled');
      }
      const started = Date.now();
      const timeout = AbortSignal.timeout(config.statementTimeoutMs);
      const options: RunOptions = { readOnly, signal: AbortSignal.any([context.signal, timeout]) };
      try {
        const result = await runOperation(engine, config, options, args, sql, context, tool);
        result.metadata = { database: config.alias, engine, operation: args.operation, durationMs: Date.now() - started, ...result.metadata };
        return result;
      } catch (error) {
        if (timeout.aborted && !context.signal.aborted) {
          throw new ToolError(
            `${engine} ${args.operation} stopped: it ran longer than the statement timeout (${config.statementTimeoutMs / 1000} s)`,
            'timeout',
          );
        }
        throw toToolError(error, config, context.signal, args.operation);
      } finally {
        endTurn();
      }
    },
  });
}

/**
 * The schema, with "database" as given (the aliases, or any string for the build's validators). It
 * is required when several databases are configured; to the handler it stays optional either way
 * (pickDatabase answers a missing one).
 */
function databaseParameters(several: boolean, database: JsonSchema) {
  return toolParameters(
    {
      database: database as { type: 'string' },
      operation: { type: 'string', enum: [...DATABASE_OPERATIONS], description: 'What to do' },
      sql: { type: 'string', description: "One SQL statement (query, export_query, explain, validate; profile of a query's rows)" },
      table_pattern: { type: 'string', description: 'SQL LIKE pattern of table names for list_tables and find_values (default %)' },
      ...FIND_VALUES_PARAMETERS,
      table_name: { type: 'string', description: 'Table or view for describe, sample and profile (schema.table allowed)' },
      pattern: { type: 'string', description: 'Text to find in table, column and comment names for search (case-insensitive, not a LIKE pattern)' },
      object: { type: 'string', enum: [...SEARCH_OBJECTS], description: 'What search looks for: table (tables and views), column or any (default)' },
      columns: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 1000, description: 'Columns to profile (default: the first 50)' },
      output_path: { type: 'string', description: 'New file: the CSV of export_query, or the Markdown of profile (relative to the working directory)' },
      row_limit: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_ROW_LIMIT,
        description:
          `Rows to show for query (default ${DEFAULT_ROW_LIMIT}, at most ${MAX_ROW_LIMIT}) or sample (default ${SAMPLE_DEFAULT_ROWS}, at most ` +
          `${SAMPLE_MAX_ROWS})`,
      },
    },
    (several ? ['database', 'operation'] : ['operation']) as readonly ['operation'],
  );
}
export type DatabaseArgs = ArgsOf<ReturnType<typeof databaseParameters>>;

/** The database tools' schema without their aliases: one of two shapes for every engine and configuration. */
export function databaseValidationParameters(several: boolean): ToolParameters {
  return databaseParameters(several, { type: 'string', description: 'Alias of the database' });
}

function pickDatabase(engine: Engine, configs: readonly DatabaseConfig[], alias: string | undefined): DatabaseConfig {
  if (alias === undefined) {
    if (configs.length === 1) return configs[0]!;
    throw new ToolError(`${engine}: several databases are configured; pass "database" as one of: ${configs.map((c) => c.alias).join(', ')}`, 'ambiguous');
  }
  const config = configs.find((candidate) => candidate.alias === alias);
  if (!config) throw new ToolError(`${engine}: no database "${alias}"; configured: ${configs.map((c) => c.alias).join(', ')}`, 'invalid_arguments');
  return config;
}

function requireArg(args: DatabaseArgs, name: 'sql' | 'table_name' | 'output_path' | 'pattern'): string {
  const value = args[name];
  if (typeof value !== 'string' || value.trim() === '') throw new ToolError(`operation ${args.operation} needs "${name}"`, 'bad_value');
  return value;
}

async function runOperation(
  engine: Engine,
  config: DatabaseConfig,
  options: RunOptions,
  args: DatabaseArgs,
  sql: string,
  context: ToolContext,
  tool: DatabaseToolOptions,
): Promise<ToolResult> {
  const driver = await driverFor(config, options.readOnly);
  await driver.connect(options.signal);
  try {
    return await operate(engine, config, driver, options, args, sql, context, tool);
  } catch (error) {
    // An unknown table, column, schema or function: the names that exist (catalog/names.ts); validate says them itself.
    if (args.operation === 'validate') throw error;
    throw await withNameSuggestions(engine, driver, error, sql || null, options, args.table_name);
  }
}

async function operate(
  engine: Engine,
  config: DatabaseConfig,
  driver: DatabaseDriver,
  options: RunOptions,
  args: DatabaseArgs,
  sql: string,
  context: ToolContext,
  tool: DatabaseToolOptions,
): Promise<ToolResult> {
  const guard = tool.queryGuard;
  if ((args.operation === 'query' || args.operation === 'export_query') && guard && GUARDED_ENGINES.includes(engine)) {
    await checkQueryGuard(engine, driver, sql, guard, options, context);
  }
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
      const listed = await listTables(engine, driver, args.table_pattern, options);
      return success(listed.text, { tables: listed.tables });
    }
    case 'describe': {
      const description = await addCatalogDetails(engine, driver, await driver.describe(requireArg(args, 'table_name'), options), options);
      return success(formatDescription(description), { columns: description.columns.length });
    }
    case 'export_query':
      return exportQuery(driver, sql, requireArg(args, 'output_path'), options, context, tool);
    case 'search': {
      const found = await searchCatalog(engine, driver, requireArg(args, 'pattern'), args.object ?? 'any', options);
      return success(found.text, { matches: found.matches });
    }
    case 'find_values':
      return findValuesOperation(config, driver, args, options, tool.profileBudgetSeconds);
    case 'sample':
      return sampleTable(engine, driver, requireArg(args, 'table_name'), args.row_limit ?? SAMPLE_DEFAULT_ROWS, options);
    case 'profile':
      return profileOperation(engine, driver, args, sql, options, context, tool);
    case 'explain':
      return success(await explainStatement(engine, driver, sql, options), {});
    case 'validate':
      return validateStatement({ engine, config, driver, sql: requireArg(args, 'sql'), guard, options });
  }
}

/** Rows of the table chosen as sampling.ts says, shown as a query's are. */
async function sampleTable(engine: Engine, driver: DatabaseDriver, table: string, rows: number, options: RunOptions): Promise<ToolResult> {
  if (rows > SAMPLE_MAX_ROWS) throw new ToolError(`sample shows at most ${SAMPLE_MAX_ROWS} rows; use query or export_query for more`, 'invalid_arguments');
  const description = await driver.describe(table, options);
  const target = await targetFor(engine, driver, description, options);
  const sample = await sampleRowsQuery(driver, target, rows, options);
  const found = await driver.catalog(sample.sql, sample.params, options);
  const columns = description.columns.map((column) => column.name);
  const shown = found.slice(0, rows).map((row, index) => cutForDisplay(row, index));
  const formatted = formatTable(columns, shown);
  const cut = tableCutNote(formatted, 'sampled row', columns);
  return success(
    `${formatted.text}
(${plural(shown.length, 'row')}: ${sample.method}${cut ? `; ${cut}` : ''})`,
    { rows: shown.length, sampled: sample.sampled, sql: sample.sql },
  );
}

async function profileOperation(
  engine: Engine,
  driver: DatabaseDriver,
  args: DatabaseArgs,
  sql: string,
  options: RunOptions,
  context: ToolContext,
  tool: DatabaseToolOptions,
): Promise<ToolResult> {
  if ((args.table_name === undefined) === (args.sql === undefined))
    throw new ToolError('operation profile needs exactly one of "table_name" or "sql"', 'invalid_arguments');
  // Checked before any work, so a refused path costs nothing.
  const target = args.output_path !== undefined ? await createOnlyTarget(args.output_path, context, tool) : null;
  const input = { engine, driver, options, budgetSeconds: tool.profileBudgetSeconds, ...(args.columns ? { columns: args.columns } : {}) };
  const result =
    args.sql !== undefined ? await profileQuery(input, sql) : await profileTable(input, await driver.describe(requireArg(args, 'table_name'), options));
  const metadata = { columns: result.columns.length, rows: result.rowsRead, sampled: result.sampled !== null };
  if (!target) return success(formatProfile(result), metadata);
  const markdown = Buffer.from(profileMarkdown(result), 'utf8');
  await writeFileClearly({ ...context, backend: target.backend }, target.path, target.shown, markdown, true);
  return success(
    `${formatProfile(result)}
The whole profile (${formatBytes(markdown.length)}) is in ${target.shown}.`,
    { ...metadata, path: target.path },
  );
}

/**
 * Where a database operation's file goes (export_query's CSV, profile's Markdown): a new file,
 * checked by the create-only rules. Database tools run on this machine (docs/guide/daytona.md), so the file is written here whatever the backend.
 */
async function createOnlyTarget(
  outputPath: string,
  context: ToolContext,
  tool: DatabaseToolOptions,
): Promise<{ path: string; shown: string; backend: Backend }> {
  const backend = tool.exportFiles;
  const requested = await resolveToolPath(backend, context.workingDir, outputPath);
  const path = await checkCreateOnlyTarget(backend, requested, { workingDir: context.workingDir, writeRoots: tool.writeRoots });
  return { path, shown: shownPath(context.workingDir, requested), backend };
}

/** The profile's query_guard (docs/guide/databases.md "Knowing the data"): the plan's estimate before the statement runs. */
async function checkQueryGuard(
  engine: Engine,
  driver: DatabaseDriver,
  sql: string,
  guard: QueryGuard,
  options: RunOptions,
  context: ToolContext,
): Promise<void> {
  let estimate;
  try {
    estimate = await estimateRows(engine, driver, sql, options);
  } catch {
    // A statement the engine cannot explain (SHOW, a utility command) reads no table rows to bound.
    return;
  }
  if (!estimate || estimate.rows <= guard.max_estimated_rows) return;
  const reason =
    `the query guard: the plan estimates ${Math.round(estimate.rows).toLocaleString('en-US')} rows ` +
    `read${estimate.table ? ` from ${estimate.table}` : ''}, over this profile's limit of ${guard.max_estimated_rows.toLocaleString('en-US')} ` +
    `(query_guard.max_estimated_rows)`;
  if (guard.action === 'ask' && context.approve) {
    const decision = await context.approve(reason);
    if (decision.approved) return;
    throw new ToolError(decision.message, 'approval_refused');
  }
  const how = guard.action === 'ask' ? "it needs the user's approval and there is no one to ask here; " : '';
  throw new ToolError(
    `refused by ${reason}; ${how}nothing was run. Narrow the statement (filter on indexed columns, aggregate, add LIMIT) and check it with operation explain`,
    'query_guard',
  );
}

async function exportQuery(
  driver: DatabaseDriver,
  sql: string,
  outputPath: string,
  options: RunOptions,
  context: ToolContext,
  tool: DatabaseToolOptions,
): Promise<ToolResult> {
  const { path: target, shown } = await createOnlyTarget(outputPath, context, tool);
  const file = await CsvExportFile.create(target, { showProgress: process.stderr.isTTY === true, onProgress: context.onProgress });
  let summary;
  try {
    await driver.exportCsv(sql, file, options);
    summary = await file.commit();
  } catch (error) {
    await file.discard();
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      throw new ToolError(`refused: ${outputPath} appeared while exporting; nothing was overwritten (choose a new name)`, 'exists');
    if (error instanceof ReplacedTempFile) throw new ToolError(`refused: ${error.message}`, 'refused');
    const failedWrite = midWriteError(error);
    if (failedWrite) throw new ToolError(`could not write ${outputPath}: ${failedWrite.why}; the export stopped and left no file`, failedWrite.kind);
    throw error;
  }
  const table = summary.preview.length ? formatTable(summary.columns, summary.preview) : null;
  const cut = table ? tableCutNote(table, 'preview row', summary.columns) : '';
  const preview = table ? `\nfirst ${plural(summary.preview.length, 'row')}:\n${table.text}${cut ? `\n(${cut})` : ''}` : '';
  return success(
    `Exported ${plural(summary.rows, 'row')} (${formatBytes(summary.bytes)}, ${plural(summary.columns.length, 'column')}) to ${shown}\ncolumns: ` +
      `${summary.columns.join(', ')}${preview}`,
    { path: summary.path, rows: summary.rows, bytes: summary.bytes, columns: summary.columns },
  );
}

/** One tool per engine that has configured databases, in the order of ENGINES. */
export function createDatabaseTools(configs: readonly DatabaseConfig[], tool: DatabaseToolOptions): Tool[] {
  return ENGINES.filter((engine) => configs.some((config) => config.engine === engine)).map((engine) =>
    createDatabaseTool(
      engine,
      configs.filter((config) => config.engine === engine),
      tool,
    ),
  );
}
