#!/usr/bin/env node
/**
 * Runs read_excel over directories of real workbooks and compares every cell it shows with an
 * independent reader: openpyxl for .xlsx/.xlsm, xlrd for .xls (Debian's python3-openpyxl and
 * python3-xlrd). The corpora are other projects' test files (Apache POI, SheetJS, ClosedXML,
 * calamine, exceljs, xlrd, excelize, tealeg/xlsx, ...), not part of this repository: the script
 * reads them where they are, one directory a producer or project.
 *
 *   npm run build
 *   node scripts/excel-corpus.mjs DIR [DIR...] [--dist PATH] [--show N] [--json OUT]
 *
 * --dist measures another build (a checkout's dist/); --show prints N differences a workbook;
 * --json writes the per-workbook results. Rows 1-2,000 of every sheet are compared (all their
 * columns, 50 at a time, hidden ones included). Where the two readers differ by design (Excel's
 * display against a Python value) the comparison accepts both: lone date parts (`yy` shows `24`),
 * elapsed times, serial 0 as 1900-01-00, negative serials (##### in Excel) as numbers, openpyxl
 * putting a hyperlink's target into an empty cell and leaving _xHHHH_ escapes undecoded.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals: directories } = parseArgs({
  allowPositionals: true,
  options: { dist: { type: 'string' }, show: { type: 'string', default: '3' }, json: { type: 'string' } },
});
const dist = resolve(values.dist ?? new URL('../dist', import.meta.url).pathname);
const show = Number(values.show);
if (directories.length === 0) {
  console.error('usage: node scripts/excel-corpus.mjs DIR [DIR...] [--dist PATH] [--show N] [--json OUT]');
  process.exit(2);
}
const MAX_ROW = 2000;

// ---------------------------------------------------------------- read_excel, in process

const { ToolRegistry } = await import(`${dist}/tools/core/registry.js`);
const { readExcelTool } = await import(`${dist}/tools/excel/tool.js`);
const { LocalBackend } = await import(`${dist}/backends/local.js`);
const { loadProfile } = await import(`${dist}/profiles/load.js`);
// SheetJS reports formulas it cannot resolve on the console: not this script's output.
console.error = () => {};
const registry = new ToolRegistry();
registry.register(readExcelTool);
const profile = loadProfile('readonly');
const columnNumber = (letters) => [...letters].reduce((n, ch) => n * 26 + ch.charCodeAt(0) - 64, 0);

/** Every sheet's grid as read_excel shows it: {sheet: {"row,column": text}}, or {error}. */
async function readExcel(file) {
  const call = (action) =>
    registry.run(
      'read_excel',
      { path: basename(file), ...action },
      { workingDir: dirname(file), backend: new LocalBackend(), profile, signal: new AbortController().signal },
    );
  const started = performance.now();
  const list = await call({ action: 'list_sheets' });
  if (!list.ok) return { error: list.output };
  const info = performance.now();
  await call({ action: 'get_info' });
  const infoMs = performance.now() - info;
  const sheets = {};
  for (const line of list.output.split('\n').slice(2)) {
    const fields = line.split('\t');
    const name = fields.slice(1, -2).join('\t');
    if (fields[fields.length - 1].startsWith('none')) continue;
    const cells = (sheets[name] = {});
    // Pages of 2,000 rows, fewer when the output is cut; then the next window of 50 columns.
    let column = 'A';
    let page = MAX_ROW;
    let row = 1;
    let nextColumn = null;
    for (let guard = 0; guard < 5000 && column; guard++) {
      const result = await call({
        action: 'read_sheet',
        sheet: name,
        show_hidden: true,
        start_row: row,
        end_row: Math.min(MAX_ROW, row + page - 1),
        start_column: column,
      });
      if (!result.ok) break;
      if (result.output.includes('[output cut:') && page > 1) {
        page = Math.max(1, Math.floor(page / 10));
        continue;
      }
      const lines = result.output.split('\n');
      if (lines.length < 3) break; // an empty sheet
      const header = lines[1]
        .split('\t')
        .slice(1)
        .map((letters) => columnNumber(letters.replace('[hidden]', '')));
      for (const text of lines.slice(2, -1)) {
        const [rowText, ...fields] = text.split('\t');
        fields.forEach((field, i) => {
          if (field !== '') cells[`${parseInt(rowText, 10)},${header[i]}`] = field;
        });
      }
      const footer = lines[lines.length - 1];
      const columns = /call read_excel with start_column=([A-Z]+)/.exec(footer);
      if (columns && (!nextColumn || columnNumber(columns[1]) < columnNumber(nextColumn))) nextColumn = columns[1];
      const rows = /more rows: call read_excel with start_row=(\d+)/.exec(footer);
      if (page < MAX_ROW && rows && Number(rows[1]) <= MAX_ROW) {
        row = Number(rows[1]);
        continue;
      }
      [column, nextColumn, row] = [nextColumn, null, 1];
    }
  }
  return { sheets, infoMs, totalMs: performance.now() - started };
}

