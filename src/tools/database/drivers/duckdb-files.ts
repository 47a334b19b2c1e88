/**
 * SQL text the duckdb driver builds over files (docs/guide/duckdb-files.md). Which reader a
 * file type takes and the view name a file or glob gets are configuration: src/config/duckdb.ts.
 */

/** SQL text for a string literal. */
export function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** SQL text for a quoted identifier. */
export function sqlIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** What the default system prompt says when a duckdb database is configured (its {{databases}} line). */
export const DUCKDB_PROMPT_NOTE =
  'files can be queried with SQL: the duckdb tool reads CSV, Parquet and JSON files as views (list_tables shows them), so join, filter and aggregate them ' +
  'with SQL rather than reading the files';
