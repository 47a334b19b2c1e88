import type { Backend } from '../../backends/types.js';
import { decodeOoxmlEscapes } from './cell-values.js';
import { WorkbookError } from './errors.js';
import {
  MAX_HIDDEN_ROWS_KEPT,
  sheetHasCells,
  withoutHiddenMergeValues,
  type CellValue,
  type MergedRange,
  type ColumnRange,
  type OpenWorkbook,
  type SheetInfo,
  type SheetKind,
  type SheetRow,
  type SheetSlice,
  type SheetSummary,
} from './model.js';
import { columnOfReference, SheetXmlHandler, type RawCell, type RawRow, type SheetEvents } from './sheet-xml.js';
import { parseRelationships, parseStyles, parseWorkbook, relationshipsPartOf, SharedStringsHandler, type Relationship } from './workbook-parts.js';
import { XmlScanner, type XmlHandler } from './xml-scanner.js';
import { ZipArchive, type ReadLimits } from './zip-archive.js';

/**
 * .xlsx / .xlsm reading, streamed: the rows of a range are read without inflating the rest of
 * the sheet, then the shared-string table only up to the last string those rows use.
 */

const OFFICE_DOCUMENT = /\/officeDocument$/;
const REL_STYLES = /\/styles$/;
const REL_SHARED_STRINGS = /\/sharedStrings$/;
/** Merged ranges listed by get_info; the rest are counted. */
export const MAX_MERGED_RANGES_LISTED = 50;

/** Feeds a part to an XML handler; reading stops once the handler needs no more. */
function scanPart(archive: ZipArchive, part: string, handler: XmlHandler): Promise<void> {
  const scanner = new XmlScanner(handler, `part ${part}`);
  return archive.streamText(part, (text) => {
    scanner.feed(text);
    return !scanner.isStopped;
  });
}

interface XlsxSheet extends SheetSummary {
  /** The worksheet's path in the zip. */
  part: string;
}

class XlsxWorkbook implements OpenWorkbook {
  readonly format = 'xlsx' as const;
  private dimensionsLoaded = false;

  constructor(
    private readonly archive: ZipArchive,
    readonly sheets: XlsxSheet[],
    readonly date1904: boolean,
    private readonly stylesPart: string | undefined,
    private readonly sharedStringsPart: string | undefined,
  ) {}

  async loadDimensions(): Promise<void> {
    if (this.dimensionsLoaded) return;
    // Each sheet declares its used range before its rows: read only that far.
    for (const sheet of this.sheets) {
      if (!sheetHasCells(sheet.kind)) continue;
      await scanPart(
        this.archive,
        sheet.part,
        new SheetXmlHandler({
          dimension: (ref) => {
            sheet.dimension = ref;
          },
          sheetDataStart: () => false,
        }),
      );
    }
    this.dimensionsLoaded = true;
  }

  async readRows(sheet: SheetSummary, firstRow: number, lastRow: number): Promise<SheetSlice> {
    const part = (sheet as XlsxSheet).part;
    const rows: RawRow[] = [];
    const hiddenColumns: ColumnRange[] = [];
    const neededStrings = new Set<number>();
    let declaredLastRow = 0;
    let seenLastRow = 0;
    let stoppedEarly = false;
    const merges: MergedRange[] = [];
    const events: SheetEvents = {
      dimension: (ref) => {
        declaredLastRow = lastRowOfRange(ref);
      },
      column: (min, max, hidden) => {
        if (hidden) hiddenColumns.push({ min, max });
      },
      merge: (ref) => {
        addMerge(merges, ref);
      },
      row: (row) => {
        seenLastRow = Math.max(seenLastRow, row.row);
        if (row.row > lastRow) {
          // Past the range: stop, even when the file declares no size (counting would read it all).
          stoppedEarly = true;
          return false;
        }
        if (row.row < firstRow) return true;
        rows.push(row);
        for (const cell of row.cells) {
          const index = sharedStringIndex(cell);
          if (index !== null) neededStrings.add(index);
        }
        return true;
      },
    };
    // The sheet first, so that only the strings its rows use are kept (wherever the table lies).
    await scanPart(this.archive, part, new SheetXmlHandler(events));
    // Merged ranges follow the rows: when reading stopped early, they are looked up in the rest of the part.
    if (stoppedEarly && rows.length > 0 && mergesWorthScanning(this.archive.declaredSizes(part)))
      await scanMergeRefs(this.archive, part, (ref) => addMerge(merges, ref));
    rows.splice(0, rows.length, ...withoutHiddenMergeValues(rows, merges));
    const strings = new SharedStringsHandler(neededStrings);
    if (this.sharedStringsPart && neededStrings.size > 0) await scanPart(this.archive, this.sharedStringsPart, strings);
    const styles = this.stylesPart ? parseStyles(await this.archive.readText(this.stylesPart)) : [];
    const resolved: SheetRow[] = rows.map((row) => ({
      row: row.row,
      hidden: row.hidden,
      cells: row.cells.map((cell) => ({ column: cell.column, value: resolveCell(cell, strings.strings, styles) })),
    }));
    // Read to its end, the sheet's last row is its last row with a value, as get_info counts it: the
    // declared range (<dimension>) also covers formatted empty cells below the data (A1:B476 for
    // values in rows 1-474). Stopped early, only the declared range says how far the sheet goes.
    const lastKnown = !stoppedEarly ? seenLastRow : declaredLastRow > 0 ? Math.max(declaredLastRow, seenLastRow) : null;
    return { rows: resolved, hiddenColumns, lastRow: lastKnown, lastRowSeen: seenLastRow };
  }

