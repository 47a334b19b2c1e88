import { resolve } from 'node:path';
import { tokenize, type Token } from './lexer.js';
import { ReadOnlyViolation } from './read-only-violation.js';
import type { DatabaseConfig } from '../types.js';

/**
 * DuckDB's part of the statement check (docs/guide/duckdb-files.md). The shared check
 * (statement-check.ts) refuses every leading keyword but reads, and write words anywhere; this
 * adds what only DuckDB has: PRAGMA and CALL of read-only functions only, functions with side
 * effects, and file-reading functions or file paths in FROM that name a file other than the
 * configured ones. The engine refuses all of these as well (duckdb.ts).
 */

/** Read-only PRAGMAs: each only shows information (DuckDB runs them as SELECTs). */
const READ_PRAGMAS = new Set([
  'collations',
  'database_list',
  'database_size',
  'extension_versions',
  'functions',
  'metadata_info',
  'platform',
  'show',
  'show_databases',
  'show_tables',
  'show_tables_expanded',
  'storage_info',
  'table_info',
  'user_agent',
  'version',
]);

/** Table functions that only read, which `CALL f(...)` may name. */
const READ_TABLE_FUNCTIONS = new Set([
  'generate_series',
  'range',
  'repeat',
  'repeat_row',
  'unnest',
  'json_each',
  'json_tree',
  'summary',
  'icu_calendar_names',
  'pg_timezone_names',
  'test_all_types',
  'sql_auto_complete',
  'histogram',
  'histogram_values',
  'which_secret',
  ...[...READ_PRAGMAS].map((name) => `pragma_${name}`),
]);
const READ_TABLE_FUNCTION_PREFIX = 'duckdb_';

/** Functions with side effects (state, logging, profiling) or that run SQL given as text or read raw memory. */
export const DUCKDB_SIDE_EFFECT_FUNCTIONS = [
  'checkpoint',
  'force_checkpoint',
  'enable_logging',
  'disable_logging',
  'truncate_duckdb_logs',
  'enable_profiling',
  'disable_profiling',
  'enable_peg_parser',
  'disable_peg_parser',
  'check_peg_parser',
  'query',
  'query_table',
  'json_execute_serialized_sql',
  'arrow_scan',
  'arrow_scan_dumb',
  'setseed',
  'load_extension',
];

/** Functions that read files: their path arguments must be configured files. Unknown read_* and parquet_* count too. */
const FILE_FUNCTIONS = new Set(['glob', 'sniff_csv', 'parquet_scan', 'read_duckdb', 'delta_scan', 'iceberg_scan', 'st_read']);
const FILE_FUNCTION_PREFIXES = ['read_', 'parquet_', 'iceberg_', 'delta_'];

