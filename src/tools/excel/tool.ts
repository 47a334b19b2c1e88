import { READ_ONLY_EFFECTS } from '../core/effects.js';
import { basename, extname } from 'node:path';
import { WorkbookError } from './errors.js';
import { loadNumberFormats, MAX_CELL_CHARS } from './cell-values.js';
import { HIDDEN_MARK, MAX_COLUMNS, parseColumn, renderCelllessSheet, renderSheetInfo, renderSheetList, renderSlice } from './format.js';
import { readBytes } from './file-bytes.js';
import { SHEET_KIND_LABELS, sheetHasCells, type OpenWorkbook, type SheetSummary } from './model.js';
import type { ReadLimits } from './zip-archive.js';
import { TEXT_WORKBOOK_LABELS, type TextWorkbookKind } from './errors.js';
import { formatCount } from '../core/long-lines.js';
import { resolveExistingPath } from '../core/existing-path.js';
import { success, ToolError, type ToolContext } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';

/** Rows shown by read_sheet when end_row is not given. */
export const READ_EXCEL_DEFAULT_ROWS = 500;
/** The most rows one read_sheet call shows, whatever end_row says. */
export const READ_EXCEL_MAX_ROWS = 2000;

const XLSX_EXTENSIONS = new Set(['.xlsx', '.xlsm', '.xltx', '.xltm']);
const TEXT_TABLE_EXTENSIONS = new Set(['.csv', '.tsv', '.txt']);
const ZIP_SIGNATURE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const OLE2_SIGNATURE = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);

function checkExtension(path: string, shown: string): void {
  const extension = extname(path).toLowerCase();
  if (XLSX_EXTENSIONS.has(extension) || extension === '.xls') return;
  if (TEXT_TABLE_EXTENSIONS.has(extension)) throw new ToolError(`${shown} is a text file, not a workbook; read it with the read tool`, 'not_a_workbook');
  if (extension === '.xlsb' || extension === '.ods' || extension === '.numbers') {
    throw new ToolError(
      `${shown}: ${extension} files are not supported; read_excel reads .xlsx, .xlsm and .xls (save the file as .xlsx)`,
      'unsupported_format',
    );
  }
  throw new ToolError(`${shown} is not an Excel workbook (expected .xlsx, .xlsm or .xls, got ${extension || 'no extension'})`, 'not_a_workbook');
}

// The readers (and yauzl, saxes, SheetJS behind them) are loaded when a workbook is opened, not at start-up.
/** Default time limit of one read_excel call, in seconds; QUARRY_EXCEL_SECONDS changes it. */
export const READ_EXCEL_DEFAULT_SECONDS = 60;

function readLimits(signal: AbortSignal): ReadLimits {
  const setting = process.env.QUARRY_EXCEL_SECONDS;
  const seconds = setting === undefined || setting.trim() === '' ? READ_EXCEL_DEFAULT_SECONDS : Number(setting);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new ToolError(`QUARRY_EXCEL_SECONDS must be a positive number of seconds, got "${setting}"`, 'bad_configuration');
  return { signal, seconds, deadline: Date.now() + seconds * 1000 };
}

async function openWorkbook(context: ToolContext, path: string, size: number): Promise<OpenWorkbook> {
  if (size === 0) throw new WorkbookError('the file is empty (0 bytes)', 'corrupt');
  await loadNumberFormats();
  const head = await readBytes(context.backend, path, 0, OLE2_SIGNATURE.length);
  if (head.subarray(0, 4).equals(ZIP_SIGNATURE)) {
    const { openXlsx } = await import('./xlsx-reader.js');
    return openXlsx(context.backend, path, size, readLimits(context.signal));
  }
  // OLE2: a legacy .xls, or an encrypted (password-protected) .xlsx, which Excel stores this way.
  if (head.equals(OLE2_SIGNATURE) || isBiffStream(head)) return openWhole(context, path, size, null);
  // Excel's owner file: the user's name, padded; never a workbook.
  // Excel's owner file (the user's name, padded), left beside a workbook while it is open.
  if (basename(path).startsWith('~$')) {
    throw new WorkbookError(
      `not a workbook: a file named ~$… is the lock file Excel keeps while someone has the workbook open; read "${basename(path).slice(2)}" (its name may ` +
        `be cut at the start)`,
      'corrupt',
    );
  }
  const text = textWorkbookKind(await readBytes(context.backend, path, 0, TEXT_SNIFF_BYTES));
  if (text !== null && extname(path).toLowerCase() === '.xls') return openWhole(context, path, size, text);
  if (text !== null)
    throw new WorkbookError(
      `not a valid Excel file: this is ${TEXT_WORKBOOK_LABELS[text]}, not the zip archive an ${extname(path).toLowerCase()} file is ` +
        `(${text === 'csv' ? 'read it with the read tool' : 'save it as .xlsx, or name it .xls'})`,
      'corrupt',
    );
  throw new WorkbookError(
    'not a valid Excel file: .xlsx files are zip archives and .xls files OLE2 documents, and this is neither (damaged, or another format renamed)',
    'corrupt',
  );
}