  async inspect(sheet: SheetSummary): Promise<SheetInfo> {
    const part = (sheet as XlsxSheet).part;
    const columns: Array<ColumnRange & { hidden: boolean }> = [];
    const hiddenRows: number[] = [];
    let hiddenRowCount = 0;
    const mergedRanges: string[] = [];
    let rowsWithData = 0;
    let lastRow = 0;
    let lastColumn = 0;
    let formulas = 0;
    let formulasWithoutValue = 0;
    let merges = 0;
    const handler = new SheetXmlHandler({
      dimension: (ref) => {
        sheet.dimension = ref;
      },
      column: (min, max, hidden) => {
        if (hidden) columns.push({ min, max, hidden });
      },
      row: (row) => {
        rowsWithData++;
        lastRow = Math.max(lastRow, row.row);
        if (row.hidden && hiddenRowCount++ < MAX_HIDDEN_ROWS_KEPT) hiddenRows.push(row.row);
        for (const cell of row.cells) {
          lastColumn = Math.max(lastColumn, cell.column);
          if (cell.hasFormula) {
            formulas++;
            if (cell.value === null) formulasWithoutValue++;
          }
        }
        return true;
      },
      merge: (ref) => {
        merges++;
        if (mergedRanges.length < MAX_MERGED_RANGES_LISTED) mergedRanges.push(ref);
      },
    });
    await scanPart(this.archive, part, handler);
    return {
      summary: sheet,
      rowsWithData,
      lastRow,
      lastColumn,
      hiddenRows,
      hiddenRowCount,
      hiddenColumns: clipRanges(columns, lastColumn),
      mergedRanges: merges > mergedRanges.length ? [...mergedRanges, `… ${merges - mergedRanges.length} more`] : mergedRanges,
      formulas,
      formulasWithoutValue,
    };
  }
}

/**
 * When the rows asked for end before the sheet does, the rest of a sheet part stored in at most
 * 1 MB (tens of thousands of rows; inflated and searched in well under a second) is read for its
 * merged ranges. Larger sheets keep their promise that the first rows cost only the start of the
 * part: values stored under a merge are then shown as stored.
 */
export const MAX_MERGE_SCAN_STORED_BYTES = 1024 * 1024;
const MAX_MERGE_SCAN_INFLATED_BYTES = 64 * 1024 * 1024;

function mergesWorthScanning(sizes: { stored: number; inflated: number }): boolean {
  return sizes.stored <= MAX_MERGE_SCAN_STORED_BYTES && sizes.inflated <= MAX_MERGE_SCAN_INFLATED_BYTES;
}

function addMerge(merges: MergedRange[], ref: string): void {
  const [start, end = start] = ref.split(':');
  const firstRow = lastRowOfRange(start!);
  const lastRow = lastRowOfRange(end!);
  const firstColumn = columnOfReference(start!);
  const lastColumn = columnOfReference(end!);
  if (firstRow > 0 && firstColumn > 0 && lastRow >= firstRow && lastColumn >= firstColumn) merges.push({ firstRow, firstColumn, lastRow, lastColumn });
}

const MERGE_TAG = /<(?:[\w.-]+:)?mergeCell\b[^>]*?\bref="([^"]*)"[^>]*>/g;

/**
 * The merged ranges of a sheet part without parsing its rows: a text search for <mergeCell> tags
 * (they follow <sheetData>), stopping at </mergeCells>.
 */
async function scanMergeRefs(archive: ZipArchive, part: string, found: (ref: string) => void): Promise<void> {
  let carry = '';
  await archive.streamText(part, (chunk) => {
    const text = carry + chunk;
    let end = text.lastIndexOf('<');
    if (end < 0 || text.indexOf('>', end) >= 0) end = text.length;
    carry = text.length - end > 4096 ? '' : text.slice(end);
    const complete = text.slice(0, end);
    if (complete.includes('mergeCell')) for (const match of complete.matchAll(MERGE_TAG)) found(match[1]!);
    return !/<\/(?:[\w.-]+:)?mergeCells>/.test(complete);
  });
}

/** Hidden column ranges cut to A..lastColumn (Excel often hides everything right of the data). */
export function clipRanges(ranges: ColumnRange[], lastColumn: number): ColumnRange[] {
  return ranges.filter((r) => r.min <= lastColumn).map((r) => ({ min: r.min, max: Math.min(r.max, lastColumn) }));
}

