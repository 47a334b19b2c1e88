import type { CellObject, WorkSheet } from '@e965/xlsx';
import { TEXT_WORKBOOK_LABELS, type TextWorkbookKind, WorkbookError } from './errors.js';
import {
  sheetHasCells,
  withoutHiddenMergeValues,
  type CellValue,
  type ColumnRange,
  type OpenWorkbook,
  type SheetInfo,
  type SheetKind,
  type SheetRow,
  type SheetSlice,
  type SheetSummary,
  type Visibility,
} from './model.js';
import { clipRanges, MAX_MERGED_RANGES_LISTED } from './xlsx-reader.js';

/**
 * Legacy .xls (BIFF, an OLE2 compound file) through SheetJS (@e965/xlsx, loaded only when
 * needed). BIFF8 workbooks hold at most 65,536 rows, so the whole file is parsed at once; the
 * rows then take the same path as .xlsx rows. Also used for OLE2 files named .xlsx: SheetJS
 * recognises encrypted (password-protected) workbooks, which are stored that way.
 */

type SheetJs = typeof import('@e965/xlsx');

const VISIBILITY: Record<number, Visibility> = { 0: 'visible', 1: 'hidden', 2: 'veryHidden' };

/** BIFF error codes: SheetJS gives the text only with cellText, which formats every cell (a third of the parse time). */
const ERROR_TEXTS: Record<number, string> = {
  0x00: '#NULL!',
  0x07: '#DIV/0!',
  0x0f: '#VALUE!',
  0x17: '#REF!',
  0x1d: '#NAME?',
  0x24: '#NUM!',
  0x2a: '#N/A',
  0x2b: '#GETTING_DATA',
};

function toCellValue(cell: CellObject): CellValue | null {
  switch (cell.t) {
    case 'n':
      return typeof cell.v === 'number' ? { kind: 'number', value: cell.v, format: typeof cell.z === 'string' ? cell.z : 'General' } : null;
    case 's':
      return typeof cell.v === 'string' && cell.v !== '' ? { kind: 'string', text: cell.v } : null;
    case 'b':
      return { kind: 'boolean', value: cell.v === true };
    case 'e':
      return { kind: 'error', text: cell.w ?? (typeof cell.v === 'number' ? ERROR_TEXTS[cell.v] : undefined) ?? '#ERROR!' };
    case 'd':
      return cell.v instanceof Date ? { kind: 'isoDate', text: cell.v.toISOString() } : null;
    default:
      return null;
  }
}

const KINDS: Record<string, SheetKind> = { chart: 'chartsheet', dialog: 'dialogsheet', macro: 'macrosheet' };

class XlsWorkbook implements OpenWorkbook {
  readonly note?: string;

  constructor(
    private readonly xlsx: SheetJs,
    private readonly worksheets: WorkSheet[],
    readonly sheets: SheetSummary[],
    readonly date1904: boolean,
    readonly format: 'xls' | TextWorkbookKind,
    private readonly formulasRead: boolean,
  ) {
    if (format !== 'xls') this.note = `${TEXT_WORKBOOK_LABELS[format]} named .xls, not a binary workbook`;
  }

  async loadDimensions(): Promise<void> {}

  private rowsOf(sheet: SheetSummary): SheetRow[] {
    const ws = this.worksheets[sheet.index - 1]!;
    const data = ws['!data'] ?? [];
    const rowInfo = ws['!rows'] ?? [];
    const rows: SheetRow[] = [];
    data.forEach((cells, r) => {
      if (!cells) return;
      const row: SheetRow = { row: r + 1, hidden: rowInfo[r]?.hidden === true, cells: [] };
      cells.forEach((cell, c) => {
        const value = cell ? toCellValue(cell) : null;
        if (value) row.cells.push({ column: c + 1, value });
      });
      if (row.cells.length > 0) rows.push(row);
    });
    return rows;
  }

  private hiddenColumns(sheet: SheetSummary): ColumnRange[] {
    const ranges: ColumnRange[] = [];
    (this.worksheets[sheet.index - 1]!['!cols'] ?? []).forEach((info, c) => {
      if (!info?.hidden) return;
      const last = ranges[ranges.length - 1];
      if (last && last.max === c) last.max = c + 1;
      else ranges.push({ min: c + 1, max: c + 1 });
    });
    return ranges;
  }

