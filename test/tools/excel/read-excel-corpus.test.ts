import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32, deflateRawSync } from 'node:zlib';
import ExcelJS from 'exceljs';
import * as XLSX from '@e965/xlsx';
import { beforeAll, describe, expect, it } from 'vitest';
import { escapeCellText, loadNumberFormats } from '../../../src/tools/excel/cell-values.js';
import { readExcelTool } from '../../../src/tools/excel/tool.js';
import { ToolRegistry, type ToolCallResult } from '../../../src/tools/core/registry.js';
import { runQuarry } from '../../support/cli.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/**
 * read_excel against workbooks made here by several producers (SheetJS, exceljs, hand-written
 * parts for what no library writes, LibreOffice when installed), each compared cell by cell with
 * an independent reader (openpyxl, when installed), plus exact outputs for what users see and
 * zip bombs run in a child process with a small heap.
 */

const registry = new ToolRegistry();
registry.register(readExcelTool);
let dir: string;

function run(args: Record<string, unknown>): Promise<ToolCallResult> {
  return registry.run('read_excel', args, makeToolContext({ workingDir: dir }));
}

async function output(args: Record<string, unknown>): Promise<string> {
  const result = await run(args);
  expect(result.ok, result.output).toBe(true);
  return result.output;
}

const lines = (...rows: string[]) => rows.join('\n');

// ---------------------------------------------------------------- a minimal zip writer

interface ZipPart {
  name: string;
  data: Buffer | string;
  /** The uncompressed size written in the headers, when it should lie (a zip bomb hiding its size). */
  declaredSize?: number;
}

/** A zip of deflated parts, written by hand so that tests control every byte (sizes included). */
function zip(parts: ZipPart[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const part of parts) {
    const data = Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data, 'utf8');
    const compressed = deflateRawSync(data, { level: 1 });
    const name = Buffer.from(part.name, 'utf8');
    const size = part.declaredSize ?? data.length;
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, compressed);
    const entry = Buffer.alloc(46);
    entry.writeUInt32LE(0x02014b50, 0);
    entry.writeUInt16LE(20, 4);
    entry.writeUInt16LE(20, 6);
    entry.writeUInt16LE(8, 10);
    entry.writeUInt32LE(crc, 16);
    entry.writeUInt32LE(compressed.length, 20);
    entry.writeUInt32LE(size, 24);
    entry.writeUInt16LE(name.length, 28);
    entry.writeUInt32LE(offset, 42);
    central.push(entry, name);
    offset += local.length + name.length + compressed.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(parts.length, 8);
  end.writeUInt16LE(parts.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

interface HandSheet {
  name: string;
  /** worksheet, chartsheet, dialogsheet or xlMacrosheet (a relationship type's last word). */
  type?: string;
  xml: string;
  state?: string;
}

/** An .xlsx from hand-written parts: what no library here writes (empty <v/>, chart and dialog sheets, hostile parts). */
function handWorkbook(
  sheets: HandSheet[],
  extra: { sharedStrings?: string; styles?: string; workbookPr?: string; workbookEnd?: string; parts?: ZipPart[] } = {},
): Buffer {
  const sheetEntries = sheets.map((s, i) => `<sheet name="${s.name}" sheetId="${i + 1}" r:id="rId${i + 1}"${s.state ? ` state="${s.state}"` : ''}/>`).join('');
  const rels = sheets.map((s, i) => {
    const type = s.type ?? 'worksheet';
    const base = type === 'xlMacrosheet' ? 'http://schemas.microsoft.com/office/2006/relationships' : REL;
    return `<Relationship Id="rId${i + 1}" Type="${base}/${type}" Target="sheets/s${i + 1}.xml"/>`;
  });
  if (extra.sharedStrings) rels.push(`<Relationship Id="rSS" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/>`);
  if (extra.styles) rels.push(`<Relationship Id="rST" Type="${REL}/styles" Target="styles.xml"/>`);
  const ct = 'application/vnd.openxmlformats-officedocument.spreadsheetml';
  const kinds: Record<string, string> = { worksheet: 'worksheet', chartsheet: 'chartsheet', dialogsheet: 'dialogsheet', xlMacrosheet: 'worksheet' };
  const overrides = [
    `<Override PartName="/xl/workbook.xml" ContentType="${ct}.sheet.main+xml"/>`,
    ...sheets.map(
      (s, i) =>
        `<Override PartName="/xl/sheets/s${i + 1}.xml" ` +
        `ContentType="${s.type === 'xlMacrosheet' ? 'application/vnd.ms-excel.macrosheet+xml' : `${ct}.${kinds[s.type ?? 'worksheet']}+xml`}"/>`,
    ),
    ...(extra.sharedStrings ? [`<Override PartName="/xl/sharedStrings.xml" ContentType="${ct}.sharedStrings+xml"/>`] : []),
    ...(extra.styles ? [`<Override PartName="/xl/styles.xml" ContentType="${ct}.styles+xml"/>`] : []),
  ];
  const parts: ZipPart[] = [
    {
      name: '[Content_Types].xml',
      data:
        `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ` +
        `ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ` +
        `ContentType="application/xml"/>${overrides.join('')}</Types>`,
    },
    {
      name: '_rels/.rels',
      data:
        `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r1" Type="${REL}/officeDocument" ` +
        `Target="xl/workbook.xml"/></Relationships>`,
    },
    { name: 'xl/workbook.xml', data: `<workbook ${NS}>${extra.workbookPr ?? ''}<sheets>${sheetEntries}</sheets>${extra.workbookEnd ?? ''}</workbook>` },
    {
      name: 'xl/_rels/workbook.xml.rels',
      data: `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels.join('')}</Relationships>`,
    },
    ...sheets.map((s, i) => ({ name: `xl/sheets/s${i + 1}.xml`, data: s.xml })),
  ];
  if (extra.sharedStrings) parts.push({ name: 'xl/sharedStrings.xml', data: extra.sharedStrings });
  if (extra.styles) parts.push({ name: 'xl/styles.xml', data: extra.styles });
  return zip([...parts, ...(extra.parts ?? [])]);
}

const worksheet = (rows: string) => `<worksheet ${NS}><sheetData>${rows}</sheetData></worksheet>`;

// ---------------------------------------------------------------- the corpus

/** Number formats users meet, with values that exercise them (dates and times only where they make sense). */
const FORMAT_CASES: Array<[string, number]> = [
  ['yyyy-mm-dd', 45306],
  ['m/d/yy', 45306.5],
  ['[$-409]mm-dd-yy', 42062],
  ['[$-F800]dddd, mmmm dd, yyyy', 42062],
  ['dd/mm/yyyy hh:mm', 45351.57291666667],
  ['h:mm AM/PM', 0.75],
  ['[h]:mm:ss', 10.632],
  ['[hh]:mm:ss', 1.5],
  ['[mm]:ss', 0.0425],
  ['0.00%', 0.125],
  ['0%;[Red]-0%', -0.5],
  ['#,##0.00;(#,##0.00)', -1234.5],
  ['"Days: "0', 42],
  ['0.00E+00', 12345.678],
  ['[Red]#,##0.00', 1234.5678],
  ['General', 0.1 + 0.2],
  ['@', 7],
];

function sheetJsFormats(date1904: boolean): XLSX.WorkBook {
  const ws: XLSX.WorkSheet = XLSX.utils.aoa_to_sheet([['format', 'value']]);
  FORMAT_CASES.forEach(([format, value], i) => {
    ws[`A${i + 2}`] = { t: 's', v: format };
    ws[`B${i + 2}`] = { t: 'n', v: value, z: format };
  });
  ws[`A${FORMAT_CASES.length + 2}`] = { t: 'b', v: true };
  ws[`B${FORMAT_CASES.length + 2}`] = { t: 's', v: 'tab\there, line\nbreak' };
  ws['!ref'] = `A1:B${FORMAT_CASES.length + 2}`;
  const wb = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(wb, ws, 'Formats');
  wb.Workbook = { WBProps: { date1904 } };
  return wb;
}

async function exceljsWorkbook(file: string, date1904: boolean): Promise<void> {
  const workbook = new ExcelJS.Workbook();
  workbook.properties.date1904 = date1904;
  const sheet = workbook.addWorksheet('Data');
  sheet.addRow(['name', 'when', 'amount', 'rich', 'formula']);
  sheet.addRow([
    'Ana',
    new Date(Date.UTC(2024, 1, 29)),
    12.5,
    { richText: [{ text: 'bold ', font: { bold: true } }, { text: 'plain' }] },
    { formula: 'C2*2', result: 25 },
  ]);
  sheet.addRow(['Bo', new Date(Date.UTC(1904, 0, 2, 13, 45)), -0.1, { richText: [{ text: 'x' }] }, { formula: 'C3*2' }]);
  sheet.getColumn(2).numFmt = 'yyyy-mm-dd hh:mm';
  await workbook.xlsx.writeFile(file);
}

async function exceljsInline(file: string): Promise<void> {
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: false });
  const sheet = workbook.addWorksheet('Inline');
  sheet.addRow(['first', 'cell']).commit();
  sheet.addRow([{ richText: [{ text: 'rich ' }, { text: 'inline', font: { italic: true } }] }, 3]).commit();
  sheet.commit();
  await workbook.commit();
}

