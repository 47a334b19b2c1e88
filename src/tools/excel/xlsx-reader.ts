import type { Backend } from '../../backends/types.js';
import { decodeOoxmlEscapes } from './cell-values.js';
import { WorkbookError } from './errors.js';
import type { CellValue, ColumnRange, OpenWorkbook, SheetInfo, SheetRow, SheetSlice, SheetSummary } from './model.js';
import { SheetXmlHandler, type RawCell, type RawRow, type SheetEvents } from './sheet-xml.js';
import { parseRelationships, parseStyles, parseWorkbook, relationshipsPartOf, SharedStringsHandler, type Relationship } from './workbook-parts.js';
import { XmlScanner, type XmlHandler } from './xml-scanner.js';
import { parseCentralDirectory, streamEntries, TextCollector, type FileEnds, type KnownBytes, type TextSink, type ZipEntry } from './zip-stream.js';

/**
 * .xlsx / .xlsm reading, streamed: the rows of a range are read without inflating the rest of
 * the sheet, and the shared-string table keeps only the strings those rows use when the sheet
 * comes first in the zip (as in files Excel writes).
 */

const OFFICE_DOCUMENT = /\/officeDocument$/;
const REL_STYLES = /\/styles$/;
const REL_SHARED_STRINGS = /\/sharedStrings$/;
/** Merged ranges listed by get_info; the rest are counted. */
export const MAX_MERGED_RANGES_LISTED = 50;

/** Feeds a part's text to an XML handler; stops when the handler says so. */
class XmlSink implements TextSink {
  private readonly scanner: XmlScanner;
  constructor(handler: XmlHandler) {
    this.scanner = new XmlScanner(handler);
  }
  write(text: string): boolean {
    this.scanner.feed(text);
    return !this.scanner.isStopped;
  }
  end(): void {}
}

interface XlsxSheet extends SheetSummary {
  part: ZipEntry;
}

class XlsxWorkbook implements OpenWorkbook {
  readonly format = 'xlsx' as const;
  private dimensionsLoaded = false;

  constructor(
    private readonly backend: Backend,
    private readonly path: string,
    private readonly signal: AbortSignal,
    private readonly known: KnownBytes,
    readonly sheets: XlsxSheet[],
    readonly date1904: boolean,
    private readonly stylesPart: ZipEntry | undefined,
    private readonly sharedStringsPart: ZipEntry | undefined,
  ) {}

  private stream(wanted: Array<{ entry: ZipEntry; sink: TextSink }>): Promise<void> {
    return streamEntries(this.backend, this.path, wanted, this.signal, this.known);
  }

  async loadDimensions(): Promise<void> {
    if (this.dimensionsLoaded) return;
    // Each sheet declares its used range before its rows: read only that far.
    await this.stream(
      this.sheets.map((sheet) => ({
        entry: sheet.part,
        sink: new XmlSink(new SheetXmlHandler({ dimension: (ref) => { sheet.dimension = ref; }, sheetDataStart: () => false })),
      })),
    );
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
    const events: SheetEvents = {
      dimension: (ref) => { declaredLastRow = lastRowOfRange(ref); },
      column: (min, max, hidden) => { if (hidden) hiddenColumns.push({ min, max }); },
      row: (row) => {
        seenLastRow = Math.max(seenLastRow, row.row);
        if (row.row > lastRow) {
          // Past the range: stop, even when the file declares no size (counting would read it all).
          stoppedEarly = true;
          return false;
        }
        if (row.row < firstRow) return true;
        rows.push(row);
        for (const cell of row.cells) if (cell.type === 's' && cell.value !== null) neededStrings.add(Number(cell.value));
        return true;
      },
    };
    const wanted: Array<{ entry: ZipEntry; sink: TextSink }> = [{ entry: part, sink: new XmlSink(new SheetXmlHandler(events)) }];
    // Whether the sheet was read before the string table: then only the strings it uses are kept.
    const sheetFirst = this.sharedStringsPart ? part.localHeaderOffset < this.sharedStringsPart.localHeaderOffset : false;
    const strings = new SharedStringsHandler(() => (sheetFirst ? neededStrings : null));
    if (this.sharedStringsPart) wanted.push({ entry: this.sharedStringsPart, sink: new XmlSink(strings) });
    let styles: string[] = [];
    const stylesText = new TextCollector();
    if (this.stylesPart) wanted.push({ entry: this.stylesPart, sink: stylesText });
    await this.stream(wanted);
    if (this.stylesPart) styles = parseStyles(stylesText.text());
    const resolved: SheetRow[] = rows.map((row) => ({
      row: row.row,
      hidden: row.hidden,
      cells: row.cells.map((cell) => ({ column: cell.column, value: resolveCell(cell, strings.strings, styles) })),
    }));
    const known = declaredLastRow > 0 || !stoppedEarly;
    return { rows: resolved, hiddenColumns, lastRow: known ? Math.max(declaredLastRow, seenLastRow) : null, lastRowSeen: seenLastRow };
  }