function isFileFunction(name: string): boolean {
  return FILE_FUNCTIONS.has(name) || FILE_FUNCTION_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/** `PRAGMA name` or `PRAGMA name('arg')` for a read-only PRAGMA; never `= value`. */
export function checkDuckdbPragma(statement: Token[]): void {
  const nameToken = statement[1];
  const name = nameToken?.kind === 'word' ? nameToken.value.toLowerCase() : '';
  const setsValue = statement.some((token) => token.kind === 'punct' && token.value === '=');
  if (!name || setsValue || !READ_PRAGMAS.has(name)) {
    throw new ReadOnlyViolation(
      `refused: ${name ? `PRAGMA ${name}${setsValue ? ' = ...' : ''}` : 'this PRAGMA'} can change settings or state; read-only PRAGMAs: ` +
        `${[...READ_PRAGMAS].sort().join(', ')} (without "=")`,
    );
  }
}

/** `CALL f(...)` only for a table function that reads. */
export function checkDuckdbCall(statement: Token[]): void {
  const nameToken = statement[1];
  const name = nameToken && (nameToken.kind === 'word' || nameToken.kind === 'quoted') ? nameToken.value.toLowerCase() : '';
  const readOnly = READ_TABLE_FUNCTIONS.has(name) || (name.startsWith(READ_TABLE_FUNCTION_PREFIX) && !DUCKDB_SIDE_EFFECT_FUNCTIONS.includes(name));
  if (!readOnly || statement[2]?.value !== '(') {
    throw new ReadOnlyViolation(
      `refused: CALL ${name || '...'} is not a read-only table function; CALL is allowed for duckdb_*() and pragma_*() information functions and ${[
        ...READ_TABLE_FUNCTIONS,
      ]
        .filter((fn) => !fn.startsWith('pragma_'))
        .sort()
        .join(', ')}; or use SELECT * FROM f(...)`,
    );
  }
}

/** Clause keywords after which a string or quoted name at the same depth is not a table source. */
const NON_FROM_CLAUSES = new Set([
  'SELECT',
  'WHERE',
  'GROUP',
  'HAVING',
  'ORDER',
  'LIMIT',
  'OFFSET',
  'QUALIFY',
  'WINDOW',
  'UNION',
  'EXCEPT',
  'INTERSECT',
  'ON',
  'USING',
  'VALUES',
  'SET',
  'RETURNING',
]);

/**
 * Files a statement reads by name: the path arguments of file-reading functions (`read_csv('x.csv')`,
 * `glob('*')`) and paths in table position (`FROM 'x.csv'`, `FROM "x.parquet"`). Each must be a
 * configured file or glob, exactly as configured or relative to the working directory; a
 * function whose path is not a string literal (or a list of them) is refused, since its file
 * cannot be known before it runs.
 */
export function checkDuckdbFileAccess(sql: string, config: DatabaseConfig, cwd: string = process.cwd()): void {
  const allowed = new Set(Object.values(config.files ?? {}));
  if (config.path) allowed.add(config.path);
  const views = new Set(Object.keys(config.files ?? {}).map((name) => name.toLowerCase()));
  const check = (text: string, where: number): void => {
    if (!allowed.has(resolve(cwd, text))) {
      throw new ReadOnlyViolation(
        `refused: the file ${JSON.stringify(text)} (at character ${where + 1}) is not one of this database's configured ` +
          `files${views.size ? `; query the views instead (${[...views].join(', ')})` : ''}`,
      );
    }
  };
  const tokens = tokenize(sql, 'duckdb');
  const clauses: string[] = [''];
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    const previous = tokens[index - 1];
    if (token.kind === 'punct' && token.value === '(') clauses.push('');
    else if (token.kind === 'punct' && token.value === ')') clauses.pop();
    else if (token.kind === 'word' && (token.value === 'FROM' || token.value === 'JOIN' || NON_FROM_CLAUSES.has(token.value))) {
      clauses[clauses.length - 1] = token.value === 'JOIN' ? 'FROM' : token.value;
    }
    const name = token.kind === 'word' || token.kind === 'quoted' ? token.value.toLowerCase() : '';
    const qualified = previous?.kind === 'punct' && previous.value === '.';
    if (name && !qualified && tokens[index + 1]?.value === '(' && isFileFunction(name)) {
      const paths = literalPaths(tokens, index + 2);
      if (!paths) {
        throw new ReadOnlyViolation(
          `refused: ${name}() (at character ${token.start + 1}) reads files; its first argument must be a configured file as a string ` +
            `literal${views.size ? `, or query the views (${[...views].join(', ')})` : ''}`,
        );
      }
      for (const path of paths) check(path.value, path.start);
      continue;
    }
    const tableSource =
      previous !== undefined &&
      clauses[clauses.length - 1] === 'FROM' &&
      ((previous.kind === 'word' && (previous.value === 'FROM' || previous.value === 'JOIN')) || (previous.kind === 'punct' && previous.value === ','));
    if (!tableSource) continue;
    if (token.kind === 'string') check(token.value, token.start);
    // DuckDB reads `FROM "data.csv"` as the file when no table has that name.
    else if (token.kind === 'quoted' && !views.has(name) && /[./\\*?]/.test(token.value)) check(token.value, token.start);
  }
}

/** The string literals of a first argument `'path'` or `['a', 'b']` starting at `index`; null otherwise. */
function literalPaths(tokens: Token[], index: number): Token[] | null {
  const first = tokens[index];
  const endsArgument = (token: Token | undefined) => token?.kind === 'punct' && (token.value === ',' || token.value === ')');
  if (first?.kind === 'string') return endsArgument(tokens[index + 1]) ? [first] : null;
  if (first?.kind !== 'punct' || first.value !== '[') return null;
  const paths: Token[] = [];
  for (let i = index + 1; i < tokens.length; i += 2) {
    const item = tokens[i];
    const after = tokens[i + 1];
    if (item?.kind !== 'string' || after?.kind !== 'punct') return null;
    paths.push(item);
    if (after.value === ']') return endsArgument(tokens[i + 2]) ? paths : null;
    if (after.value !== ',') return null;
  }
  return null;
}