/** SheetJS's writeFile needs its fs hook in ESM; write the buffer ourselves. bookType follows the extension unless given. */
function saveSheetJs(wb: XLSX.WorkBook, file: string, options: XLSX.WritingOptions = {}): void {
  writeFileSync(file, XLSX.write(wb, { type: 'buffer', bookType: file.endsWith('.xls') ? 'biff8' : 'xlsx', ...options }) as Buffer);
}

/** Producer of each corpus file, for the comparison's summary. */
const producers = new Map<string, string>();

async function buildCorpus(): Promise<void> {
  for (const date1904 of [false, true]) {
    const stem = date1904 ? 'sheetjs-1904' : 'sheetjs-1900';
    saveSheetJs(sheetJsFormats(date1904), join(dir, `${stem}.xlsx`));
    saveSheetJs(sheetJsFormats(date1904), join(dir, `${stem}.xls`), { bookType: 'biff8' });
    producers.set(`${stem}.xlsx`, 'SheetJS').set(`${stem}.xls`, 'SheetJS');
    await exceljsWorkbook(join(dir, `exceljs-${date1904 ? 1904 : 1900}.xlsx`), date1904);
    producers.set(`exceljs-${date1904 ? 1904 : 1900}.xlsx`, 'exceljs');
  }
  await exceljsInline(join(dir, 'exceljs-inline.xlsx'));
  producers.set('exceljs-inline.xlsx', 'exceljs');
  writeFileSync(join(dir, 'hand-cells.xlsx'), handCells());
  writeFileSync(join(dir, 'excel-1904.xlsx'), excel1904());
  writeFileSync(join(dir, 'hand-zero-negative.xlsx'), zeroAndNegativeSerials());
  writeFileSync(join(dir, 'poi-merged.xlsx'), valuesUnderMerges());
  writeFileSync(join(dir, 'hyperlinks.xlsx'), hyperlinkOnEmptyCell());
  producers.set('hyperlinks.xlsx', 'hand-written parts');
  producers.set('hand-cells.xlsx', 'hand-written parts').set('excel-1904.xlsx', 'hand-written parts').set('hand-zero-negative.xlsx', 'hand-written parts');
  producers.set('poi-merged.xlsx', 'hand-written parts');
}

/**
 * A hyperlink on an empty A1 (an Excel-made file in exceljs's tests has one): the cell stays
 * empty, as in Excel; openpyxl puts the link's target into it, which once read as a missing A1.
 */
function hyperlinkOnEmptyCell(): Buffer {
  const xml =
    `<worksheet ${NS}><sheetData><row r="1"><c r="A1" s="0"/><c r="B1" t="inlineStr"><is><t>site</t></is></c></row></sheetData>` +
    '<hyperlinks><hyperlink ref="A1" r:id="rL1" display="mail us"/><hyperlink ref="B1" r:id="rL2"/></hyperlinks></worksheet>';
  const rels =
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
    `<Relationship Id="rL1" Type="${REL}/hyperlink" Target="mailto:team@example.com" TargetMode="External"/>` +
    `<Relationship Id="rL2" Type="${REL}/hyperlink" Target="https://example.com/" TargetMode="External"/></Relationships>`;
  return handWorkbook([{ name: 'Links', xml }], { parts: [{ name: 'xl/sheets/_rels/s1.xml.rels', data: rels }] });
}

/**
 * Values stored under a merge outside its top-left cell, as Apache POI lets programs write them:
 * Excel shows only the top-left value. The merges follow 1,500 rows, so that a read of the first
 * rows stops before them and has to look them up.
 */
