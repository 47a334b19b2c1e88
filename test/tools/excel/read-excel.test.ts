import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ExcelJS from 'exceljs';
import * as XLSX from '@e965/xlsx';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { classifyFormat, cleanNumber, loadNumberFormats, serialToIso } from '../../../src/tools/excel/cell-values.js';
import { attributeValue, XmlScanner } from '../../../src/tools/excel/xml-scanner.js';
import { READ_EXCEL_MAX_ROWS, readExcelTool } from '../../../src/tools/excel/tool.js';
import { ToolRegistry, type ToolCallResult } from '../../../src/tools/core/registry.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

const fixtures = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const registry = new ToolRegistry();
registry.register(readExcelTool);
let dir: string;

function run(args: Record<string, unknown>, workingDir = dir): Promise<ToolCallResult> {
  return registry.run('read_excel', args, makeToolContext({ workingDir }));
}

async function output(args: Record<string, unknown>): Promise<string> {
  const result = await run(args);
  expect(result.ok, result.output).toBe(true);
  return result.output;
}

async function failureOf(args: Record<string, unknown>): Promise<ToolCallResult> {
  const result = await run(args);
  expect(result.ok).toBe(false);
  expect(result.output).not.toMatch(/\n\s+at /); // no stack trace
  return result;
}

const lines = (...rows: string[]) => rows.join('\n');

beforeAll(async () => {
  await loadNumberFormats();
  dir = makeTempDir();
  for (const name of ['sample.xlsx', 'sample.xlsm', 'sample.xls']) copyFileSync(join(fixtures, name), join(dir, name));
});