// ---------------------------------------------------------------- the independent reader

const REFERENCE = String.raw`
import json, re, sys, datetime, signal
MAXROW = int(sys.argv[1])
def record(r, c, v, fmt):
    if isinstance(v, bool): return [r, c, "bool", v, fmt]
    if isinstance(v, (int, float)): return [r, c, "num", v if v == v else None, fmt]
    if isinstance(v, datetime.datetime): return [r, c, "datetime", v.isoformat(), fmt]
    if isinstance(v, datetime.date): return [r, c, "datetime", v.isoformat() + "T00:00:00", fmt]
    if isinstance(v, datetime.time): return [r, c, "time", v.isoformat(), fmt]
    if isinstance(v, datetime.timedelta): return [r, c, "timedelta", v.total_seconds(), fmt]
    return [r, c, "str", str(v), fmt]
def with_openpyxl(path):
    import openpyxl
    values = openpyxl.load_workbook(path, data_only=True)
    formulas = openpyxl.load_workbook(path, data_only=False)
    sheets = []
    for ws in values.worksheets:
        cells, fws = [], formulas[ws.title]
        for row in ws.iter_rows(max_row=MAXROW):
            for c in row:
                if c.value is None:
                    f = fws.cell(row=c.row, column=c.column).value
                    if isinstance(f, str) and f.startswith("="): cells.append([c.row, c.column, "nocache", f, c.number_format])
                    continue
                rec = record(c.row, c.column, c.value, c.number_format)
                if c.hyperlink is not None and isinstance(c.value, str) and c.value in (c.hyperlink.target, c.hyperlink.display, c.hyperlink.location): rec[2] = "linkstr"
                cells.append(rec)
                if len(cells) > 300000: raise Exception("more than 300,000 cells: not compared")
        sheets.append({"name": ws.title, "cells": cells})
    return {"sheets": sheets}
def with_xlrd(path):
    import xlrd
    book = xlrd.open_workbook(path, formatting_info=True, logfile=open("/dev/null", "w"))
    sheets = []
    for sh in book.sheets():
        if min(sh.nrows, MAXROW) * sh.ncols > 3000000: raise Exception("too large: not compared")
        cells = []
        for r in range(min(sh.nrows, MAXROW)):
            for c in range(sh.ncols):
                cell = sh.cell(r, c)
                try: fmt = book.format_map[book.xf_list[cell.xf_index].format_key].format_str
                except Exception: fmt = "General"
                t, v = cell.ctype, cell.value
                if t == 1: cells.append([r + 1, c + 1, "str", v, fmt])
                elif t == 2: cells.append([r + 1, c + 1, "num", v if v == v else None, fmt])
                elif t == 3:
                    if re.search(r"\[(h+|m+|s+)\]", fmt, re.I): cells.append([r + 1, c + 1, "timedelta", v * 86400, fmt])
                    elif 0 <= v < 1: cells.append([r + 1, c + 1, "time", (datetime.datetime(2000, 1, 1) + datetime.timedelta(seconds=round(v * 86400))).time().isoformat(), fmt])
                    else:
                        try: cells.append([r + 1, c + 1, "datetime", xlrd.xldate.xldate_as_datetime(v, book.datemode).isoformat(), fmt])
                        except Exception: cells.append([r + 1, c + 1, "num", v, fmt])
                elif t == 4: cells.append([r + 1, c + 1, "bool", bool(v), fmt])
                elif t == 5: cells.append([r + 1, c + 1, "str", xlrd.error_text_from_code.get(v, "#ERR"), fmt])
        sheets.append({"name": sh.name, "cells": cells})
    return {"sheets": sheets}
def on_alarm(*_): raise Exception("timeout: not compared")
signal.signal(signal.SIGALRM, on_alarm)
out = {}
for path in sys.argv[3:]:
    signal.alarm(60)
    try:
        entry = with_xlrd(path) if path.lower().endswith(".xls") else with_openpyxl(path)
        out[path] = entry if len(json.dumps(entry)) < 30000000 else {"error": "too large: not compared"}
    except BaseException as error:
        out[path] = {"error": type(error).__name__ + ": " + str(error)[:200]}
    signal.alarm(0)
json.dump(out, open(sys.argv[2], "w"))
`;