function valuesUnderMerges(): Buffer {
  let rows =
    '<row r="1"><c r="A1" t="inlineStr"><is><t>Title</t></is></c><c r="B1" t="inlineStr"><is><t>under the merge</t></is></c><c r="C1"><v>7</v></c></row>' +
    '<row r="2"><c r="A2"><v>1</v></c><c r="B2"><v>2</v></c></row><row r="3"><c r="A3"><v>3</v></c><c r="B3"><v>5</v></c></row>';
  for (let r = 4; r <= 1500; r++) rows += `<row r="${r}"><c r="A${r}"><v>${r}</v></c></row>`;
  const xml =
    `<worksheet ${NS}><dimension ref="A1:C1500"/><sheetData>${rows}</sheetData><mergeCells count="2"><mergeCell ref="A1:C1"/><mergeCell ` +
    `ref="B2:B3"/></mergeCells></worksheet>`;
  return handWorkbook([{ name: 'Merged', xml }]);
}

/** Styles whose cellXfs 1.. carry the given number formats (custom ids from 164). */
function stylesWith(...codes: string[]): string {
  const numFmts = codes.map((code, i) => `<numFmt numFmtId="${164 + i}" formatCode="${code.replace(/"/g, '&quot;')}"/>`).join('');
  const xfs = ['<xf numFmtId="0"/>', ...codes.map((_, i) => `<xf numFmtId="${164 + i}" applyNumberFormat="1"/>`)].join('');
  return `<styleSheet ${NS}><numFmts count="${codes.length}">${numFmts}</numFmts><cellXfs count="${codes.length + 1}">${xfs}</cellXfs></styleSheet>`;
}

/**
 * A 1904 workbook as Excel 2013 and later save it (Mac Excel's default system): after the real
 * <workbookPr date1904="1"/>, the extensions hold <x15:workbookPr chartTrackingRefBase="1"/>,
 * which once reset the date system to 1900 (every date 4 years and a day early).
 */
function excel1904(): Buffer {
  const workbookPr = '<fileVersion appName="xl" lastEdited="7" lowestEdited="7" rupBuild="10520"/><workbookPr date1904="1" defaultThemeVersion="166925"/>';
  const workbookEnd =
    '<calcPr calcId="191029"/><extLst><ext uri="{140A7094-0E35-4892-8432-C4D2E57EDEB5}" ' +
    'xmlns:x15="http://schemas.microsoft.com/office/spreadsheetml/2010/11/main">' +
    '<x15:workbookPr chartTrackingRefBase="1"/></ext></extLst>';
  const rows =
    '<row r="1"><c r="A1" t="inlineStr"><is><t>serial</t></is></c><c r="B1" t="inlineStr"><is><t>date</t></is></c><c r="C1" ' +
    't="inlineStr"><is><t>when</t></is></c></row>' +
    '<row r="2"><c r="A2"><v>1</v></c><c r="B2" s="1"><v>1</v></c><c r="C2" s="2"><v>0.5</v></c></row>' +
    '<row r="3"><c r="A3"><v>43830</v></c><c r="B3" s="1"><v>43830</v></c><c r="C3" s="2"><v>43830.75</v></c></row>';
  return handWorkbook([{ name: 'Mac', xml: worksheet(rows) }], { styles: stylesWith('yyyy\\-mm\\-dd;@', 'dd/mm/yyyy hh:mm'), workbookPr, workbookEnd });
}

/** Serial 0 in a date format (Excel shows 1900-01-00) and negative serials, which Excel shows as #####, in lone-part and elapsed formats. */
function zeroAndNegativeSerials(): Buffer {
  const rows =
    '<row r="1"><c r="A1" s="1"><v>0</v></c><c r="B1" s="2"><v>0</v></c><c r="C1" s="1"><v>0.25</v></c><c r="D1" s="5"><v>12.3</v></c></row>' +
    '<row r="2"><c r="A2" s="3"><v>-1.2</v></c><c r="B2" s="4"><v>-0.5</v></c><c r="C2" s="3"><v>2</v></c><c r="D2" s="6"><v>0.75</v></c><c r="E2" ' +
    's="7"><v>12.3</v></c></row>';
  return handWorkbook([{ name: 'Zero', xml: worksheet(rows) }], {
    styles: stylesWith('yyyy/mm/dd;@', 'dd/mm/yyyy hh:mm', 'yy', '[h]:mm:ss', 'h', 'h AM/PM', 'A/P'),
  });
}

/** The cells that once came out wrong: an empty <v/> on a shared-string cell, <is> without t, a <dxfs> numFmt reusing an id, 1904. */
function handCells(): Buffer {
  const styles =
    `<styleSheet ${NS}><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/></numFmts>` +
    '<cellXfs count="3"><xf numFmtId="0"/><xf numFmtId="164"/><xf numFmtId="46"/></cellXfs>' +
    '<dxfs count="1"><dxf><numFmt numFmtId="164" formatCode="0%"/></dxf></dxfs></styleSheet>';
  const sharedStrings =
    `<sst ${NS} count="3" uniqueCount="3"><si><t>Name</t></si><si><t/></si><si><r><t>rich ` +
    `</t></r><r><rPr><b/></rPr><t>text</t></r><rPh><t>ignored</t></rPh></si></sst>`;
  const rows =
    '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v></v></c><c r="D1" t="s"><v>2</v></c></row>' +
    '<row r="2"><c r="A2"><is><t>inline, no t</t></is></c><c r="B2" s="1"><v>1</v></c><c r="C2" s="2"><v>10.632</v></c><c r="D2"><v></v></c><c ' +
    'r="E2"><f>A9+1</f></c></row>';
  return handWorkbook([{ name: 'Cells', xml: worksheet(rows) }], { sharedStrings, styles, workbookPr: '<workbookPr date1904="1"/>' });
}

// ---------------------------------------------------------------- the independent reader

const PYTHONS = ['/usr/bin/python3', 'python3'];
/** A Python with openpyxl, or null (the comparison is then skipped, and says why). */
const python = PYTHONS.find((candidate) => spawnSync(candidate, ['-c', 'import openpyxl'], { stdio: 'ignore' }).status === 0) ?? null;
const soffice = ['/usr/bin/soffice', '/usr/bin/libreoffice'].find((path) => existsSync(path)) ?? null;

