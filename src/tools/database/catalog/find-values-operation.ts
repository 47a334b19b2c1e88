import { success, ToolError, type ToolResult } from '../../core/types.js';
import type { DatabaseConfig, DatabaseDriver, RunOptions } from '../types.js';
import { tablePatternSuggestions } from './names.js';
import {
  checkValue,
  FIND_VALUES_DEFAULT_LIMIT,
  FIND_VALUES_MATCHES,
  FIND_VALUES_MAX_LIMIT,
  findValues,
  formatFindValues,
  SHOWN_VALUES,
  type FindValuesMatch,
  type FindValuesRequest,
} from './find-values.js';

/** find_values as a database tool operation (src/tools/database/tool.ts): its schema, its line of the tool's description, its arguments. */

export const FIND_VALUES_DESCRIPTION =
  `which tables and columns hold a value the question mentions (a name, code, city, number or date), before filtering on it: match exact ` +
  `(default, any case), prefix, contains or fuzzy (typos); ranked exact, then other case, then partial, frequent values first; one row per column ` +
  `with the matching rows and, for partial matches, up to ${SHOWN_VALUES} matching values; text columns always, number and date columns when the value ` +
  `is one; says which tables it searched and which it did not (time budget; table_pattern narrows); at most ${FIND_VALUES_MAX_LIMIT} rows (limit, ` +
  `default ${FIND_VALUES_DEFAULT_LIMIT}).`;

export const FIND_VALUES_PARAMETERS = {
  value: { type: 'string', description: 'The value to look for with find_values (text, number or date as written in the question)' },
  match: { type: 'string', enum: [...FIND_VALUES_MATCHES], description: 'How find_values compares: exact (default, any case), prefix, contains or fuzzy' },
  limit: { type: 'integer', minimum: 1, maximum: FIND_VALUES_MAX_LIMIT, description: `Columns find_values shows (default ${FIND_VALUES_DEFAULT_LIMIT})` },
} as const;

interface FindValuesArgs {
  value?: string;
  match?: FindValuesMatch;
  table_pattern?: string;
  limit?: number;
}

export function findValuesRequest(args: FindValuesArgs): FindValuesRequest {
  const value = checkValue(args.value);
  if (args.table_pattern?.includes('\0')) throw new ToolError('find_values: table_pattern contains a NUL character', 'invalid_arguments');
  return {
    value,
    match: args.match ?? 'exact',
    ...(args.table_pattern !== undefined ? { tablePattern: args.table_pattern } : {}),
    limit: args.limit ?? FIND_VALUES_DEFAULT_LIMIT,
  };
}

export async function findValuesOperation(
  config: DatabaseConfig,
  driver: DatabaseDriver,
  args: FindValuesArgs,
  options: RunOptions,
  budgetSeconds: number,
): Promise<ToolResult> {
  const request = findValuesRequest(args);
  // The value index is read with better-sqlite3: loaded on the first find_values, not with the tool (start-up, and installs without it).
  const { indexLookup } = await import('../values-index/lookup.js');
  const result = await findValues({ engine: config.engine, driver, options, budgetSeconds }, request, indexLookup(config, driver, options, request));
  let text = formatFindValues(result, request, budgetSeconds);
  if (result.coverage.tables === 0 && request.tablePattern) {
    const suggestions = await tablePatternSuggestions(config.engine, driver, request.tablePattern, options);
    // "No table matches "custmers" with a column that could hold …; did you mean customers?"
    if (suggestions) text = text.replace(/\.(\n|$)/, `${suggestions}$1`);
  }
  return success(text, {
    matches: result.matches.length,
    columns: result.matches.slice(0, request.limit).map((match) => `${match.schema ? `${match.schema}.` : ''}${match.table}.${match.column}`),
    tablesSearched: result.coverage.tablesSearched + result.coverage.fromIndex,
    tables: result.coverage.tables,
    notReached: result.coverage.notReached.length,
    skipped: result.coverage.skipped.length,
  });
}