// ---------------------------------------------------------------- comparing

const controls = (text) =>
  text
    .replace(/[\t\n\r]/g, (c) => (c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))
    .replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
const decoded = (text) => text.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
const cut = (text) => (Array.from(text).length <= 300 ? text : `${Array.from(text).slice(0, 300).join('')}…[${Array.from(text).length} chars]`);
const seconds = (hms) => hms.split(':').reduce((total, part) => total * 60 + Number(part), 0);
const lonePart = (format) => /^(\[\$-[0-9A-F]+\])?(d+|y+|m+|e+|h+|s+)?( ?(AM\/PM|A\/P))?(;.*)?$/i.test(format.replace(/\\/g, ''));

function agrees(shown, [, , type, value, format]) {
  switch (type) {
    case 'linkstr':
    case 'str':
      if (type === 'linkstr' && shown === undefined) return true;
      return shown === cut(controls(decoded(String(value)))) || shown === cut(controls(String(value))) || (String(value) === '' && shown === undefined);
    case 'bool':
      return shown === (value ? 'TRUE' : 'FALSE');
    case 'num': {
      if (shown === undefined) return value === null;
      if (value === null || lonePart(format)) return true;
      if (/\[(h+|m+|s+)\]/i.test(format) && /^\d+(:\d\d)*$/.test(shown)) return Math.abs(seconds(shown) - Number(value) * 86400) < 86400;
      if (shown.endsWith('%')) return Math.abs(Number(shown.slice(0, -1)) / 100 - value) <= 1e-12 * Math.max(1, Math.abs(value));
      return Number(shown) === value || Number(shown) === Number(value.toPrecision(15));
    }
    case 'datetime': {
      if (shown === undefined) return false;
      if (/^\d{4}-\d\d-\d\d$/.test(shown)) return value.startsWith(shown);
      if (/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(shown))
        return Math.abs(Date.parse(`${shown.replace(' ', 'T')}Z`) - Date.parse(`${value.slice(0, 23)}Z`)) < 1000;
      if (/^\d\d:\d\d:\d\d$/.test(shown)) return Math.abs(seconds(shown) - seconds(value.slice(11, 19))) <= 1;
      if (value < '1900' && /^-[\d.]+(e-?\d+)?$/.test(shown)) return true;
      return lonePart(format);
    }
    case 'time':
      if (shown === undefined) return false;
      if (lonePart(format)) return true;
      if (/^(1900-01-00|1904-01-01)/.test(shown))
        return shown.length === 10 || Math.abs(seconds(shown.slice(11)) - Math.round(seconds(value.slice(0, 8)))) <= 1;
      return Math.abs(seconds(shown) - Math.round(seconds(value.slice(0, 8)))) <= 1;
    case 'timedelta':
      if (shown !== undefined && /^-[\d.]+$/.test(shown)) return Math.abs(Number(shown) * 86400 - value) < 1e-6 * Math.max(1, Math.abs(value));
      if (shown !== undefined && /^\d+$/.test(shown) && /\[(h+|m+|s+)\]/i.test(format)) {
        const unit = /\[h+\]/i.test(format) ? 3600 : /\[m+\]/i.test(format) ? 60 : 1;
        return Math.abs(Number(shown) * unit - value) < unit;
      }
      return shown !== undefined && Math.abs(seconds(shown) - value) <= 0.5 + 1e-9;
    case 'nocache':
      return shown?.endsWith('[formula, no cached value]');
    default:
      return false;
  }
}