/**
 * A workbook of Excel 2.x to 4.0 (and some exports in later BIFF versions): the BIFF records
 * alone, not inside an OLE2 container. It starts with a BOF record: id 0x0009, 0x0209, 0x0409 or
 * 0x0809, then the record's length.
 */
export function isBiffStream(head: Buffer): boolean {
  if (head.length < 4 || head[0] !== 0x09 || ![0x00, 0x02, 0x04, 0x08].includes(head[1]!)) return false;
  const length = head.readUInt16LE(2);
  return length >= 4 && length <= 20;
}

/** Files read whole (legacy .xls and text workbooks) larger than this are refused: SheetJS holds them in memory several times over. */
export const MAX_WHOLE_FILE_BYTES = 256 * 1024 * 1024;
const TEXT_SNIFF_BYTES = 4096;

async function openWhole(context: ToolContext, path: string, size: number, text: TextWorkbookKind | null): Promise<OpenWorkbook> {
  if (size > MAX_WHOLE_FILE_BYTES) {
    throw new WorkbookError(
      `${text ? TEXT_WORKBOOK_LABELS[text] : 'a legacy .xls'} of ${Math.round(size / 1024 / 1024)} MB: files of this kind are read whole, and more than ` +
        `${MAX_WHOLE_FILE_BYTES / 1024 / 1024} MB is refused (save it as .xlsx, which is streamed)`,
      'too_large',
    );
  }
  const { openXls } = await import('./xls-reader.js');
  return openXls(await context.backend.readFile(path), text);
}

/**
 * What Excel also opens under an .xls name although it is no binary workbook: SpreadsheetML 2003
 * XML, an HTML table (what many web applications export), or delimited text. Null when the
 * start of the file is none of these (binary, or other XML).
 */
export function textWorkbookKind(head: Buffer): TextWorkbookKind | null {
  if (head.length === 0 || head.includes(0)) return null;
  const text = head
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trimStart()
    .toLowerCase();
  if (text.startsWith('<?xml') || text.startsWith('<workbook')) return text.includes('urn:schemas-microsoft-com:office:spreadsheet') ? 'xml2003' : null;
  if (/^<(!doctype html|html|table|head|body|meta)\b/.test(text)) return 'html';
  return text.startsWith('<') ? null : 'csv';
}

function describeSheets(sheets: SheetSummary[]): string {
  return sheets
    .map((s) => {
      const notes = [...(s.visibility === 'visible' ? [] : [s.visibility]), ...(s.kind === 'worksheet' ? [] : [SHEET_KIND_LABELS[s.kind]])];
      return `${s.index}. "${s.name}"${notes.length === 0 ? '' : ` (${notes.join(', ')})`}`;
    })
    .join(', ');
}

function pickSheet(workbook: OpenWorkbook, requested: string | undefined): SheetSummary {
  const { sheets } = workbook;
  const withCells = sheets.filter((s) => sheetHasCells(s.kind));
  if (withCells.length === 0)
    throw new WorkbookError(
      sheets.length === 0 ? 'the workbook has no worksheets' : `the workbook has no worksheets, only: ${describeSheets(sheets)}`,
      'no_sheets',
    );
  if (requested === undefined) return withCells.find((s) => s.visibility === 'visible') ?? withCells[0]!;
  const found =
    sheets.find((s) => s.name === requested) ??
    sheets.find((s) => s.name.toLowerCase() === requested.trim().toLowerCase()) ??
    (/^\d+$/.test(requested.trim()) ? sheets[Number(requested.trim()) - 1] : undefined);
  if (!found) throw new WorkbookError(`no sheet "${requested}"; the sheets are: ${describeSheets(sheets)} (give a name or a 1-based index)`, 'sheet_not_found');
  return found;
}

async function readSheet(workbook: OpenWorkbook, args: ReadExcelArgs) {
  const sheet = pickSheet(workbook, args.sheet);
  if (!sheetHasCells(sheet.kind)) throw new WorkbookError(`sheet "${sheet.name}" is a ${SHEET_KIND_LABELS[sheet.kind]}: it has no cells to read`, 'no_cells');
  const firstRow = args.start_row ?? 1;
  const requestedLast = args.end_row ?? firstRow + READ_EXCEL_DEFAULT_ROWS - 1;
  if (requestedLast < firstRow) throw new WorkbookError(`end_row (${requestedLast}) is before start_row (${firstRow})`, 'bad_range');
  const lastRow = Math.min(requestedLast, firstRow + READ_EXCEL_MAX_ROWS - 1);
  const firstColumn = args.start_column === undefined ? 1 : parseColumn(args.start_column);
  if (firstColumn === null)
    throw new WorkbookError(`start_column "${args.start_column}" is not a column: give letters as in Excel (A, AY, XFD) or a 1-based number`, 'bad_range');
  const slice = await workbook.readRows(sheet, firstRow, lastRow);
  if (slice.lastRow === 0) return { text: `sheet "${sheet.name}" is empty: no values`, metadata: { sheet: sheet.name, totalRows: 0, rowsShown: 0 } };
  if (slice.lastRow !== null && firstRow > slice.lastRow)
    throw new WorkbookError(`start_row ${formatCount(firstRow)} is beyond the last row (${formatCount(slice.lastRow)}) of sheet "${sheet.name}"`, 'bad_range');
  return renderSlice(slice, { sheet, firstRow, lastRow, firstColumn, showHidden: args.show_hidden === true, date1904: workbook.date1904 });
}