describe('read_excel on sample.xlsx (exceljs-written, shared strings)', () => {
  it('list_sheets gives names, visibility and used ranges', async () => {
    expect(await output({ path: 'sample.xlsx', action: 'list_sheets' })).toBe(
      lines(
        '4 sheets in sample.xlsx',
        '#\tsheet\tvisibility\tused range',
        '1\tSecret\thidden\tA1:B2',
        '2\tSales\tvisible\tA1:H12',
        '3\tNotes\tvisible\tA1:B3',
        '4\tWide\tvisible\tA1:BH2',
      ),
    );
  });

  it('read_sheet defaults to the first visible sheet, skips hidden rows and the hidden D:E range, counts them', async () => {
    const result = await run({ path: 'sample.xlsx', action: 'read_sheet' });
    expect(result.output).toBe(
      lines(
        'sheet "Sales"',
        'row\tA\tB\tC\tF\tG\tH',
        '1\tRegion\tRep\tQ1\tTotal\tClosed\tNote',
        '2\tNorth\tAna\t1200.5\t3750.75\t2024-03-02\tZürich office',
        '3\tSouth\tBo\t980\t3095\t2024-03-03\t東京 branch 📈',
        '4\tEast\tCy\t0.1\t0.6\t2024-03-04\tfloat noise',
        '5\tWest\tDi\t500\t750\t2024-03-05\tline one\\nline two',
        '6\tCentral\tEd\t700\t2130\t2024-03-06\ttab\\there',
        '9\tTotal\t#N/A\t3480.6\t#DIV/0!\t=TODAY() [formula, no cached value]\t',
        '11\tFigures in EUR; Q2 and Q3 are grouped and hidden\t\t\t\t\t',
        '12\tBold and plain\tTRUE\t25%\t-1234567.891\t2024-02-29 13:45:00\t',
        '[rows 1-12 of 12; 1 formula without a cached value (the file was saved uncalculated: results unknown, not zero); 2 hidden rows, 2 hidden columns ' +
          'skipped (show_hidden=true shows them)]',
      ),
    );
    expect(result.metadata).toMatchObject({ sheet: 'Sales', totalRows: 12, rowsShown: 9, hiddenRows: 2, hiddenColumns: 2, columnsCut: 0 });
  });

  it('show_hidden shows hidden rows and columns marked, with float noise removed', async () => {
    expect(await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Sales', show_hidden: true })).toBe(
      lines(
        'sheet "Sales"',
        'row\tA\tB\tC\tD[hidden]\tE[hidden]\tF\tG\tH',
        '1\tRegion\tRep\tQ1\tQ2\tQ3\tTotal\tClosed\tNote',
        '2\tNorth\tAna\t1200.5\t1300\t1250.25\t3750.75\t2024-03-02\tZürich office',
        '3\tSouth\tBo\t980\t1010\t1105\t3095\t2024-03-03\t東京 branch 📈',
        '4\tEast\tCy\t0.1\t0.2\t0.3\t0.6\t2024-03-04\tfloat noise',
        '5\tWest\tDi\t500\t0\t250\t750\t2024-03-05\tline one\\nline two',
        '6\tCentral\tEd\t700\t710\t720\t2130\t2024-03-06\ttab\\there',
        '7[hidden]\tOuter A\tFa\t10\t20\t30\t60\t2024-03-07\thidden row',
        '8[hidden]\tOuter B\tGu\t40\t50\t60\t150\t2024-03-08\thidden row too',
        '9\tTotal\t#N/A\t3480.6\t=SUM(D2:D8) [formula, no cached value]\t\t#DIV/0!\t=TODAY() [formula, no cached value]\t',
        '11\tFigures in EUR; Q2 and Q3 are grouped and hidden\t\t\t\t\t\t\t',
        '12\tBold and plain\tTRUE\t25%\thidden D\thidden E\t-1234567.891\t2024-02-29 13:45:00\t',
        '[rows 1-12 of 12; 2 formulas without a cached value (the file was saved uncalculated: results unknown, not zero); 2 hidden rows, 2 hidden columns ' +
          'shown, marked [hidden]]',
      ),
    );
  });

  it('start_row/end_row and a sheet given by 1-based index', async () => {
    expect(await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: '2', start_row: 5, end_row: 9 })).toBe(
      lines(
        'sheet "Sales"',
        'row\tA\tB\tC\tF\tG\tH',
        '5\tWest\tDi\t500\t750\t2024-03-05\tline one\\nline two',
        '6\tCentral\tEd\t700\t2130\t2024-03-06\ttab\\there',
        '9\tTotal\t#N/A\t3480.6\t#DIV/0!\t=TODAY() [formula, no cached value]\t',
        '[rows 5-9 of 12; 1 formula without a cached value (the file was saved uncalculated: results unknown, not zero); 2 hidden rows, 2 hidden columns ' +
          'skipped (show_hidden=true shows them); more rows: call read_excel with start_row=10]',
      ),
    );
  });

  it('a sheet by name (case-insensitive), a hidden sheet when asked for, an integer index coerced', async () => {
    expect(await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'notes' })).toBe(
      lines('sheet "Notes"', 'row\tA\tB', '1\tTopic\tDétail', '2\tÜnïcödé\tΕλληνικά, русский, 中文', '3\tEmpty next\t', '[rows 1-3 of 3]'),
    );
    expect(await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Secret' })).toBe(
      lines('sheet "Secret" (hidden)', 'row\tA\tB', '1\tkey\tvalue', '2\ttoken\tnot for the report', '[rows 1-2 of 2]'),
    );
    expect(await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 1 })).toContain('sheet "Secret" (hidden)');
  });

  it('cuts columns past the limit and says how many', async () => {
    const text = await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Wide' });
    const rows = text.split('\n');
    expect(rows[1]!.split('\t')).toHaveLength(51);
    expect(rows[1]!.endsWith('\tAW\tAX')).toBe(true);
    expect(rows[3]).toBe(`2\t${Array.from({ length: 50 }, (_, c) => (c + 1) * 2).join('\t')}`);
    expect(rows[4]).toBe('[rows 1-2 of 2; 10 more columns (AY-BH) not shown: at most 50 columns at a time; call read_excel with start_column=AY]');
  });

  it('start_column moves the window of columns (letters or a 1-based number)', async () => {
    const byLetters = await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Wide', start_column: 'ay' });
    const rows = byLetters.split('\n');
    expect(rows[1]).toBe(['row', 'AY', 'AZ', 'BA', 'BB', 'BC', 'BD', 'BE', 'BF', 'BG', 'BH'].join('\t'));
    expect(rows[3]).toBe(`2\t${Array.from({ length: 10 }, (_, c) => (c + 51) * 2).join('\t')}`);
    expect(rows[4]).toBe('[rows 1-2 of 2; columns from AY (start_column)]');
    expect(await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Wide', start_column: 51 })).toBe(byLetters);
    const middle = (await output({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Wide', start_column: 'C' })).split('\n');
    expect(middle[1]!.split('\t').slice(1, 3)).toEqual(['C', 'D']);
    expect(middle[4]).toBe(
      '[rows 1-2 of 2; columns from C (start_column); 8 more columns (BA-BH) not shown: at most 50 columns at a time; call read_excel with start_column=BA]',
    );
    const wrong = await failureOf({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Wide', start_column: 'A1' });
    expect(wrong.output).toContain('start_column "A1" is not a column');
  });

  it('get_info counts the hidden D:E range as two columns, lists merges and formulas', async () => {
    expect(await output({ path: 'sample.xlsx', action: 'get_info' })).toBe(
      lines(
        'sheet 1 "Secret" (hidden)',
        '  used range: A1:B2 (2 rows, 2 columns; 2 rows with values)',
        '  hidden rows: none',
        '  hidden columns: none',
        '  merged ranges: none',
        '  formulas: none',
        'sheet 2 "Sales" (visible)',
        '  used range: A1:H12 (12 rows, 8 columns; 11 rows with values)',
        '  hidden rows: 2 (7-8)',
        '  hidden columns: 2 (D:E)',
        '  merged ranges: A11:C11',
        '  formulas: 11 (2 without a cached value)',
        'sheet 3 "Notes" (visible)',
        '  used range: A1:B3 (3 rows, 2 columns; 3 rows with values)',
        '  hidden rows: none',
        '  hidden columns: none',
        '  merged ranges: none',
        '  formulas: none',
        'sheet 4 "Wide" (visible)',
        '  used range: A1:BH2 (2 rows, 60 columns; 2 rows with values)',
        '  hidden rows: none',
        '  hidden columns: none',
        '  merged ranges: none',
        '  formulas: none',
      ),
    );
  });

  it('the fixture really stores D:E as one <col min="4" max="5" hidden> range', async () => {
    // Guard for the test above: the range must not have been split into one element per column.
    const { inflateRawSync } = await import('node:zlib');
    const bytes = readFileSync(join(fixtures, 'sample.xlsx'));
    const name = Buffer.from('xl/worksheets/sheet2.xml');
    const at = bytes.indexOf(name);
    const local = at - 30;
    const size = bytes.readUInt32LE(local + 18);
    const start = at + name.length + bytes.readUInt16LE(local + 28);
    const xml = inflateRawSync(bytes.subarray(start, start + size)).toString('utf8');
    expect(xml).toContain('<col min="4" max="5" width="9" hidden="1" outlineLevel="1" collapsed="1" customWidth="1"/>');
  });
});

describe('read_excel on sample.xlsm (SheetJS-written, inline strings) and legacy sample.xls', () => {
  it('list_sheets on both', async () => {
    for (const file of ['sample.xlsm', 'sample.xls']) {
      expect(await output({ path: file, action: 'list_sheets' })).toBe(
        lines(`3 sheets in ${file}`, '#\tsheet\tvisibility\tused range', '1\tOrders\tvisible\tA1:F8', '2\tArchive\thidden\tA1:B3', '3\tReadme\tvisible\tA1:A2'),
      );
    }
  });

  it('read_sheet on .xlsm: hidden row 5 and column D skipped, dates, formula results, errors, booleans', async () => {
    expect(await output({ path: 'sample.xlsm', action: 'read_sheet' })).toBe(
      lines(
        'sheet "Orders"',
        'row\tA\tB\tC\tE\tF',
        '1\tOrder\tCustomer\tAmount\tPlaced\tStatus',
        '2\t1001\tMüller GmbH\t250.75\t2024-01-15\tpaid',
        '3\t1002\tSeñora Pérez\t99.9\t2024-01-16\topen',
        '4\t1003\tŌsaka 商店\t1000\t2024-01-19\tpaid',
        '6\tTotal\t\t1355.65\t\t#DIV/0!',
        '8\tMerged remark across A:C\t\t\tFALSE\t',
        '[rows 1-8 of 8; 1 hidden row, 1 hidden column skipped (show_hidden=true shows them)]',
      ),
    );
  });

  it('read_sheet on .xls gives the same format (SheetJS writes no hidden rows to BIFF, so row 5 shows)', async () => {
    expect(await output({ path: 'sample.xls', action: 'read_sheet' })).toBe(
      lines(
        'sheet "Orders"',
        'row\tA\tB\tC\tE\tF',
        '1\tOrder\tCustomer\tAmount\tPlaced\tStatus',
        '2\t1001\tMüller GmbH\t250.75\t2024-01-15\tpaid',
        '3\t1002\tSeñora Pérez\t99.9\t2024-01-16\topen',
        '4\t1003\tŌsaka 商店\t1000\t2024-01-19\tpaid',
        '5\t1004\tHidden Row Ltd\t5\t2024-01-20\tvoid',
        '6\tTotal\t\t1355.65\t\t#DIV/0!',
        '8\tMerged remark across A:C\t\t\tFALSE\t',
        '[rows 1-8 of 8; 1 hidden column skipped (show_hidden=true shows them)]',
      ),
    );
    expect(await output({ path: 'sample.xls', action: 'read_sheet', show_hidden: true, start_row: 6, end_row: 6 })).toBe(
      lines(
        'sheet "Orders"',
        'row\tA\tB\tC\tD[hidden]\tE\tF',
        '6\tTotal\t\t1355.65\t257.57\t\t#DIV/0!',
        '[rows 6-6 of 8; 1 hidden column shown, marked [hidden]; more rows: call read_excel with start_row=7]',
      ),
    );
  });

  it('hidden sheets and 1-based indexes on both', async () => {
    expect(await output({ path: 'sample.xls', action: 'read_sheet', sheet: 'Archive' })).toBe(
      lines('sheet "Archive" (hidden)', 'row\tA\tB', '1\tyear\torders', '2\t2022\t310', '3\t2023\t402', '[rows 1-3 of 3]'),
    );
    expect(await output({ path: 'sample.xlsm', action: 'read_sheet', sheet: '3' })).toBe(
      lines('sheet "Readme"', 'row\tA', '1\tAbout', '2\tLegacy export, café ☕', '[rows 1-2 of 2]'),
    );
  });

  it('get_info on .xlsm and .xls', async () => {
    expect(await output({ path: 'sample.xlsm', action: 'get_info', sheet: 'Orders' })).toBe(
      lines(
        'sheet 1 "Orders" (visible)',
        '  used range: A1:F8 (8 rows, 6 columns; 7 rows with values)',
        '  hidden rows: 1 (5)',
        '  hidden columns: 1 (D)',
        '  merged ranges: A8:C8',
        '  formulas: 3',
      ),
    );
    expect(await output({ path: 'sample.xls', action: 'get_info', sheet: 'Orders' })).toBe(
      lines(
        'sheet 1 "Orders" (visible)',
        '  used range: A1:F8 (8 rows, 6 columns; 7 rows with values)',
        '  hidden rows: none',
        '  hidden columns: 1 (D)',
        '  merged ranges: A8:C8',
        '  formulas: none',
      ),
    );
  });
});

describe('read_excel streaming and limits', () => {
  let big: string;
  const ROWS = 3000;

  beforeAll(async () => {
    big = join(dir, 'big.xlsx');
    // exceljs's streaming writer declares no dimension and puts the string table after the sheet.
    const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: big, useSharedStrings: true });
    const sheet = workbook.addWorksheet('Data');
    for (let r = 1; r <= ROWS; r++) sheet.addRow([r, `name ${r}`]).commit();
    sheet.commit();
    await workbook.commit();
  });

  it('stops after the range when the size is not declared, and says more rows exist', async () => {
    const text = await output({ path: 'big.xlsx', action: 'read_sheet', end_row: 3 });
    expect(text).toBe(
      lines(
        'sheet "Data"',
        'row\tA\tB',
        '1\t1\tname 1',
        '2\t2\tname 2',
        '3\t3\tname 3',
        "[rows 1-3 of more (the file does not declare the sheet's size; get_info counts its rows); more rows: call read_excel with start_row=4]",
      ),
    );
  });

  it('reads the end of the sheet, and caps one call at READ_EXCEL_MAX_ROWS rows', async () => {
    expect(await output({ path: 'big.xlsx', action: 'read_sheet', start_row: ROWS - 1 })).toBe(
      lines('sheet "Data"', 'row\tA\tB', `${ROWS - 1}\t${ROWS - 1}\tname ${ROWS - 1}`, `${ROWS}\t${ROWS}\tname ${ROWS}`, `[rows 2,999-3,000 of 3,000]`),
    );
    const result = await run({ path: 'big.xlsx', action: 'read_sheet', start_row: 1, end_row: ROWS });
    expect(result.metadata).toMatchObject({ startRow: 1, endRow: READ_EXCEL_MAX_ROWS });
    expect(result.output.split('\n').slice(-1)[0]).toContain(`more rows: call read_excel with start_row=${READ_EXCEL_MAX_ROWS + 1}`);
  });

  it('get_info counts every row of an undeclared sheet', async () => {
    expect(await output({ path: 'big.xlsx', action: 'get_info' })).toContain(`  used range: A1:B${ROWS} (3,000 rows, 2 columns; 3,000 rows with values)`);
  });
});

describe('read_excel errors', () => {
  it('a missing sheet lists the sheets', async () => {
    const result = await failureOf({ path: 'sample.xlsx', action: 'read_sheet', sheet: 'Nope' });
    expect(result.output).toBe(
      'sample.xlsx: no sheet "Nope"; the sheets are: 1. "Secret" (hidden), 2. "Sales", 3. "Notes", 4. "Wide" (give a name or a 1-based index)',
    );
    expect(result.metadata.error).toBe('sheet_not_found');
  });

  it('bad ranges', async () => {
    expect((await failureOf({ path: 'sample.xlsx', action: 'read_sheet', start_row: 50 })).output).toBe(
      'sample.xlsx: start_row 50 is beyond the last row (12) of sheet "Sales"',
    );
    expect((await failureOf({ path: 'sample.xlsx', action: 'read_sheet', start_row: 5, end_row: 2 })).output).toBe(
      'sample.xlsx: end_row (2) is before start_row (5)',
    );
  });

  it('.csv is pointed to read; other extensions are refused', async () => {
    writeFileSync(join(dir, 'data.csv'), 'a,b\n1,2\n');
    writeFileSync(join(dir, 'notes.docx'), 'x');
    writeFileSync(join(dir, 'book.xlsb'), 'x');
    expect((await failureOf({ path: 'data.csv', action: 'read_sheet' })).output).toBe('data.csv is a text file, not a workbook; read it with the read tool');
    expect((await failureOf({ path: 'notes.docx', action: 'list_sheets' })).output).toBe(
      'notes.docx is not an Excel workbook (expected .xlsx, .xlsm or .xls, got .docx)',
    );
    expect((await failureOf({ path: 'book.xlsb', action: 'list_sheets' })).output).toBe(
      'book.xlsb: .xlsb files are not supported; read_excel reads .xlsx, .xlsm and .xls (save the file as .xlsx)',
    );
  });

  it('a file that is not a zip, a truncated zip, an empty file', async () => {
    writeFileSync(join(dir, 'text.xlsx'), 'just some text\n');
    writeFileSync(join(dir, 'cut.xlsx'), readFileSync(join(fixtures, 'sample.xlsx')).subarray(0, 5000));
    expect((await failureOf({ path: 'text.xlsx', action: 'list_sheets' })).output).toBe(
      'text.xlsx: not a valid Excel file: this is a text file (CSV or other delimited text), not the zip archive an .xlsx file is (read it with the read tool)',
    );
    writeFileSync(join(dir, 'binary.xlsx'), Buffer.from([1, 2, 0, 3, 4, 5, 6, 7, 8]));
    expect((await failureOf({ path: 'binary.xlsx', action: 'list_sheets' })).output).toBe(
      'binary.xlsx: not a valid Excel file: .xlsx files are zip archives and .xls files OLE2 documents, and this is neither (damaged, or another format ' +
        'renamed)',
    );
    const cut = await failureOf({ path: 'cut.xlsx', action: 'read_sheet' });
    expect(cut.output).toBe('cut.xlsx: the zip container is damaged or truncated (no end-of-directory record)');
    expect(cut.metadata.error).toBe('corrupt');
    // An empty .xls is not an OLE2 document either.
    writeFileSync(join(dir, 'empty.xls'), '');
    expect((await failureOf({ path: 'empty.xls', action: 'list_sheets' })).output).toBe('empty.xls: the file is empty (0 bytes)');
  });

  it('a password-protected (encrypted) workbook', async () => {
    // Excel stores an encrypted .xlsx as an OLE2 file holding EncryptionInfo and EncryptedPackage.
    const cfb = XLSX.CFB.utils.cfb_new();
    XLSX.CFB.utils.cfb_add(cfb, '/EncryptionInfo', Buffer.from([4, 0, 4, 0, 0x40, 0, 0, 0]));
    XLSX.CFB.utils.cfb_add(cfb, '/EncryptedPackage', Buffer.alloc(64, 7));
    writeFileSync(join(dir, 'locked.xlsx'), XLSX.CFB.write(cfb, { type: 'buffer' }) as Buffer);
    const result = await failureOf({ path: 'locked.xlsx', action: 'read_sheet' });
    expect(result.output).toBe('locked.xlsx: the workbook is password-protected (encrypted); save an unprotected copy to read it');
    expect(result.metadata.error).toBe('encrypted');
  });

  it('a missing file and a directory', async () => {
    expect((await failureOf({ path: 'nope.xlsx', action: 'list_sheets' })).output).toMatch(/^no such file or directory: nope\.xlsx/);
    expect((await failureOf({ path: '.', action: 'list_sheets' })).output).toBe('. is a directory; use the list or glob tool to find workbooks in it');
  });
});

describe('cell values as Excel shows them', () => {
  it("dates in both date systems, Excel's 1900 leap day, times", () => {
    expect(serialToIso(1, 'date', false)).toBe('1900-01-01');
    expect(serialToIso(59, 'date', false)).toBe('1900-02-28');
    expect(serialToIso(60, 'date', false)).toBe('1900-02-29');
    expect(serialToIso(61, 'date', false)).toBe('1900-03-01');
    expect(serialToIso(45306, 'date', false)).toBe('2024-01-15');
    expect(serialToIso(0, 'date', true)).toBe('1904-01-01');
    expect(serialToIso(45351.57291666667, 'datetime', false)).toBe('2024-02-29 13:45:00');
    expect(serialToIso(0.75, 'time', false)).toBe('18:00:00');
    expect(serialToIso(-1, 'date', false)).toBeNull();
  });

  it('number formats and float noise', () => {
    expect(classifyFormat('yyyy-mm-dd')).toBe('date');
    expect(classifyFormat('[$-409]d-mmm-yy;@')).toBe('date');
    expect(classifyFormat('h:mm AM/PM')).toBe('time');
    expect(classifyFormat('[h]:mm:ss')).toBe('elapsed');
    expect(classifyFormat('dd/mm/yyyy hh:mm')).toBe('datetime');
    expect(classifyFormat('0.00%')).toBe('percent');
    expect(classifyFormat('"Days: "0')).toBe('general');
    expect(classifyFormat('[Red]#,##0.00')).toBe('general');
    expect(cleanNumber(0.1 + 0.2)).toBe('0.3');
    expect(cleanNumber(-1234567.891)).toBe('-1234567.891');
    expect(cleanNumber(123456789012)).toBe('123456789012');
  });
});

describe('the streaming XML scanner', () => {
  it('finds tags split across chunks, > inside quoted values, entities, CDATA and comments', () => {
    const events: string[] = [];
    const scanner = new XmlScanner({
      open: (name, raw, selfClosing) =>
        events.push(`open ${name}${selfClosing ? '/' : ''} ${attributeValue(raw, 'formatCode') ?? attributeValue(raw, 'r') ?? ''}`.trim()),
      close: (name) => events.push(`close ${name}`),
      text: (text) => events.push(`text ${text}`),
    });
    const xml =
      `<?xml version="1.0"?><x:numFmt numFmtId="164" formatCode="[>100]0;'a'"/><!-- <c r="Z9"> --><c r='B2'><t>a &amp; b ` +
      `&#x1F4C8;</t><t><![CDATA[<raw>]]></t></c>`;
    for (let i = 0; i < xml.length; i += 7) scanner.feed(xml.slice(i, i + 7));
    // Text may arrive in pieces: join neighbouring text events before comparing.
    const merged = events.reduce<string[]>((all, e) => {
      const last = all[all.length - 1];
      if (e.startsWith('text ') && last?.startsWith('text ')) all[all.length - 1] = last + e.slice(5);
      else all.push(e);
      return all;
    }, []);
    expect(merged).toEqual([
      "open numFmt/ [>100]0;'a'",
      'close numFmt',
      'open c B2',
      'open t',
      'text a & b 📈',
      'close t',
      'open t',
      'text <raw>',
      'close t',
      'close c',
    ]);
  });
});

describe('read_excel registration', () => {
  it('every built-in profile offers read_excel, as a read-only tool', () => {
    for (const name of ['readonly', 'developer', 'eval', 'daytona']) {
      const names = buildToolRegistry(loadProfile(name)).names();
      expect(names).toContain('read_excel');
    }
    expect(readExcelTool.readOnly).toBe(true);
  });
});