  async inspect(sheet: SheetSummary): Promise<SheetInfo> {
    const part = (sheet as XlsxSheet).part;
    const columns: Array<ColumnRange & { hidden: boolean }> = [];
    const hiddenRows: number[] = [];
    const mergedRanges: string[] = [];
    let rowsWithData = 0;
    let lastRow = 0;
    let lastColumn = 0;
    let formulas = 0;
    let formulasWithoutValue = 0;
    let merges = 0;
    const handler = new SheetXmlHandler({
      dimension: (ref) => { sheet.dimension = ref; },
      column: (min, max, hidden) => { if (hidden) columns.push({ min, max, hidden }); },
      row: (row) => {
        rowsWithData++;
        lastRow = Math.max(lastRow, row.row);
        if (row.hidden) hiddenRows.push(row.row);
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
    await this.stream([{ entry: part, sink: new XmlSink(handler) }]);
    return {
      summary: sheet,
      rowsWithData,
      lastRow,
      lastColumn,
      hiddenRows,
      hiddenColumns: clipRanges(columns, lastColumn),
      mergedRanges: merges > mergedRanges.length ? [...mergedRanges, `… ${merges - mergedRanges.length} more`] : mergedRanges,
      formulas,
      formulasWithoutValue,
    };
  }
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

function resolveCell(cell: RawCell, strings: Map<number, string>, styles: string[]): CellValue {
  const raw = cell.value;
  switch (cell.type) {
    case 's':
      return { kind: 'string', text: raw === null ? '' : strings.get(Number(raw)) ?? '' };
    case 'inlineStr':
      return { kind: 'string', text: decodeOoxmlEscapes(cell.inline ?? raw ?? '') };
  }
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

/** Opens an .xlsx from its central directory: reads the workbook's small parts, not its sheets. */
export async function openXlsx(backend: Backend, path: string, ends: FileEnds, signal: AbortSignal): Promise<OpenWorkbook> {
  const entries = new Map(parseCentralDirectory(ends).map((entry) => [entry.name, entry]));
  const known: KnownBytes = { bytes: ends.tail, start: ends.size - ends.tail.length };
  const readParts = async (names: string[]): Promise<Map<string, string>> => {
    const collectors = new Map<string, TextCollector>();
    const wanted: Array<{ entry: ZipEntry; sink: TextSink }> = [];
    for (const name of names) {
      const entry = entries.get(name);
      if (!entry || collectors.has(name)) continue;
      const collector = new TextCollector();
      collectors.set(name, collector);
      wanted.push({ entry, sink: collector });
    }
    await streamEntries(backend, path, wanted, signal, known);
    return new Map([...collectors].map(([name, collector]) => [name, collector.text()]));
  };

  const standardMain = 'xl/workbook.xml';
  let parts = await readParts(['_rels/.rels', standardMain, relationshipsPartOf(standardMain)]);
  const packageRels = parts.get('_rels/.rels');
  const main = (packageRels && parseRelationships(packageRels, '').find((r) => OFFICE_DOCUMENT.test(r.type))?.path) ?? standardMain;
  if (main !== standardMain) parts = await readParts([main, relationshipsPartOf(main)]);
  const workbookXml = parts.get(main);
  if (workbookXml === undefined) {
    throw new WorkbookError(entries.has('word/document.xml') || entries.has('ppt/presentation.xml') ? 'this is a Word or PowerPoint file, not a workbook' : 'the zip holds no workbook part (is it really an Excel file?)', 'corrupt');
  }
  const relationships: Relationship[] = parseRelationships(parts.get(relationshipsPartOf(main)) ?? '', main);
  const byId = new Map(relationships.map((r) => [r.id, r]));
  const { sheets, date1904 } = parseWorkbook(workbookXml);
  const xlsxSheets: XlsxSheet[] = [];
  for (const sheet of sheets) {
    const target = byId.get(sheet.relationshipId);
    const part = target ? entries.get(target.path) : undefined;
    // Chart sheets and dialog sheets have no cells; they are listed but not readable as rows.
    if (!part || !/\/worksheet$/.test(target!.type)) continue;
    xlsxSheets.push({ index: xlsxSheets.length + 1, name: sheet.name, visibility: sheet.visibility, dimension: null, part });
  }
  const partOfType = (type: RegExp) => {
    const rel = relationships.find((r) => type.test(r.type));
    return rel ? entries.get(rel.path) : undefined;
  };
  return new XlsxWorkbook(backend, path, signal, known, xlsxSheets, date1904, partOfType(REL_STYLES), partOfType(REL_SHARED_STRINGS));
}