const DUMP_SCRIPT = String.raw`
import json, sys, datetime, openpyxl
out = {}
for path in sys.argv[1:]:
    try:
        values = openpyxl.load_workbook(path, data_only=True)
        formulas = openpyxl.load_workbook(path, data_only=False)
    except Exception as error:
        out[path] = {"error": str(error)}
        continue
    sheets = []
    for ws in values.worksheets:
        cells = []
        fws = formulas[ws.title]
        for row in ws.iter_rows():
            for c in row:
                v = c.value
                if v is None:
                    f = fws.cell(row=c.row, column=c.column).value
                    if isinstance(f, str) and f.startswith("="):
                        cells.append([c.row, c.column, "nocache", f, c.number_format])
                    continue
                if isinstance(v, bool): cells.append([c.row, c.column, "bool", v, c.number_format])
                elif isinstance(v, (int, float)): cells.append([c.row, c.column, "num", v, c.number_format])
                elif isinstance(v, datetime.datetime): cells.append([c.row, c.column, "datetime", v.isoformat(), c.number_format])
                elif isinstance(v, datetime.date): cells.append([c.row, c.column, "datetime", v.isoformat() + "T00:00:00", c.number_format])
                elif isinstance(v, datetime.time): cells.append([c.row, c.column, "time", v.isoformat(), c.number_format])
                elif isinstance(v, datetime.timedelta): cells.append([c.row, c.column, "timedelta", v.total_seconds(), c.number_format])
                elif c.hyperlink is not None and v in (c.hyperlink.target, c.hyperlink.display): cells.append([c.row, c.column, "linkstr", str(v), c.number_format])
                else: cells.append([c.row, c.column, "str", str(v), c.number_format])
        sheets.append({"name": ws.title, "cells": cells})
    out[path] = {"sheets": sheets}
print(json.dumps(out))
`;

type DumpCell = [number, number, string, string | number | boolean, string];
type Dump = Record<string, { error?: string; sheets?: Array<{ name: string; cells: DumpCell[] }> }>;

function readWithOpenpyxl(files: string[]): Dump {
  const script = join(dir, 'dump.py');
  writeFileSync(script, DUMP_SCRIPT);
  return JSON.parse(execFileSync(python!, [script, ...files], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })) as Dump;
}

/** read_sheet's grid: "row,column" → the text shown (hidden rows and columns included). */
async function grid(file: string, sheet: string): Promise<Map<string, string>> {
  const cells = new Map<string, string>();
  const text = await output({ path: file, action: 'read_sheet', sheet, show_hidden: true, end_row: 2000 });
  const rows = text.split('\n');
  const header = rows[1]!
    .split('\t')
    .slice(1)
    .map((letters) => XLSX.utils.decode_col(letters.replace('[hidden]', '')) + 1);
  for (const line of rows.slice(2, -1)) {
    const [rowText, ...fields] = line.split('\t');
    fields.forEach((field, i) => {
      if (field !== '') cells.set(`${parseInt(rowText!, 10)},${header[i]}`, field);
    });
  }
  return cells;
}

const seconds = (hms: string) => hms.split(':').reduce((total, part) => total * 60 + Number(part), 0);
/** A format showing only one part of a date or time ("d", "yy", "mmmm", "h AM/PM"): read_excel shows what Excel shows, openpyxl a number or a date. */
const lonePart = (format: string) => /^(\[\$-[0-9A-F]+\])?(d+|y+|m+|e+|h+|s+)?( ?(AM\/PM|A\/P))?(;@)?$/i.test(format.replace(/\\/g, ''));

/** Whether read_excel's text for a cell says the same as openpyxl's value. */
function agrees(shown: string | undefined, cell: DumpCell): boolean {
  const [, , type, value, format] = cell;
  switch (type) {
    case 'linkstr':
      // openpyxl fills an empty cell that has a hyperlink with the link's target; Excel shows it empty.
      return shown === undefined || shown === escapeCellText(String(value));
    case 'str':
      return shown === escapeCellText(String(value)) || (String(value) === '' && shown === undefined);
    case 'bool':
      return shown === (value ? 'TRUE' : 'FALSE');
    case 'num': {
      if (shown === undefined) return false;
      if (lonePart(format)) return true;
      if (shown.endsWith('%')) return Math.abs(Number(shown.slice(0, -1)) / 100 - Number(value)) <= 1e-12 * Math.max(1, Math.abs(Number(value)));
      return Number(shown) === Number(value) || Number(shown) === Number(Number(value).toPrecision(15));
    }
    case 'datetime': {
      if (shown === undefined) return false;
      const iso = String(value);
      if (/^\d{4}-\d\d-\d\d$/.test(shown)) return iso.startsWith(shown);
      if (/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(shown))
        return Math.abs(Date.parse(`${shown.replace(' ', 'T')}Z`) - Date.parse(`${iso.slice(0, 23)}Z`)) < 1000;
      if (/^\d\d:\d\d:\d\d$/.test(shown)) return Math.abs(seconds(shown) - seconds(iso.slice(11, 19))) <= 1;
      return lonePart(format);
    }
    case 'time':
      if (lonePart(format)) return shown !== undefined;
      // openpyxl reads serials under 1 as times of day; in a date format Excel shows day 0 (1900-01-00, or 1904-01-01) with them.
      if (/^(1900-01-00|1904-01-01)/.test(shown ?? ''))
        return shown!.length === 10 || Math.abs(seconds(shown!.slice(11)) - Math.round(seconds(String(value).slice(0, 8)))) <= 1;
      return shown !== undefined && Math.abs(seconds(shown) - Math.round(seconds(String(value).slice(0, 8)))) <= 1;
    case 'timedelta':
      // A negative elapsed time (##### in Excel) is shown as its number of days.
      if (shown !== undefined && /^-[\d.]+$/.test(shown)) return Number(shown) * 86_400 === Number(value);
      // [h]:mm:ss shows whole seconds, rounded; [mm]:ss likewise.
      return shown !== undefined && Math.abs(seconds(shown) - Number(value)) <= 0.5 + 1e-9;
    case 'nocache':
      return shown?.startsWith('=') === true && shown.endsWith('[formula, no cached value]');
    default:
      return false;
  }
}

interface Comparison {
  files: number;
  producers: Set<string>;
  cells: number;
  differences: string[];
  unreadable: string[];
  /** Workbooks where every cell agrees. */
  identical: number;
}

