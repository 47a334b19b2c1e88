import stringWidth from 'string-width';
import { formatCount } from '../core/long-lines.js';
import { escapeControlChars, MAX_TOOL_OUTPUT_BYTES } from '../core/sanitize.js';
import type { CellValue } from './types.js';
import { KEPT_LONG_VALUE_CHARS, LONG_VALUE_ROWS, shortened, valueToText } from './values.js';

/**
 * Result tables for the model (docs/guide/databases.md): box-drawn like cli-table3's compact style, NULL shown
 * as NULL, newlines, tabs and other control characters escaped so a row stays on one line, long
 * values cut with an ellipsis.
 *
 * Only what fits is formatted: the rows and columns to show are chosen first, within a byte
 * budget, then laid out, so the cost follows what is shown, not the size of the result (a
 * 1,000-column result or 20,000 tables cost what the 64 KiB of output costs). The table is drawn
 * here rather than with cli-table3, whose layout compares every cell with every earlier row
 * (about 0.3 s for the 5,000 cells that fill 64 KiB); display widths come from string-width,
 * so wide characters (CJK, emoji) keep the columns aligned.
 */

export const DEFAULT_ROW_LIMIT = 100;
export const MAX_ROW_LIMIT = 1000;
export const MAX_CELL_CHARS = 200;
export const MORE_ROWS_HINT = 'more rows exist; use COUNT(*) or export_query';
/** Bytes one table may take: the output cap less room for the lines around it. */
export const TABLE_BUDGET_BYTES = MAX_TOOL_OUTPUT_BYTES - 2048;
/** Rows that the choice of columns keeps room for (when the result has that many). */
const ROWS_KEPT_WITH_COLUMNS = 20;
/** Lines of a table besides its rows: top border, header, separator, bottom border. */
const FRAME_LINES = 4;
/** Box-drawing characters take 3 bytes in UTF-8. */
const BOX_BYTES = 3;

export function cellText(value: CellValue): string {
  const text = valueToText(value);
  if (text === null) return 'NULL';
  return shortened(escapedCell(text), MAX_CELL_CHARS);
}