  async readRows(sheet: SheetSummary, firstRow: number, lastRow: number): Promise<SheetSlice> {
    const all = this.rowsOf(sheet);
    const merges = (this.worksheets[sheet.index - 1]!['!merges'] ?? []).map((m) => ({
      firstRow: m.s.r + 1,
      firstColumn: m.s.c + 1,
      lastRow: m.e.r + 1,
      lastColumn: m.e.c + 1,
    }));
    return {
      rows: withoutHiddenMergeValues(
        all.filter((row) => row.row >= firstRow && row.row <= lastRow),
        merges,
      ),
      hiddenColumns: this.hiddenColumns(sheet),
      // The last row with a value, as get_info counts it (the declared range may cover formatted empty rows).
      lastRow: all[all.length - 1]?.row ?? 0,
      lastRowSeen: all[all.length - 1]?.row ?? 0,
    };
  }

  async inspect(sheet: SheetSummary): Promise<SheetInfo> {
    const ws = this.worksheets[sheet.index - 1]!;
    const rows = this.rowsOf(sheet);
    let formulas = 0;
    for (const cells of ws['!data'] ?? []) for (const cell of cells ?? []) if (cell?.f) formulas++;
    const lastColumn = Math.max(0, ...rows.map((row) => row.cells[row.cells.length - 1]!.column));
    const merges = (ws['!merges'] ?? []).map((range) => this.xlsx.utils.encode_range(range));
    return {
      summary: sheet,
      rowsWithData: rows.length,
      lastRow: rows[rows.length - 1]?.row ?? 0,
      lastColumn,
      hiddenRows: rows.filter((row) => row.hidden).map((row) => row.row),
      hiddenRowCount: rows.filter((row) => row.hidden).length,
      hiddenColumns: clipRanges(this.hiddenColumns(sheet), lastColumn),
      mergedRanges:
        merges.length > MAX_MERGED_RANGES_LISTED
          ? [...merges.slice(0, MAX_MERGED_RANGES_LISTED), `… ${merges.length - MAX_MERGED_RANGES_LISTED} more`]
          : merges,
      formulas: this.formulasRead ? formulas : null,
      formulasWithoutValue: 0,
    };
  }
}

/** The OLE2 directory entry of a BIFF8 workbook stream: "Workbook" in UTF-16LE (BIFF5's is "Book"). */
const BIFF8_STREAM_NAME = Buffer.from('Workbook', 'utf16le');

/** Parses a legacy workbook held in memory; encrypted or damaged files become WorkbookErrors. */
export async function openXls(bytes: Buffer, text: TextWorkbookKind | null = null): Promise<OpenWorkbook> {
  const xlsx: SheetJs = await import('@e965/xlsx');
  // Code pages: BIFF5 and older store text in the workbook's Windows code page (1251 Cyrillic,
  // 1253 Greek, 1252's "…" and "€"), which SheetJS decodes only with its tables loaded (a 0.1-0.2 s
  // import). BIFF8, in an OLE2 stream named Workbook, stores Unicode and needs none. The subpath
  // without an extension is the one the package exports for both import (its .mjs, under tsc and
  // vitest) and require (its .js, in the bundle, where esbuild turns this import into a require).
  if (text !== null || !bytes.includes(BIFF8_STREAM_NAME)) xlsx.set_cptable(await import('@e965/xlsx/dist/cpexcel.full'));
  // raw: delimited text and HTML cells stay as written (SheetJS would otherwise guess numbers and dates).
  const read = (cellFormula: boolean) =>
    xlsx.read(bytes, {
      type: 'buffer',
      dense: true,
      cellFormula,
      cellNF: true,
      cellText: false,
      cellStyles: true,
      cellDates: false,
      raw: text === 'csv' || text === 'html',
    });
  let workbook;
  let formulasRead = true;
  try {
    workbook = read(true);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/password|encrypt/i.test(message))
      throw new WorkbookError('the workbook is password-protected (encrypted); save an unprotected copy to read it', 'encrypted');
    // SheetJS fails on some formula tokens it cannot print (defined names with "Unsupported ELFs"):
    // the cells' cached values do not need the formulas' text.
    try {
      workbook = read(false);
      formulasRead = false;
    } catch {
      throw new WorkbookError(`the file could not be read as an Excel workbook (${message})`, 'corrupt');
    }
  }
  const sheetInfo = workbook.Workbook?.Sheets ?? [];
  const worksheets: WorkSheet[] = [];
  const sheets: SheetSummary[] = [];
  workbook.SheetNames.forEach((name, i) => {
    const ws = workbook.Sheets[name];
    if (!ws) return;
    worksheets.push(ws);
    const kind = KINDS[String(ws['!type'])] ?? 'worksheet';
    sheets.push({
      index: sheets.length + 1,
      name,
      visibility: VISIBILITY[sheetInfo[i]?.Hidden ?? 0] ?? 'visible',
      kind,
      dimension: sheetHasCells(kind) ? (ws['!ref'] ?? null) : null,
    });
  });
  return new XlsWorkbook(xlsx, worksheets, sheets, workbook.Workbook?.WBProps?.date1904 === true, text ?? 'xls', formulasRead);
}