async function compareAll(files: string[]): Promise<Comparison> {
  const result: Comparison = { files: 0, producers: new Set(), cells: 0, differences: [], unreadable: [], identical: 0 };
  const dump = readWithOpenpyxl(files.map((f) => join(dir, f)));
  for (const file of files) {
    const entry = dump[join(dir, file)]!;
    if (entry.error !== undefined || !entry.sheets) {
      result.unreadable.push(`${file}: ${entry.error}`);
      continue;
    }
    result.files++;
    result.producers.add(producers.get(file) ?? 'unknown');
    const before = result.differences.length;
    for (const sheet of entry.sheets) {
      const shown = await grid(file, sheet.name);
      const expected = new Set<string>();
      for (const cell of sheet.cells) {
        const key = `${cell[0]},${cell[1]}`;
        expected.add(key);
        result.cells++;
        if (!agrees(shown.get(key), cell))
          result.differences.push(
            `${file} ${sheet.name}!${XLSX.utils.encode_cell({ r: cell[0] - 1, c: cell[1] - 1 })}: read_excel ${JSON.stringify(shown.get(key))}, openpyxl ` +
              `${JSON.stringify(cell[3])} (${cell[2]}, format ${cell[4]})`,
          );
      }
      for (const [key, text] of shown)
        if (!expected.has(key)) result.differences.push(`${file} ${sheet.name} ${key}: read_excel shows ${JSON.stringify(text)}, openpyxl nothing`);
    }
    if (result.differences.length === before) result.identical++;
  }
  return result;
}

beforeAll(async () => {
  await loadNumberFormats();
  dir = makeTempDir();
  await buildCorpus();
}, 60_000);

// ---------------------------------------------------------------- what users see