/** A value's text on one line: newlines, tabs and other control characters escaped. */
function escapedCell(text: string): string {
  return escapeControlChars(text.replace(/\r/g, '\\r').replace(/\n/g, '\\n').replace(/\t/g, '\\t'));
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Columns of the terminal a text takes (string-width for anything beyond printable ASCII). */
function displayWidth(text: string): number {
  return PRINTABLE_ASCII.test(text) ? text.length : stringWidth(text);
}

/** One column's measure: its display width and how many more bytes than columns its widest cell takes. */
class ColumnMeasure {
  width = 0;
  extraBytes = 0;
  add(text: string): void {
    const width = displayWidth(text);
    if (width > this.width) this.width = width;
    const extra = Buffer.byteLength(text, 'utf8') - width;
    if (extra > this.extraBytes) this.extraBytes = extra;
  }
  copy(): ColumnMeasure {
    const next = new ColumnMeasure();
    next.width = this.width;
    next.extraBytes = this.extraBytes;
    return next;
  }
  /**
   * Upper bound of the bytes this column adds to a table of `rows` rows: to the header and each
   * row (text, padding, one separator) and to the three rules (box characters, 3 bytes each).
   */
  tableBytes(rows: number): number {
    return (rows + 1) * (this.width + this.extraBytes + 2 + BOX_BYTES) + (FRAME_LINES - 1) * BOX_BYTES * (this.width + 3);
  }
}

/** Bytes of a table's lines besides what its columns add: the first box character and the newline of each line. */
function frameBytes(rows: number): number {
  return (rows + FRAME_LINES) * (BOX_BYTES + 1);
}

export interface FormattedTable {
  text: string;
  /** Rows and columns shown: always a prefix of the result's rows and columns. */
  rows: number;
  columns: number;
  totalRows: number;
  totalColumns: number;
}

function rule(widths: readonly number[], left: string, middle: string, right: string): string {
  return left + widths.map((width) => '─'.repeat(width + 2)).join(middle) + right;
}

function line(cells: readonly string[], widths: readonly number[]): string {
  return `│${cells.map((cell, j) => ` ${cell}${' '.repeat(widths[j]! - displayWidth(cell))} `).join('│')}│`;
}

/**
 * The table of the first rows and columns that fit in `budget` bytes. Columns are chosen so that
 * up to 20 rows fit beside them; then rows are added while the table stays within the budget.
 * Cells beyond the chosen rows and columns are never converted to text.
 */
export function formatTable(columns: readonly string[], rows: readonly CellValue[][], budget = TABLE_BUDGET_BYTES): FormattedTable {
  const head = columns.map((column) => cellText(column));
  const floorRows = Math.min(rows.length, ROWS_KEPT_WITH_COLUMNS);
  const firstTexts: string[][] = Array.from({ length: floorRows }, () => []);
  let bytes = frameBytes(floorRows);
  let shownColumns = 0;
  for (let j = 0; j < head.length; j++) {
    const measure = new ColumnMeasure();
    measure.add(head[j]!);
    const texts = firstTexts.map((_, i) => cellText(rows[i]![j]));
    for (const text of texts) measure.add(text);
    if (j > 0 && bytes + measure.tableBytes(floorRows) > budget) break;
    bytes += measure.tableBytes(floorRows);
    shownColumns++;
    for (const [i, text] of texts.entries()) firstTexts[i]!.push(text);
  }

  // Rows: widths grow only with the rows added; stop before the table would pass the budget.
  let rowMeasures = head.slice(0, shownColumns).map((text) => {
    const measure = new ColumnMeasure();
    measure.add(text);
    return measure;
  });
  const bodyTexts: string[][] = [];
  for (let i = 0; i < rows.length; i++) {
    const texts = i < floorRows ? firstTexts[i]! : rows[i]!.slice(0, shownColumns).map((value) => cellText(value));
    const trial = rowMeasures.map((measure, j) => {
      const next = measure.copy();
      next.add(texts[j]!);
      return next;
    });
    const trialBytes = trial.reduce((sum, measure) => sum + measure.tableBytes(i + 1), frameBytes(i + 1));
    if (i > 0 && trialBytes > budget) break;
    rowMeasures = trial;
    bodyTexts.push(texts);
  }

  const widths = rowMeasures.map((measure) => measure.width);
  const out = [rule(widths, '┌', '┬', '┐'), line(head.slice(0, shownColumns), widths)];
  if (bodyTexts.length > 0) out.push(rule(widths, '├', '┼', '┤'));
  for (const texts of bodyTexts) out.push(line(texts, widths));
  out.push(rule(widths, '└', '┴', '┘'));
  return { text: out.join('\n'), rows: bodyTexts.length, columns: shownColumns, totalRows: rows.length, totalColumns: columns.length };
}

export function plural(count: number, word: string): string {
  return `${formatCount(count)} ${word}${count === 1 ? '' : 's'}`;
}

function count(value: number): string {
  return formatCount(value);
}

/** What a table left out, or '' when it shows everything: "showing 20 of 101 rows and 230 of 1,000 columns". */
export function tableCutNote(table: FormattedTable, rowWord: string, columnNames: readonly string[]): string {
  const parts: string[] = [];
  if (table.rows < table.totalRows) parts.push(`${count(table.rows)} of ${plural(table.totalRows, rowWord)}`);
  if (table.columns < table.totalColumns) {
    const firstLeft = columnNames[table.columns] ?? '';
    parts.push(`${count(table.columns)} of ${plural(table.totalColumns, 'column')} (columns from ${JSON.stringify(cellText(firstLeft))} on are not shown)`);
  }
  if (parts.length === 0) return '';
  return `showing ${parts.join(' and ')}: the output is limited to ${Math.round(MAX_TOOL_OUTPUT_BYTES / 1024)} KiB`;
}

/** Names of the columns with a value the table cuts (longer than MAX_CELL_CHARS once escaped), among the shown rows and columns. */
function columnsWithCutValues(columns: readonly string[], rows: readonly CellValue[][], shownRows: number, shownColumns: number): string[] {
  const cut: string[] = [];
  for (let j = 0; j < shownColumns; j++) {
    for (let i = 0; i < shownRows; i++) {
      const text = valueToText(rows[i]![j]);
      if (text !== null && text.length > MAX_CELL_CHARS / 2 && escapedCell(text).length > MAX_CELL_CHARS) {
        cut.push(columns[j]!);
        break;
      }
    }
  }
  return cut;
}

/**
 * A few rows with long values, one field per line as psql's \x shows them: each value whole (its
 * newlines kept, other control characters escaped) up to the output budget; a value that does
 * not fit is cut on a character boundary and says so.
 */
export function formatVertical(columns: readonly string[], rows: readonly CellValue[][], budget = TABLE_BUDGET_BYTES): { text: string; cut: string[] } {
  const names = columns.map((column) => cellText(column));
  const width = Math.max(...names.map(displayWidth));
  const label = (name: string) => `${name}${' '.repeat(width - displayWidth(name))} | `;
  const indent = `${' '.repeat(width)} | `;
  const texts = rows.map((row) =>
    names.map((_, j) => {
      const raw = valueToText(row[j]);
      return {
        text: raw === null ? 'NULL' : escapeControlChars(raw.replace(/\r\n/g, '\n').replace(/\t/g, '\\t')),
        kept: raw !== null && raw.length >= KEPT_LONG_VALUE_CHARS,
      };
    }),
  );
  // Room for the values: the budget less the labels, headers and notes; shared so that one huge
  // value cannot crowd out the others (each value gets at most `cap` bytes).
  const frame = rows.length * (names.reduce((sum, name) => sum + Buffer.byteLength(label(name)) + 96, 0) + 40);
  const cap = fairCap(
    texts.flat().map((entry) => Buffer.byteLength(entry.text)),
    Math.max(0, budget - frame),
  );
  const out: string[] = [];
  const cut: string[] = [];
  for (const [i, row] of texts.entries()) {
    out.push(`-[ row ${i + 1} of ${rows.length} ]${'-'.repeat(Math.max(4, width - 8))}`);
    for (const [j, entry] of row.entries()) {
      let { text } = entry;
      let note = entry.kept ? ` … [longer than the ${KEPT_LONG_VALUE_CHARS.toLocaleString('en-US')} characters kept]` : '';
      if (Buffer.byteLength(text) > cap) {
        const shown = truncateToBytes(text, cap);
        note = ` … [cut: ${shown.length.toLocaleString('en-US')} of ${text.length.toLocaleString('en-US')}${entry.kept ? '+' : ''} characters shown]`;
        text = shown;
      }
      if (note) cut.push(`${names[j]} (row ${i + 1})`);
      out.push(
        `${text}${note}`
          .split('\n')
          .map((piece, index) => `${index === 0 ? label(names[j]!) : indent}${piece}`)
          .join('\n'),
      );
    }
  }
  return { text: out.join('\n'), cut };
}

/** The largest per-value size `cap` such that the values, each cut to `cap`, fit in `budget` (water-filling). */
function fairCap(sizes: readonly number[], budget: number): number {
  const sorted = [...sizes].sort((a, b) => a - b);
  let remaining = budget;
  for (const [index, size] of sorted.entries()) {
    const share = Math.floor(remaining / (sorted.length - index));
    if (size > share) return share;
    remaining -= size;
  }
  return Number.POSITIVE_INFINITY;
}

/** The longest prefix of `text` within `limit` UTF-8 bytes, on a character boundary. */
function truncateToBytes(text: string, limit: number): string {
  if (Buffer.byteLength(text) <= limit) return text;
  let low = 0;
  let high = Math.min(text.length, limit);
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (Buffer.byteLength(text.slice(0, middle)) <= limit) low = middle;
    else high = middle - 1;
  }
  const code = text.charCodeAt(low - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? low - 1 : low);
}