const cellName = (row, column) => {
  let letters = '';
  for (let n = column; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(65 + ((n - 1) % 26)) + letters;
  return `${letters}${row}`;
};

function differences(mine, reference) {
  if (mine.error) return [`read_excel: ${mine.error}`];
  const found = [];
  const single = reference.sheets.length === 1 && Object.keys(mine.sheets).length === 1;
  for (const sheet of reference.sheets) {
    const shown = mine.sheets[sheet.name] ?? (single ? Object.values(mine.sheets)[0] : undefined);
    if (!shown) {
      if (sheet.cells.length > 0) found.push(`sheet ${sheet.name}: not shown (${sheet.cells.length} cells)`);
      continue;
    }
    const expected = new Set();
    for (const cell of sheet.cells) {
      const key = `${cell[0]},${cell[1]}`;
      expected.add(key);
      if (!agrees(shown[key], cell))
        found.push(
          `${sheet.name}!${cellName(cell[0], cell[1])}: read_excel ${JSON.stringify(shown[key])}, reference ${JSON.stringify(cell[3])} (${cell[2]}, format ` +
            `${cell[4]})`,
        );
    }
    for (const [key, text] of Object.entries(shown)) {
      const [row, column] = key.split(',').map(Number);
      if (!expected.has(key)) found.push(`${sheet.name}!${cellName(row, column)}: read_excel shows ${JSON.stringify(text)}, the reference nothing`);
    }
  }
  return found;
}

// ---------------------------------------------------------------- run

const work = mkdtempSync(join(tmpdir(), 'excel-corpus-'));
writeFileSync(join(work, 'reference.py'), REFERENCE);
const results = {};
const total = { workbooks: 0, identical: 0, referenceOnly: 0, bothFail: 0, slow: 0 };
for (const directory of directories.map((d) => resolve(d))) {
  const files = readdirSync(directory)
    .filter((f) => /\.(xlsx|xlsm|xls)$/i.test(f) && statSync(join(directory, f)).size > 0)
    .map((f) => join(directory, f))
    .sort();
  const referenceFile = join(work, 'reference.json');
  execFileSync('/usr/bin/python3', [join(work, 'reference.py'), String(MAX_ROW), referenceFile, ...files], {
    stdio: ['ignore', 'ignore', 'ignore'],
    maxBuffer: 1 << 30,
  });
  const references = JSON.parse(readFileSync(referenceFile, 'utf8'));
  const counts = { workbooks: 0, identical: 0, referenceOnly: 0, bothFail: 0, slow: 0 };
  for (const file of files) {
    const mine = await readExcel(file).catch((error) => ({ error: `crash: ${error.message}` }));
    const reference = references[file] ?? { error: 'no result' };
    if (mine.infoMs > 2000) counts.slow++;
    if (reference.error) {
      counts[mine.error ? 'bothFail' : 'referenceOnly']++;
      continue;
    }
    const found = differences(mine, reference);
    counts.workbooks++;
    if (found.length === 0) counts.identical++;
    else if (show > 0) console.log(`${file} (${found.length} differences)\n  ${found.slice(0, show).join('\n  ')}`);
    results[file] = { differences: found.length, getInfoMs: Math.round(mine.infoMs ?? 0) };
  }
  console.log(
    `${basename(directory)}: ${counts.identical} of ${counts.workbooks} workbooks identical; ${counts.referenceOnly} more read only by read_excel, ` +
      `${counts.bothFail} by neither; ${counts.slow} whole-sheet scans (get_info) over 2 s`,
  );
  for (const key of Object.keys(total)) total[key] += counts[key];
}
const share = total.workbooks === 0 ? 0 : (100 * total.identical) / total.workbooks;
console.log(
  `all: ${total.identical} of ${total.workbooks} workbooks identical (${share.toFixed(1)}%); ${total.referenceOnly} more read only by read_excel, ` +
    `${total.bothFail} by neither; ${total.slow} get_info calls over 2 s`,
);
if (values.json) writeFileSync(values.json, JSON.stringify(results, null, 1));