function lastRowOfRange(ref: string): number {
  const end = ref.split(':').pop() ?? '';
  const digits = /(\d+)$/.exec(end);
  return digits ? Number(digits[1]) : 0;
}

/** A shared-string cell's index; null when its <v> is empty or not an index (Number('') is 0: the first string). */
function sharedStringIndex(cell: RawCell): number | null {
  if (cell.type !== 's' || cell.value === null || !/^\s*\d+\s*$/.test(cell.value)) return null;
  return Number(cell.value);
}

function resolveCell(cell: RawCell, strings: Map<number, string>, styles: string[]): CellValue {
  const raw = cell.value;
  switch (cell.type) {
    case 's': {
      const index = sharedStringIndex(cell);
      return { kind: 'string', text: index === null ? '' : (strings.get(index) ?? '') };
    }
    case 'inlineStr':
      return { kind: 'string', text: decodeOoxmlEscapes(cell.inline ?? raw ?? '') };
  }
  // An <is> inline string without t="inlineStr" (some writers leave the type out): still its text.
  if (cell.inline !== null && raw === null && !cell.hasFormula) return { kind: 'string', text: decodeOoxmlEscapes(cell.inline) };
  if (raw === null || (raw === '' && cell.hasFormula)) {
    if (cell.hasFormula) return { kind: 'noCachedValue', formula: cell.formula };
    return { kind: 'string', text: '' };
  }
  switch (cell.type) {
    case 'str':
      return { kind: 'string', text: decodeOoxmlEscapes(raw) };
    case 'b':
      return { kind: 'boolean', value: raw === '1' || raw === 'true' };
    case 'e':
      return { kind: 'error', text: raw };
    case 'd':
      return { kind: 'isoDate', text: raw };
    default: {
      const value = Number(raw);
      if (raw.trim() === '' || Number.isNaN(value)) return { kind: 'string', text: raw };
      return { kind: 'number', value, format: styles[cell.style] ?? 'General' };
    }
  }
}

/** A sheet's kind from its relationship type (macro sheets: xlMacrosheet, xlIntlMacrosheet). */
function sheetKindOf(type: string): SheetKind | undefined {
  if (/\/worksheet$/.test(type)) return 'worksheet';
  if (/\/chartsheet$/.test(type)) return 'chartsheet';
  if (/\/dialogsheet$/.test(type)) return 'dialogsheet';
  if (/\/xl(Intl)?Macrosheet$/i.test(type)) return 'macrosheet';
  return undefined;
}

/** Opens an .xlsx from its central directory: reads the workbook's small parts, not its sheets. */
export async function openXlsx(backend: Backend, path: string, size: number, limits: ReadLimits): Promise<OpenWorkbook> {
  const archive = await ZipArchive.open(backend, path, size, limits);
  const readParts = async (names: string[]): Promise<Map<string, string>> => {
    const parts = new Map<string, string>();
    for (const name of names) if (archive.has(name) && !parts.has(name)) parts.set(name, await archive.readText(name));
    return parts;
  };

  const standardMain = 'xl/workbook.xml';
  let parts = await readParts(['_rels/.rels', standardMain, relationshipsPartOf(standardMain)]);
  const packageRels = parts.get('_rels/.rels');
  const main = (packageRels && parseRelationships(packageRels, '').find((r) => OFFICE_DOCUMENT.test(r.type))?.path) ?? standardMain;
  if (main !== standardMain) parts = await readParts([main, relationshipsPartOf(main)]);
  const workbookXml = parts.get(main);
  if (workbookXml === undefined) {
    throw new WorkbookError(
      archive.has('word/document.xml') || archive.has('ppt/presentation.xml')
        ? 'this is a Word or PowerPoint file, not a workbook'
        : 'the zip holds no workbook part (is it really an Excel file?)',
      'corrupt',
    );
  }
  const relationships: Relationship[] = parseRelationships(parts.get(relationshipsPartOf(main)) ?? '', main);
  const byId = new Map(relationships.map((r) => [r.id, r]));
  const { sheets, date1904 } = parseWorkbook(workbookXml);
  const xlsxSheets: XlsxSheet[] = [];
  for (const sheet of sheets) {
    const target = byId.get(sheet.relationshipId);
    const kind = target ? sheetKindOf(target.type) : undefined;
    // A sheet whose part is missing or of no known kind is damaged: skipped as before.
    if (!target || !kind || !archive.has(target.path)) continue;
    xlsxSheets.push({ index: xlsxSheets.length + 1, name: sheet.name, visibility: sheet.visibility, kind, dimension: null, part: target.path });
  }
  const partOfType = (type: RegExp) => {
    const rel = relationships.find((r) => type.test(r.type));
    return rel && archive.has(rel.path) ? rel.path : undefined;
  };
  return new XlsxWorkbook(archive, xlsxSheets, date1904, partOfType(REL_STYLES), partOfType(REL_SHARED_STRINGS));
}