/** The hint after a result whose long values were cut: which columns, and how to get all of them. */
function cutValuesHint(columns: readonly string[]): string {
  return (
    `(values over ${MAX_CELL_CHARS} characters are cut with "…" in ${columns.map((name) => JSON.stringify(name)).join(', ')}; ` +
    `a result of at most ${LONG_VALUE_ROWS} rows shows them whole: select fewer rows, or use export_query for every value in full)`
  );
}

/** A query's output: the table, then a line that says how many rows and whether more exist. */
export function formatQueryResult(columns: readonly string[], rows: readonly CellValue[][], more: boolean, limit: number, affectedRows?: number): string {
  if (columns.length === 0) return `The statement ran and returned no rows${affectedRows !== undefined ? ` (${plural(affectedRows, 'row')} affected)` : ''}.`;
  const summary = more ? `(showing the first ${plural(rows.length, 'row')}; limit ${limit}) ${MORE_ROWS_HINT}` : `(${plural(rows.length, 'row')})`;
  const table = formatTable(columns, rows);
  const cutValues = columnsWithCutValues(columns, rows, table.rows, table.columns);
  // One or a few rows whose values the table would cut: shown whole, one field per line.
  if (cutValues.length > 0 && rows.length <= LONG_VALUE_ROWS) {
    const vertical = formatVertical(columns, rows);
    const hint = vertical.cut.length
      ? `\n(cut to fit the ${Math.round(MAX_TOOL_OUTPUT_BYTES / 1024)} KiB output: ${vertical.cut.join(', ')}; read the rest with substr()/substring() ` +
        'in pieces, or export_query writes every value in full)'
      : '';
    return `${vertical.text}${hint}\n${summary}`;
  }
  const cut = tableCutNote(table, 'fetched row', columns);
  const valuesHint = cutValues.length ? `\n${cutValuesHint(cutValues)}` : '';
  if (!cut) return `${table.text}${valuesHint}\n${summary}`;
  const hints = [];
  if (table.columns < table.totalColumns) hints.push('name fewer columns in the SELECT');
  if (table.rows < table.totalRows) hints.push('lower row_limit or page with OFFSET');
  hints.push('export_query writes the whole result');
  return `${table.text}\n(${cut}; ${hints.join(', ')})${valuesHint}\n${summary}`;
}

