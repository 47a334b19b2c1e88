/** What SQLite's driver (sqlite.ts) and its export (sqlite-child.ts) share. */

/** Page cache for exports, in SQLite's notation (negative: KiB): SQLite's own default, since an export reads each page once. */
export const EXPORT_CACHE_SIZE = -2000;
export const NOT_READ_ONLY = 'refused by SQLite: this statement is not a read-only query (SQLite reports it can change the database or its attachments)';

/**
 * A statement as the body of a CTE whose columns are renamed c0..cN, followed by `select`,
 * which gets that column list. Duplicate or odd column names then do not matter.
 */
export function wrapStatement(sql: string, columnCount: number, select: (columns: string) => string): string {
  const columns = Array.from({ length: columnCount }, (_, i) => `c${i}`).join(',');
  return `WITH quarry_statement(${columns}) AS (\n${sql}\n) ${select(columns)}`;
}
