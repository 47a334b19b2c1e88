import { basename, dirname, resolve } from 'node:path';

/**
 * Files that the duckdb engine reads as views (README "DuckDB: SQL over files"): which DuckDB
 * reader each file type takes, and the view name a file or glob gets. Shared by configuration,
 * the statement check and the driver; loads no native code.
 */

const READERS: readonly (readonly [RegExp, string])[] = [
  [/\.(csv|tsv)(\.gz|\.zst)?$/i, 'read_csv'],
  [/\.(parquet|pq)$/i, 'read_parquet'],
  [/\.(json|jsonl|ndjson)(\.gz|\.zst)?$/i, 'read_json'],
];

/** File extensions that make a `--db` path a DuckDB database file. */
export const DUCKDB_DATABASE_EXTENSION = /\.(duckdb|ddb)$/i;

/** The DuckDB table function that reads this file or glob, or null when its type is not known. */
export function duckdbReaderFor(path: string): string | null {
  return READERS.find(([pattern]) => pattern.test(path))?.[1] ?? null;
}

export function isDuckdbDataFile(path: string): boolean {
  return duckdbReaderFor(path) !== null;
}

export function isGlob(path: string): boolean {
  return /[*?[{]/.test(path);
}

/** A valid SQL identifier from a file name: `sales-2024.csv` -> `sales_2024`; a glob is named after its folder. */
export function defaultViewName(path: string): string {
  let raw: string;
  if (isGlob(path)) {
    const parts = path.split('/');
    const firstWild = parts.findIndex((part) => isGlob(part));
    raw = parts[firstWild - 1] || 'files';
  } else {
    raw = basename(path).replace(/(\.[A-Za-z0-9]+)+$/, '');
  }
  const cleaned = raw.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `t_${cleaned}`;
}

/** The absolute form of a configured path or glob (globs keep their wildcards). */
export function absoluteDataPath(path: string, cwd: string): string {
  return resolve(cwd, path);
}

/** The folder a glob lists (the part before the first wildcard). */
export function globRoot(pattern: string): string {
  const parts = pattern.split('/');
  const firstWild = parts.findIndex((part) => isGlob(part));
  return firstWild < 0 ? dirname(pattern) : parts.slice(0, firstWild).join('/') || '/';
}

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
  'files can be queried with SQL: the duckdb tool reads CSV, Parquet and JSON files as views (list_tables shows them), so join, filter and aggregate them with SQL rather than reading the files';