export interface DescribedTable {
  schema?: string | null;
  name: string;
  columns: readonly { name: string; type: string; nullable: boolean; default: CellValue; primaryKey: boolean; comment?: string | null }[];
  primaryKey: readonly string[];
  foreignKeys: readonly string[];
  indexes: readonly string[];
  comment?: string | null;
  referencedBy?: readonly string[];
  notes?: readonly string[];
}

/** Bytes the keys may take before the column table (they come first, so they are never cut by it). */
const DESCRIBE_KEYS_BUDGET = 16 * 1024;

/** describe: the name, the keys and indexes (before the bulk), then as many columns as fit. */
export function formatDescription(description: DescribedTable): string {
  const name = description.schema ? `${description.schema}.${description.name}` : description.name;
  const listed = (items: readonly string[]) => {
    if (items.length === 0) return '(none)';
    const lines: string[] = [];
    let bytes = 0;
    for (const item of items) {
      bytes += Buffer.byteLength(item, 'utf8') + 3;
      if (bytes > DESCRIBE_KEYS_BUDGET / 2 && lines.length > 0) {
        lines.push(`… ${count(items.length - lines.length)} more not shown`);
        break;
      }
      lines.push(item);
    }
    return `\n  ${lines.join('\n  ')}`;
  };
  const keys = [
    `${name}: ${plural(description.columns.length, 'column')}`,
    ...(description.comment ? [`comment: ${cellText(description.comment)}`] : []),
    ...(description.notes ?? []),
    `primary key: ${description.primaryKey.length ? description.primaryKey.join(', ') : '(none)'}`,
    `foreign keys: ${listed(description.foreignKeys)}`,
    ...(description.referencedBy ? [`referenced by: ${listed(description.referencedBy)}`] : []),
    `indexes: ${listed(description.indexes)}`,
  ].join('\n');
  const columnNames = description.columns.map((column) => column.name);
  const comments = description.columns.some((column) => column.comment);
  const table = formatTable(
    ['column', 'type', 'nullable', 'default', 'pk', ...(comments ? ['comment'] : [])],
    description.columns.map((column) => [
      column.name,
      column.type,
      column.nullable ? 'yes' : 'no',
      column.default,
      column.primaryKey ? 'yes' : '',
      ...(comments ? [column.comment ?? ''] : []),
    ]),
    TABLE_BUDGET_BYTES - Buffer.byteLength(keys, 'utf8'),
  );
  const cut =
    table.rows < table.totalRows
      ? `\n(showing ${count(table.rows)} of ${plural(table.totalRows, 'column')}: the output is limited to ${Math.round(MAX_TOOL_OUTPUT_BYTES / 1024)} KiB; ` +
        `${count(table.totalRows - table.rows)} more from ${JSON.stringify(cellText(columnNames[table.rows]!))} on; query the catalogue ` +
        `(information_schema.columns or the engine's equivalent) for the rest)`
      : '';
  return `${keys}\n${table.text}${cut}`;
}
