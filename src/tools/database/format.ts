import Table from 'cli-table3';
import type { CellValue } from './types.js';
import { valueToText } from './values.js';

/**
 * Result tables for the model (SPEC §5.4): ASCII with cli-table3, NULL shown as NULL, newlines
 * and tabs escaped so a row stays on one line, long values cut with an ellipsis.
 */

export const DEFAULT_ROW_LIMIT = 100;
export const MAX_ROW_LIMIT = 1000;
export const MAX_CELL_CHARS = 200;
export const MORE_ROWS_HINT = 'more rows exist; use COUNT(*) or export_query';

export function cellText(value: CellValue): string {
  const text = valueToText(value);
  if (text === null) return 'NULL';
  const escaped = text.replace(/\r/g, '\\r').replace(/\n/g, '\\n').replace(/\t/g, '\\t');
  if (escaped.length <= MAX_CELL_CHARS) return escaped;
  return `${escaped.slice(0, MAX_CELL_CHARS - 1)}…`;
}

export function formatTable(columns: readonly string[], rows: readonly CellValue[][]): string {
  const table = new Table({
    head: columns.map((column) => cellText(column)),
    style: { head: [], border: [], compact: true },
    wordWrap: false,
  });
  for (const row of rows) table.push(row.map(cellText));
  return table.toString();
}

export function plural(count: number, word: string): string {
  return `${count.toLocaleString('en-US')} ${word}${count === 1 ? '' : 's'}`;
}

/** A query's output: the table, then a line that says how many rows and whether more exist. */
export function formatQueryResult(columns: readonly string[], rows: readonly CellValue[][], more: boolean, limit: number, affectedRows?: number): string {
  if (columns.length === 0) return `The statement ran and returned no rows${affectedRows !== undefined ? ` (${plural(affectedRows, 'row')} affected)` : ''}.`;
  const table = formatTable(columns, rows);
  const summary = more
    ? `(showing the first ${plural(rows.length, 'row')}; limit ${limit}) ${MORE_ROWS_HINT}`
    : `(${plural(rows.length, 'row')})`;
  return `${table}\n${summary}`;
}
