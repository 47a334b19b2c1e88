import { formatCount } from '../core/long-lines.js';
import { MAX_TOOL_OUTPUT_BYTES, sanitizeOutput } from '../core/sanitize.js';
import { displayCellValue } from './cell-values.js';
import { SHEET_KIND_LABELS, sheetHasCells, type ColumnRange, type SheetInfo, type SheetSlice, type SheetSummary } from './model.js';

/**
 * The one formatting path for .xlsx and .xls: a header of column letters, tab-separated rows
 * prefixed with their row number, hidden rows and columns skipped (or marked) and counted in a
 * footer that also says how to read on.
 */

/** Columns shown by one read_sheet call; the rest are counted in the footer. */
export const MAX_COLUMNS = 50;
/** Marks a hidden row or column when show_hidden is on. */
export const HIDDEN_MARK = '[hidden]';

/** A column given as letters ("AY", any case) or a 1-based number ("51"); null when it is neither. */
export function parseColumn(text: string): number | null {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) >= 1 ? Number(trimmed) : null;
  if (!/^[A-Za-z]{1,3}$/.test(trimmed)) return null;
  let column = 0;
  for (const letter of trimmed.toUpperCase()) column = column * 26 + (letter.charCodeAt(0) - 64);
  return column;
}

export function columnLetters(column: number): string {
  let letters = '';
  for (let n = column; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(65 + ((n - 1) % 26)) + letters;
  return letters;
}

function rangeText(range: ColumnRange): string {
  return range.min === range.max ? columnLetters(range.min) : `${columnLetters(range.min)}:${columnLetters(range.max)}`;
}

/** Sorted row numbers as compact ranges: [4, 5, 9] → "4-5, 9". */
export function rowRangesText(rows: number[], maxRanges = 20): string {
  const ranges: string[] = [];
  for (let i = 0; i < rows.length; ) {
    let j = i;
    while (j + 1 < rows.length && rows[j + 1] === rows[j]! + 1) j++;
    ranges.push(j === i ? String(rows[i]) : `${rows[i]}-${rows[j]}`);
    i = j + 1;
  }
  return ranges.length > maxRanges ? `${ranges.slice(0, maxRanges).join(', ')}, …` : ranges.join(', ');
}

const plural = (n: number, word: string) => `${formatCount(n)} ${word}${n === 1 ? '' : 's'}`;

export interface SliceRequest {
  sheet: SheetSummary;
  firstRow: number;
  lastRow: number;
  /** 1-based: the first column of the window of at most MAX_COLUMNS columns shown. */
  firstColumn: number;
  showHidden: boolean;
  date1904: boolean;
}

export interface RenderedSlice {
  text: string;
  metadata: Record<string, unknown>;
}

export function renderSlice(slice: SheetSlice, request: SliceRequest): RenderedSlice {
  const { sheet, firstRow, showHidden } = request;
  const hiddenColumn = (column: number) => slice.hiddenColumns.some((r) => column >= r.min && column <= r.max);
  const lastRowShown = slice.lastRow === null ? request.lastRow : Math.min(request.lastRow, slice.lastRow);
  const moreRows = slice.lastRow === null || lastRowShown < slice.lastRow;
  const hiddenRows = slice.rows.filter((row) => row.hidden).length;
  const rows = showHidden ? slice.rows : slice.rows.filter((row) => !row.hidden);
  let lastColumn = 0;
  for (const row of rows) for (const cell of row.cells) lastColumn = Math.max(lastColumn, cell.column);
  const allColumns = Array.from({ length: lastColumn }, (_, i) => i + 1);
  const hiddenColumns = allColumns.filter(hiddenColumn).length;
  const visibleColumns = (showHidden ? allColumns : allColumns.filter((column) => !hiddenColumn(column))).filter((column) => column >= request.firstColumn);
  const columns = visibleColumns.slice(0, MAX_COLUMNS);
  const cutColumns = visibleColumns.slice(MAX_COLUMNS);

  const lines: string[] = [`sheet "${sheet.name}"${sheet.visibility === 'visible' ? '' : ` (${sheet.visibility})`}`];
  lines.push(['row', ...columns.map((c) => columnLetters(c) + (showHidden && hiddenColumn(c) ? HIDDEN_MARK : ''))].join('\t'));
  const position = new Map(columns.map((column, i) => [column, i]));
  for (const row of rows) {
    const fields = new Array<string>(columns.length).fill('');
    for (const cell of row.cells) {
      const at = position.get(cell.column);
      if (at !== undefined) fields[at] = displayCellValue(cell.value, request.date1904);
    }
    lines.push([`${row.row}${row.hidden ? HIDDEN_MARK : ''}`, ...fields].join('\t'));
  }

  const total = slice.lastRow === null ? "more (the file does not declare the sheet's size; get_info counts its rows)" : formatCount(slice.lastRow);
  const notes: string[] = [`rows ${formatCount(firstRow)}-${formatCount(lastRowShown)} of ${total}`];
  if (rows.length === 0) notes.push('no values in these rows');
  let uncalculated = 0;
  for (const row of rows) for (const cell of row.cells) if (cell.value.kind === 'noCachedValue' && position.has(cell.column)) uncalculated++;
  if (uncalculated > 0) {
    notes.push(`${plural(uncalculated, 'formula')} without a cached value (the file was saved uncalculated: results unknown, not zero)`);
  }
  const hiddenParts: string[] = [];
  if (hiddenRows > 0) hiddenParts.push(plural(hiddenRows, 'hidden row'));
  if (hiddenColumns > 0) hiddenParts.push(plural(hiddenColumns, 'hidden column'));
  if (hiddenParts.length > 0) notes.push(`${hiddenParts.join(', ')} ${showHidden ? `shown, marked ${HIDDEN_MARK}` : 'skipped (show_hidden=true shows them)'}`);
  if (request.firstColumn > 1) notes.push(`columns from ${columnLetters(request.firstColumn)} (start_column)`);
  if (cutColumns.length > 0) {
    notes.push(
      `${plural(cutColumns.length, 'more column')} (${columnLetters(cutColumns[0]!)}-${columnLetters(cutColumns[cutColumns.length - 1]!)}) not shown: at ` +
        `most ${MAX_COLUMNS} columns at a time; call read_excel with start_column=${columnLetters(cutColumns[0]!)}`,
    );
  }
  if (moreRows) notes.push(`more rows: call read_excel with start_row=${lastRowShown + 1}`);
  lines.push(`[${notes.join('; ')}]`);
  return {
    text: lines.join('\n'),
    metadata: {
      sheet: sheet.name,
      startRow: firstRow,
      endRow: lastRowShown,
      totalRows: slice.lastRow,
      rowsShown: rows.length,
      hiddenRows,
      hiddenColumns,
      firstColumn: columnLetters(columns[0] ?? request.firstColumn),
      columnsCut: cutColumns.length,
      moreHint: `call read_excel with start_row=${
        firstRowPastCap(
          lines,
          rows.map((row) => row.row),
        ) ?? firstRow
      } to go on`,
    },
  };
}

/** Room the output cap's own marker takes (its text and the hint). */
const CUT_MARKER_ROOM = 512;

/**
 * The first sheet row whose line the output cap (MAX_TOOL_OUTPUT_BYTES) does not show whole, or
 * null when every row fits: where the next read_sheet call starts. `lines` are the sheet's name,
 * the column letters, then one line per entry of `rows`.
 */
function firstRowPastCap(lines: readonly string[], rows: readonly number[]): number | null {
  let bytes = 0;
  for (let i = 0; i < lines.length; i++) {
    bytes += Buffer.byteLength(sanitizeOutput(lines[i]!), 'utf8') + 1;
    if (bytes > MAX_TOOL_OUTPUT_BYTES - CUT_MARKER_ROOM) return i < 2 ? (rows[0] ?? null) : (rows[i - 2] ?? null);
  }
  return null;
}

/** The used-range column of list_sheets; other kinds than worksheets are named there. */
function usedRangeText(sheet: SheetSummary): string {
  if (!sheetHasCells(sheet.kind)) return `none: a ${SHEET_KIND_LABELS[sheet.kind]} has no cells`;
  const range = sheet.dimension ?? 'unknown (see get_info)';
  return sheet.kind === 'worksheet' ? range : `${range} (${SHEET_KIND_LABELS[sheet.kind]})`;
}

export function renderSheetList(fileName: string, sheets: SheetSummary[], note?: string): string {
  const lines = [`${plural(sheets.length, 'sheet')} in ${fileName}${note ? ` (${note})` : ''}`, '#\tsheet\tvisibility\tused range'];
  for (const sheet of sheets) lines.push(`${sheet.index}\t${sheet.name}\t${sheet.visibility}\t${usedRangeText(sheet)}`);
  return lines.join('\n');
}

export function renderCelllessSheet(sheet: SheetSummary): string {
  return `sheet ${sheet.index} "${sheet.name}" (${sheet.visibility})\n  a ${SHEET_KIND_LABELS[sheet.kind]}: no cells`;
}

export function renderSheetInfo(info: SheetInfo): string {
  const { summary } = info;
  const lines = [`sheet ${summary.index} "${summary.name}" (${summary.visibility})`];
  if (info.rowsWithData === 0) {
    lines.push('  empty: no values');
    return lines.join('\n');
  }
  lines.push(
    `  used range: A1:${columnLetters(info.lastColumn)}${info.lastRow} (${plural(info.lastRow, 'row')}, ${plural(info.lastColumn, 'column')}; ` +
      `${plural(info.rowsWithData, 'row')} with values)`,
  );
  const cutList = info.hiddenRowCount > info.hiddenRows.length ? ', …' : '';
  lines.push(`  hidden rows: ${info.hiddenRowCount === 0 ? 'none' : `${formatCount(info.hiddenRowCount)} (${rowRangesText(info.hiddenRows)}${cutList})`}`);
  const hiddenColumns = info.hiddenColumns.reduce((sum, r) => sum + r.max - r.min + 1, 0);
  lines.push(`  hidden columns: ${hiddenColumns === 0 ? 'none' : `${formatCount(hiddenColumns)} (${info.hiddenColumns.map(rangeText).join(', ')})`}`);
  lines.push(`  merged ranges: ${info.mergedRanges.length === 0 ? 'none' : info.mergedRanges.join(', ')}`);
  if (info.formulas === null) lines.push("  formulas: unknown (the file's formulas could not be parsed; their cached values are shown)");
  else {
    const withoutValue = info.formulasWithoutValue > 0 ? ` (${formatCount(info.formulasWithoutValue)} without a cached value)` : '';
    lines.push(`  formulas: ${info.formulas === 0 ? 'none' : `${formatCount(info.formulas)}${withoutValue}`}`);
  }
  return lines.join('\n');
}