describe('values users see, exactly', () => {
  it('1904 and 1900 date systems give the same dates, elapsed times keep their days, locale prefixes and sections apply (.xlsx and .xls)', async () => {
    for (const file of ['sheetjs-1900.xlsx', 'sheetjs-1900.xls', 'sheetjs-1904.xlsx', 'sheetjs-1904.xls']) {
      const date1904 = file.includes('1904');
      const text = await output({ path: file, action: 'read_sheet' });
      const values = text
        .split('\n')
        .slice(2, -1)
        .map((line) => line.split('\t')[2]);
      // 45306 is 2024-01-15 counted from 1900, 2028-01-16 from 1904: each file's own system.
      expect(values, file).toEqual([
        'value',
        date1904 ? '2028-01-16' : '2024-01-15',
        // m/d/yy shows no time: the date alone.
        date1904 ? '2028-01-16' : '2024-01-15',
        date1904 ? '2019-02-28' : '2015-02-27',
        date1904 ? '2019-02-28' : '2015-02-27',
        date1904 ? '2028-03-01 13:45:00' : '2024-02-29 13:45:00',
        '18:00:00',
        '255:10:05',
        '36:00:00',
        '61:12',
        '12.5%',
        '-50%',
        '-1234.5',
        '42',
        '12345.678',
        '1234.5678',
        '0.3',
        '7',
        'tab\\there, line\\nbreak',
      ]);
    }
  });

  it(
    'hand-written cells: an empty shared string and an empty <v/> stay empty, <is> without t is read, <dxfs> formats do not leak, the footer counts the ' +
      'uncalculated formula',
    async () => {
      expect(await output({ path: 'hand-cells.xlsx', action: 'read_sheet' })).toBe(
        lines(
          'sheet "Cells"',
          'row\tA\tB\tC\tD\tE',
          '1\tName\t\t\trich text\t',
          '2\tinline, no t\t1904-01-02\t255:10:05\t\t=A9+1 [formula, no cached value]',
          '[rows 1-2 of 2; 1 formula without a cached value (the file was saved uncalculated: results unknown, not zero)]',
        ),
      );
    },
  );

  it('a 1904 workbook saved by Excel 2013 or later (an <x15:workbookPr> among its extensions) keeps the 1904 dates', async () => {
    expect(await output({ path: 'excel-1904.xlsx', action: 'read_sheet' })).toBe(
      lines(
        'sheet "Mac"',
        'row\tA\tB\tC',
        '1\tserial\tdate\twhen',
        '2\t1\t1904-01-02\t1904-01-01 12:00:00',
        '3\t43830\t2024-01-01\t2024-01-01 18:00:00',
        '[rows 1-3 of 3]',
      ),
    );
  });

  it(
    'serial 0 in a date format shows as Excel shows it (1900-01-00); negative serials, ##### in Excel, show as numbers, not as nothing; a lone hour shows ' +
      'as Excel shows it',
    async () => {
      expect(await output({ path: 'hand-zero-negative.xlsx', action: 'read_sheet' })).toBe(
        lines('sheet "Zero"', 'row\tA\tB\tC\tD\tE', '1\t1900-01-00\t1900-01-00 00:00:00\t1900-01-00\t7\t', '2\t-1.2\t-0.5\t00\t6 PM\tA', '[rows 1-2 of 2]'),
      );
    },
  );

  it("Excel 2.x-4.0 workbooks (BIFF records without an OLE2 container) are read, their text in the workbook's code page", async () => {
    // SheetJS writes BIFF2 as Excel 2.x did: a bare record stream.
    saveSheetJs(sheetJsFormats(false), join(dir, 'biff2.xls'), { bookType: 'biff2' });
    expect((await output({ path: 'biff2.xls', action: 'read_sheet', end_row: 2 })).split('\n').slice(2, 4)).toEqual([
      '1\tformat\tvalue',
      '2\tyyyy-mm-dd\t2024-01-15',
    ]);
    // A BIFF4 sheet by hand: BOF, CODEPAGE 1253 (Greek), one LABEL in that code page, EOF.
    const record = (id: number, payload: Buffer) => Buffer.concat([Buffer.from([id & 0xff, id >> 8, payload.length & 0xff, payload.length >> 8]), payload]);
    const words = (...values: number[]) => Buffer.from(new Uint16Array(values).buffer);
    const greek = Buffer.from([0xcf, 0xea, 0xf4, 0x20, 0x85, 0x20, 0x80]); // "Οκτ … €" in code page 1253
    const biff4 = Buffer.concat([
      record(0x0409, words(0, 0x10, 0)),
      record(0x0042, words(1253)),
      record(0x0204, Buffer.concat([words(0, 0, 0, greek.length), greek])),
      record(0x000a, Buffer.alloc(0)),
    ]);
    writeFileSync(join(dir, 'greek-biff4.xls'), biff4);
    expect(await output({ path: 'greek-biff4.xls', action: 'read_sheet' })).toBe(lines('sheet "Sheet1"', 'row\tA', '1\tΟκτ … €', '[rows 1-1 of 1]'));
  });

  it('values stored under a merge outside its top-left cell are hidden, as in Excel, also when reading stops before the merges (.xlsx and .xls)', async () => {
    for (const end_row of [4, 2000]) {
      const text = (await output({ path: 'poi-merged.xlsx', action: 'read_sheet', end_row })).split('\n');
      expect(text.slice(0, 6)).toEqual(['sheet "Merged"', 'row\tA\tB', '1\tTitle\t', '2\t1\t2', '3\t3\t', '4\t4\t']);
    }
    const ws = XLSX.utils.aoa_to_sheet([
      ['Title', 'under the merge', 7],
      [1, 2],
      [3, 5],
    ]);
    ws['!merges'] = [XLSX.utils.decode_range('A1:C1'), XLSX.utils.decode_range('B2:B3')];
    const wb = XLSX.utils.book_new();
    XLSX.utils.book_append_sheet(wb, ws, 'Merged');
    saveSheetJs(wb, join(dir, 'merged.xls'));
    expect(await output({ path: 'merged.xls', action: 'read_sheet' })).toBe(
      lines('sheet "Merged"', 'row\tA\tB', '1\tTitle\t', '2\t1\t2', '3\t3\t', '[rows 1-3 of 3]'),
    );
  });

  it('a hyperlink on an empty cell leaves it empty; on a value, the value shows', async () => {
    expect(await output({ path: 'hyperlinks.xlsx', action: 'read_sheet' })).toBe(lines('sheet "Links"', 'row\tA\tB', '1\t\tsite', '[rows 1-1 of 1]'));
  });

  it('exceljs files: rich text joined, 1904 dates, a formula with and without its result', async () => {
    for (const system of ['1900', '1904']) {
      expect(await output({ path: `exceljs-${system}.xlsx`, action: 'read_sheet' })).toBe(
        lines(
          'sheet "Data"',
          'row\tA\tB\tC\tD\tE',
          '1\tname\twhen\tamount\trich\tformula',
          // The column's format shows hours and minutes: midnight is shown.
          '2\tAna\t2024-02-29 00:00:00\t12.5\tbold plain\t25',
          '3\tBo\t1904-01-02 13:45:00\t-0.1\tx\t=C3*2 [formula, no cached value]',
          '[rows 1-3 of 3; 1 formula without a cached value (the file was saved uncalculated: results unknown, not zero)]',
        ),
      );
    }
    expect(await output({ path: 'exceljs-inline.xlsx', action: 'read_sheet', end_row: 5 })).toBe(
      lines('sheet "Inline"', 'row\tA\tB', '1\tfirst\tcell', '2\trich inline\t3', '[rows 1-2 of 2]'),
    );
  });

  it('chart, dialog and macro sheets are listed with their kind; a chart sheet has no cells to read', async () => {
    const file = handWorkbook([
      { name: 'Chart1', type: 'chartsheet', xml: `<chartsheet ${NS}><sheetPr/></chartsheet>` },
      { name: 'Data', xml: worksheet('<row r="1"><c r="A1"><v>5</v></c></row>') },
      { name: 'Dialog1', type: 'dialogsheet', xml: `<dialogsheet ${NS}/>`, state: 'hidden' },
      {
        name: 'Macro1',
        type: 'xlMacrosheet',
        xml:
          `<xm:macrosheet xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"><xm:sheetData><xm:row r="1"><xm:c r="A1" ` +
          `t="str"><xm:f>HALT()</xm:f><xm:v>TRUE</xm:v></xm:c></xm:row></xm:sheetData></xm:macrosheet>`,
      },
    ]);
    writeFileSync(join(dir, 'kinds.xlsm'), file);
    expect(await output({ path: 'kinds.xlsm', action: 'list_sheets' })).toBe(
      lines(
        '4 sheets in kinds.xlsm',
        '#\tsheet\tvisibility\tused range',
        '1\tChart1\tvisible\tnone: a chart sheet has no cells',
        '2\tData\tvisible\tunknown (see get_info)',
        '3\tDialog1\thidden\tnone: a dialog sheet has no cells',
        '4\tMacro1\tvisible\tunknown (see get_info) (macro sheet)',
      ),
    );
    // The first sheet with cells is the default, not the chart sheet in front of it.
    expect(await output({ path: 'kinds.xlsm', action: 'read_sheet' })).toBe(lines('sheet "Data"', 'row\tA', '1\t5', '[rows 1-1 of 1]'));
    expect(await output({ path: 'kinds.xlsm', action: 'read_sheet', sheet: 'Macro1' })).toBe(lines('sheet "Macro1"', 'row\tA', '1\tTRUE', '[rows 1-1 of 1]'));
    const chart = await run({ path: 'kinds.xlsm', action: 'read_sheet', sheet: 'Chart1' });
    expect(chart.ok).toBe(false);
    expect(chart.output).toBe('kinds.xlsm: sheet "Chart1" is a chart sheet: it has no cells to read');
    expect(await output({ path: 'kinds.xlsm', action: 'get_info', sheet: '1' })).toBe(lines('sheet 1 "Chart1" (visible)', '  a chart sheet: no cells'));
  });

  it(
    "SpreadsheetML 2003, HTML and CSV named .xls are read and named; as .xlsx they are refused with what they are, and so is Excel's ~$ lock " + 'file',
    async () => {
      const wb = sheetJsFormats(false);
      saveSheetJs(wb, join(dir, 'xml2003.xls'), { bookType: 'xlml' });
      saveSheetJs(wb, join(dir, 'table.xls'), { bookType: 'html' });
      writeFileSync(join(dir, 'export.xls'), '\uFEFFid;name;when\n007;Ana;1/2/2020\n8;"Bo; Jr";2020-01-03\n');
      expect(await output({ path: 'xml2003.xls', action: 'list_sheets' })).toBe(
        lines(
          '1 sheet in xml2003.xls (a SpreadsheetML 2003 XML workbook named .xls, not a binary workbook)',
          '#\tsheet\tvisibility\tused range',
          '1\tFormats\tvisible\tA1:B19',
        ),
      );
      const xml = (await output({ path: 'xml2003.xls', action: 'read_sheet' })).split('\n');
      expect(xml.slice(2, 4)).toEqual(['1\tformat\tvalue', '2\tyyyy-mm-dd\t2024-01-15']);
      expect(xml[9]).toBe('8\t[h]:mm:ss\t255:10:05');
      expect((await output({ path: 'table.xls', action: 'list_sheets' })).split('\n')[0]).toBe(
        '1 sheet in table.xls (an HTML table named .xls, not a binary workbook)',
      );
      // Delimited text is shown as written: no guessed numbers or dates (007 stays 007).
      expect(await output({ path: 'export.xls', action: 'read_sheet' })).toBe(
        lines('sheet "Sheet1"', 'row\tA\tB\tC', '1\tid\tname\twhen', '2\t007\tAna\t1/2/2020', '3\t8\tBo; Jr\t2020-01-03', '[rows 1-3 of 3]'),
      );
      // Excel's lock file beside an open workbook: a length byte, the user's name, spaces.
      writeFileSync(join(dir, '~$port.xlsx'), Buffer.concat([Buffer.from([8]), Buffer.from('Ana Lima'), Buffer.alloc(156, 0x20)]));
      expect((await run({ path: '~$port.xlsx', action: 'list_sheets' })).output).toBe(
        '~$port.xlsx: not a workbook: a file named ~$… is the lock file Excel keeps while someone has the workbook open; read "port.xlsx" (its name may be ' +
          'cut at the start)',
      );
      writeFileSync(join(dir, 'page.xlsx'), '<html><body><table><tr><td>1</td></tr></table></body></html>');
      const refused = await run({ path: 'page.xlsx', action: 'list_sheets' });
      expect(refused.output).toBe(
        'page.xlsx: not a valid Excel file: this is an HTML table, not the zip archive an .xlsx file is (save it as .xlsx, or name it .xls)',
      );
    },
  );
});

