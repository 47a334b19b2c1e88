/**
 * What the .xlsx and .xls readers hand to the one formatting path (format.ts): sheets, rows of
 * typed cell values, hidden column ranges, per-sheet facts. Rows and columns are 1-based.
 */

export type Visibility = 'visible' | 'hidden' | 'veryHidden';

/** What a sheet is: chart and dialog sheets hold no cells; macro sheets (Excel 4 macros) hold cells like worksheets. */
export type SheetKind = 'worksheet' | 'chartsheet' | 'dialogsheet' | 'macrosheet';

export const SHEET_KIND_LABELS: Record<SheetKind, string> = {
  worksheet: 'worksheet',
  chartsheet: 'chart sheet',
  dialogsheet: 'dialog sheet',
  macrosheet: 'macro sheet',
};

export const sheetHasCells = (kind: SheetKind) => kind === 'worksheet' || kind === 'macrosheet';

export interface SheetSummary {
  /** 1-based position in the workbook. */
  index: number;
  name: string;
  visibility: Visibility;
  kind: SheetKind;
  /** The used range the file declares (e.g. "A1:H10"), or null when it declares none. */
  dimension: string | null;
}

export type CellValue =
  /** `format` is the cell's number format code ("General" when it has none): dates and percentages. */
  | { kind: 'number'; value: number; format: string }
  | { kind: 'string'; text: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'error'; text: string }
  /** A date stored as ISO text (SpreadsheetML t="d"). */
  | { kind: 'isoDate'; text: string }
  /** A formula whose result was never calculated and saved. */
  | { kind: 'noCachedValue'; formula: string };

export interface SheetCell {
  column: number;
  value: CellValue;
}

export interface SheetRow {
  row: number;
  hidden: boolean;
  cells: SheetCell[];
}

/** An inclusive range of column numbers, e.g. D:E is {min: 4, max: 5}. */
export interface ColumnRange {
  min: number;
  max: number;
}

/** The rows of one requested range, hidden ones included and flagged. */
export interface SheetSlice {
  rows: SheetRow[];
  hiddenColumns: ColumnRange[];
  /**
   * The sheet's last row (declared or seen), for "rows 1-500 of N"; null when the file declares no
   * size and reading stopped after the range (counting would mean reading the whole sheet).
   */
  lastRow: number | null;
  /** The last row seen (the end of the range or of the sheet). */
  lastRowSeen: number;
}

export interface SheetInfo {
  summary: SheetSummary;
  /** Rows holding at least one value; the last such row and column. */
  rowsWithData: number;
  lastRow: number;
  lastColumn: number;
  /** Hidden rows that hold data, as sorted row numbers. */
  hiddenRows: number[];
  /** All hidden rows with data; hiddenRows may list only the first MAX_HIDDEN_ROWS_KEPT of them. */
  hiddenRowCount: number;
  /** Hidden columns within A..lastColumn. */
  hiddenColumns: ColumnRange[];
  mergedRanges: string[];
  /** null when the file's formulas could not be parsed (the cached values still were). */
  formulas: number | null;
  formulasWithoutValue: number;
}

export interface OpenWorkbook {
  /** xlsx (zip), xls (BIFF), or a text file named .xls: SpreadsheetML 2003, HTML, delimited text. */
  format: 'xlsx' | 'xls' | 'xml2003' | 'html' | 'csv';
  /** Said with the sheet list when the file is not what its name says. */
  note?: string;
  sheets: SheetSummary[];
  /** Dates count from 1904-01-01 (old Mac workbooks) instead of 1900. */
  date1904: boolean;
  /** Fills in each sheet's declared dimension where reading it needs extra work (xlsx). */
  loadDimensions(): Promise<void>;
  readRows(sheet: SheetSummary, firstRow: number, lastRow: number): Promise<SheetSlice>;
  inspect(sheet: SheetSummary): Promise<SheetInfo>;
}

/** Hidden row numbers get_info keeps (it shows 20 ranges of them): a sheet of millions of hidden rows stays small in memory. */
export const MAX_HIDDEN_ROWS_KEPT = 100_000;

/** A merged range, 1-based and inclusive. */
export interface MergedRange {
  firstRow: number;
  firstColumn: number;
  lastRow: number;
  lastColumn: number;
}

/**
 * Rows without the values stored under a merge outside its top-left cell: Excel shows only the
 * top-left value across the merged range and hides the others (Apache POI and other generators
 * write such values; Excel itself clears them when it merges).
 */
export function withoutHiddenMergeValues<Row extends { row: number; cells: Array<{ column: number }> }>(rows: Row[], merges: MergedRange[]): Row[] {
  if (merges.length === 0 || rows.length === 0) return rows;
  const first = rows[0]!.row;
  const last = rows[rows.length - 1]!.row;
  const byRow = new Map<number, MergedRange[]>();
  for (const merge of merges) {
    for (let row = Math.max(first, merge.firstRow); row <= Math.min(last, merge.lastRow); row++) {
      const list = byRow.get(row);
      if (list) list.push(merge);
      else byRow.set(row, [merge]);
    }
  }
  if (byRow.size === 0) return rows;
  return rows
    .map((row) => {
      const covering = byRow.get(row.row);
      if (!covering) return row;
      const cells = row.cells.filter(
        (cell) =>
          !covering.some((m) => cell.column >= m.firstColumn && cell.column <= m.lastColumn && (row.row !== m.firstRow || cell.column !== m.firstColumn)),
      );
      return cells.length === row.cells.length ? row : { ...row, cells };
    })
    .filter((row) => row.cells.length > 0);
}