async function getInfo(workbook: OpenWorkbook, args: ReadExcelArgs) {
  const sheets = args.sheet === undefined ? workbook.sheets : [pickSheet(workbook, args.sheet)];
  const blocks: string[] = [];
  for (const sheet of sheets) blocks.push(sheetHasCells(sheet.kind) ? renderSheetInfo(await workbook.inspect(sheet)) : renderCelllessSheet(sheet));
  return { text: blocks.join('\n'), metadata: { sheets: sheets.length } };
}

const READ_EXCEL_PARAMETERS = toolParameters(
  {
    path: { type: 'string', description: 'Workbook path; relative paths resolve against the working directory.' },
    action: { type: 'string', enum: ['list_sheets', 'get_info', 'read_sheet'], description: 'What to do.' },
    sheet: { type: 'string', description: 'Sheet name or 1-based index (read_sheet, get_info). Default for read_sheet: the first visible sheet.' },
    start_row: { type: 'integer', minimum: 1, description: 'First row to show (1-based, as numbered in Excel). Default 1.' },
    end_row: { type: 'integer', minimum: 1, description: `Last row to show (inclusive). Default start_row + ${READ_EXCEL_DEFAULT_ROWS - 1}.` },
    start_column: {
      type: 'string',
      description:
        `First column to show (read_sheet): letters as in Excel ("AY") or a 1-based number. Default A. At most ${MAX_COLUMNS} columns are shown ` + `from it.`,
    },
    show_hidden: { type: 'boolean', description: `Show hidden rows and columns, marked ${HIDDEN_MARK}. Default false.` },
  },
  ['path', 'action'],
);
export type ReadExcelArgs = ArgsOf<typeof READ_EXCEL_PARAMETERS>;

export const readExcelTool = defineTool({
  name: 'read_excel',
  description:
    'Read an Excel workbook (.xlsx, .xlsm or legacy .xls). Actions: list_sheets (names, visibility, used range; chart and dialog sheets are listed and have ' +
    'no cells); ' +
    'get_info (per sheet, or for `sheet` only: rows, columns, hidden rows and columns, merged ranges, formulas; scans whole sheets); ' +
    `read_sheet (rows start_row..end_row of \`sheet\`, ${READ_EXCEL_DEFAULT_ROWS} rows by default and at most ${formatCount(READ_EXCEL_MAX_ROWS)} per call; ` +
    'sheet is a name or a 1-based index, default the first visible sheet). Output: a header of column letters, then tab-separated ' +
    `rows prefixed with their row number; at most ${MAX_COLUMNS} columns at a time (start_column moves the window), cells cut at ${MAX_CELL_CHARS} ` +
    `characters, tabs and newlines in cells ` +
    'shown as \\t and \\n. Values appear as Excel shows them: dates as ISO dates, elapsed times such as 255:10:05, formulas as their cached results ' +
    '(a formula saved without one shows as =FORMULA [formula, no cached value], counted in the footer), errors such as #DIV/0! as written, ' +
    `merged cells' value in their top-left cell. Hidden rows and columns are skipped and counted in the footer; show_hidden=true shows them marked ` +
    `${HIDDEN_MARK}. ` +
    "The footer gives the sheet's row count and the start_row to read on. Large .xlsx files are streamed: reading the first rows is fast. For .csv use read.",
  parameters: READ_EXCEL_PARAMETERS,
  readOnly: true,
  effects: READ_ONLY_EFFECTS,
  async run(args, context) {
    const { path, shown, stat } = await resolveExistingPath(context, args.path);
    if (stat.type === 'directory') throw new ToolError(`${shown} is a directory; use the list or glob tool to find workbooks in it`, 'is_directory');
    if (stat.type !== 'file') throw new ToolError(`${shown} is not a regular file`, 'not_a_file');
    checkExtension(path, shown);
    try {
      const workbook = await openWorkbook(context, path, stat.size);
      const base = { path: shown, format: workbook.format, action: args.action };
      if (args.action === 'list_sheets') {
        await workbook.loadDimensions();
        return success(renderSheetList(shown, workbook.sheets, workbook.note), { ...base, sheets: workbook.sheets.length });
      }
      const result = args.action === 'get_info' ? await getInfo(workbook, args) : await readSheet(workbook, args);
      return success(result.text, { ...base, ...result.metadata });
    } catch (error) {
      if (error instanceof WorkbookError) throw new ToolError(`${shown}: ${error.message}`, error.code);
      throw error;
    }
  },
});