// ---------------------------------------------------------------- the independent reader

describe.skipIf(python === null)('cell by cell against openpyxl', () => {
  it('every cell of every .xlsx in the corpus (and LibreOffice conversions when installed) reads the same', async () => {
    // openpyxl itself fails on hand-cells.xlsx (int('') on its empty <v/>): its LibreOffice re-save is compared below instead.
    const files = readdirSync(dir).filter((f) => f.endsWith('.xlsx') && producers.has(f) && f !== 'hand-cells.xlsx');
    const comparison = await compareAll(files);
    console.log(
      `read_excel vs openpyxl: ${comparison.files} workbooks from ${comparison.producers.size} producers (${[...comparison.producers].join(', ')}), ` +
        `${comparison.identical} identical, ${comparison.cells} cells, ${comparison.differences.length} ` +
        `differences${comparison.unreadable.length ? `; openpyxl could not read ${comparison.unreadable.join('; ')}` : ''}`,
    );
    expect(comparison.unreadable).toEqual([]);
    expect(comparison.differences).toEqual([]);
    expect(comparison.cells).toBeGreaterThan(80);
  });
});

describe.skipIf(python === null || soffice === null)('LibreOffice-written workbooks against openpyxl', () => {
  it('LibreOffice converts the corpus (.xls and .xlsx) to .xlsx and .xls; each reads the same as openpyxl reads the .xlsx', async () => {
    const out = join(dir, 'libreoffice');
    mkdirSync(out, { recursive: true });
    const sources = [
      'sheetjs-1900.xls',
      'sheetjs-1904.xls',
      'exceljs-1900.xlsx',
      'exceljs-1904.xlsx',
      'hand-cells.xlsx',
      'excel-1904.xlsx',
      'poi-merged.xlsx',
    ].map((f) => join(dir, f));
    const profile = `-env:UserInstallation=file://${join(dir, 'lo-profile')}`;
    for (const target of ['xlsx', 'xls']) {
      const converted = spawnSync(soffice!, [profile, '--headless', '--convert-to', target, '--outdir', join(out, target), ...sources], {
        encoding: 'utf8',
        timeout: 240_000,
      });
      expect(converted.status, converted.stderr).toBe(0);
    }
    const names: string[] = [];
    for (const source of sources) {
      const stem = source
        .split('/')
        .pop()!
        .replace(/\.xlsx?$/, '');
      for (const target of ['xlsx', 'xls']) {
        const name = `lo-${stem}.${target}`;
        const from = join(out, target, `${stem}.${target}`);
        expect(existsSync(from), from).toBe(true);
        writeFileSync(join(dir, name), execFileSync('cat', [from]));
        producers.set(name, 'LibreOffice');
        if (target === 'xlsx') names.push(name);
      }
    }
    const comparison = await compareAll(names);
    console.log(
      `read_excel vs openpyxl on LibreOffice files: ${comparison.files} workbooks, ${comparison.identical} identical, ${comparison.cells} cells, ` +
        `${comparison.differences.length} differences`,
    );
    expect(comparison.differences).toEqual([]);
    // The 1904 workbook stays in its date system through LibreOffice, as .xlsx (date1904) and .xls (DATEMODE).
    for (const name of ['lo-excel-1904.xlsx', 'lo-excel-1904.xls'])
      expect((await output({ path: name, action: 'read_sheet' })).split('\n')[3], name).toBe('2\t1\t1904-01-02\t1904-01-01 12:00:00');
    // LibreOffice's .xls of the same workbook shows what its .xlsx shows.
    for (const source of sources) {
      const stem = source
        .split('/')
        .pop()!
        .replace(/\.xlsx?$/, '');
      const sheets = (await output({ path: `lo-${stem}.xlsx`, action: 'list_sheets' }))
        .split('\n')
        .slice(2)
        .map((line) => line.split('\t')[1]!);
      for (const sheet of sheets) {
        const asXlsx = (await output({ path: `lo-${stem}.xlsx`, action: 'read_sheet', sheet })).split('\n').slice(0, -1);
        const asXls = (await output({ path: `lo-${stem}.xls`, action: 'read_sheet', sheet })).split('\n').slice(0, -1);
        expect(asXls, `${stem} ${sheet}`).toEqual(asXlsx);
      }
    }
  }, 300_000);
});

if (python === null) {
  describe('cell by cell against openpyxl', () => {
    it.skip('skipped: no Python with openpyxl (apt-get install -y python3-openpyxl)', () => {});
  });
}
if (soffice === null) {
  describe('LibreOffice-written workbooks', () => {
    it.skip('skipped: LibreOffice is not installed (apt-get install -y libreoffice-calc-nogui)', () => {});
  });
}

// ---------------------------------------------------------------- hostile files, in a child process with a small heap

describe('zip bombs and hostile parts end with a clear error in bounded memory and time', () => {
  /** The CLI with a 160 MB heap: a reader that grew with the bomb would die of "heap out of memory" (exit 134), not exit 1 with a message. */
  async function refuse(file: string, action: string, env: Record<string, string> = {}) {
    const result = await runQuarry(['tool', 'read_excel', '--args', JSON.stringify({ path: file, action })], {
      cwd: dir,
      env: { NODE_OPTIONS: '--max-old-space-size=160', ...env },
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(1);
    return (result.stdout + result.stderr).trim();
  }

  it('a workbook.xml that inflates to 200 MB: refused from its declared size, and while inflating when the size lies', async () => {
    const bomb = Buffer.alloc(200 * 1024 * 1024, 0x20);
    const parts = (declaredSize?: number) =>
      zip([
        {
          name: '_rels/.rels',
          data:
            `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r1" Type="${REL}/officeDocument" ` +
            `Target="xl/workbook.xml"/></Relationships>`,
        },
        { name: 'xl/workbook.xml', data: bomb, declaredSize },
      ]);
    writeFileSync(join(dir, 'bomb-honest.xlsx'), parts());
    writeFileSync(join(dir, 'bomb-lying.xlsx'), parts(1000));
    expect(await refuse('bomb-honest.xlsx', 'list_sheets')).toBe(
      'bomb-honest.xlsx: part xl/workbook.xml inflates past 64 MB, more than any real workbook part (a damaged file or a zip bomb); not read',
    );
    expect(await refuse('bomb-lying.xlsx', 'list_sheets')).toBe(
      'bomb-lying.xlsx: part xl/workbook.xml inflates past the size the zip directory declares for it (a damaged file or a zip bomb); not read',
    );
  }, 120_000);

  it('one 40-million-character cell value and one 40-million-character attribute', async () => {
    const huge = 'x'.repeat(40 * 1024 * 1024);
    writeFileSync(join(dir, 'bomb-text.xlsx'), handWorkbook([{ name: 'S', xml: worksheet(`<row r="1"><c r="A1" t="str"><v>${huge}</v></c></row>`) }]));
    writeFileSync(join(dir, 'bomb-attribute.xlsx'), handWorkbook([{ name: 'S', xml: worksheet(`<row r="1"><c r="A1" s="${huge}"><v>1</v></c></row>`) }]));
    for (const file of ['bomb-text.xlsx', 'bomb-attribute.xlsx']) {
      expect(await refuse(file, 'read_sheet')).toBe(
        `${file}: part xl/sheets/s1.xml holds a text or tag longer than 16 M characters (a damaged file or a zip bomb); not read`,
      );
    }
  }, 120_000);

  it('one rich-text string of 200,000 runs is kept bounded and shown cut', async () => {
    const runs = '<r><t>abcdefghij</t></r>'.repeat(200_000);
    writeFileSync(
      join(dir, 'many-runs.xlsx'),
      handWorkbook([{ name: 'S', xml: worksheet('<row r="1"><c r="A1" t="s"><v>0</v></c></row>') }], { sharedStrings: `<sst ${NS}><si>${runs}</si></sst>` }),
    );
    const text = await output({ path: 'many-runs.xlsx', action: 'read_sheet' });
    expect(text.split('\n')[2]).toBe(`1\t${'abcdefghij'.repeat(30)}…[1048576 chars]`);
  });

  it('a zip with two parts of one name is refused (readers disagree on which one counts)', async () => {
    const sheet = (value: string) => ({ name: 'xl/sheets/s1.xml', data: worksheet(`<row r="1"><c r="A1" t="inlineStr"><is><t>${value}</t></is></c></row>`) });
    writeFileSync(join(dir, 'twin-parts.xlsx'), handWorkbook([{ name: 'S', xml: worksheet('') }], { parts: [sheet('second'), sheet('third')] }));
    const result = await run({ path: 'twin-parts.xlsx', action: 'read_sheet' });
    expect(result.output).toBe(
      'twin-parts.xlsx: the zip holds two parts named xl/sheets/s1.xml (a damaged or crafted file: readers disagree on which one counts); not read',
    );
  });

  it('a row of 20,000 cells is refused as damaged', async () => {
    writeFileSync(join(dir, 'wide-row.xlsx'), handWorkbook([{ name: 'S', xml: worksheet(`<row r="1">${'<c><v>1</v></c>'.repeat(20_000)}</row>`) }]));
    const result = await run({ path: 'wide-row.xlsx', action: 'get_info' });
    expect(result.output).toBe('wide-row.xlsx: row 1 holds more than 16,384 cells, more than Excel allows (a damaged or hostile file)');
  });

  it('a hostile shared-strings part (3 million tiny strings, the last one used) and a sheet of 1 million tiny rows stop at the time limit', async () => {
    const strings = `<sst ${NS}>${'<si><t>a</t></si>'.repeat(3_000_000)}</sst>`;
    writeFileSync(
      join(dir, 'hostile-strings.xlsx'),
      handWorkbook([{ name: 'S', xml: worksheet('<row r="1"><c r="A1" t="s"><v>2999999</v></c></row>') }], { sharedStrings: strings }),
    );
    expect(await refuse('hostile-strings.xlsx', 'read_sheet', { QUARRY_EXCEL_SECONDS: '0.5' })).toMatch(
      /^hostile-strings\.xlsx: gave up reading part xl\/sharedStrings\.xml after 0\.5 s \(\d+ MB inflated so far\), the time limit of one read_excel call \(QUARRY_EXCEL_SECONDS\); read a smaller row range$/,
    );
    writeFileSync(join(dir, 'tiny-rows.xlsx'), handWorkbook([{ name: 'S', xml: worksheet('<row><c><v>1</v></c></row>'.repeat(1_000_000)) }]));
    expect(await refuse('tiny-rows.xlsx', 'get_info', { QUARRY_EXCEL_SECONDS: '0.5' })).toMatch(
      /^tiny-rows\.xlsx: gave up reading part xl\/sheets\/s1\.xml after 0\.5 s/,
    );
    // Without the limit both finish, within the small heap: only the strings used are kept.
    const full = await runQuarry(['tool', 'read_excel', '--args', JSON.stringify({ path: 'hostile-strings.xlsx', action: 'read_sheet' })], {
      cwd: dir,
      env: { NODE_OPTIONS: '--max-old-space-size=160' },
      timeoutMs: 120_000,
    });
    expect(full.code, full.stderr).toBe(0);
    expect(full.stdout).toContain('1\ta\n');
  }, 240_000);

  it('a bad QUARRY_EXCEL_SECONDS is a configuration error', async () => {
    const result = await runQuarry(['tool', 'read_excel', '--args', JSON.stringify({ path: 'hand-cells.xlsx', action: 'read_sheet' })], {
      cwd: dir,
      env: { QUARRY_EXCEL_SECONDS: 'soon' },
    });
    expect(result.code).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('QUARRY_EXCEL_SECONDS must be a positive number of seconds, got "soon"');
  });
});
