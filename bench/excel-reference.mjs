// Reference for the read_excel bench: a bare exceljs streaming read (WorkbookReader) of the first
// N rows of the first sheet, or of every row (N = 0), printing how many rows it saw.
//   node bench/excel-reference.mjs FILE N
import ExcelJS from 'exceljs';

const [file, limitText] = process.argv.slice(2);
const limit = Number(limitText);
const reader = new ExcelJS.stream.xlsx.WorkbookReader(file, { sharedStrings: 'cache', styles: 'cache', worksheets: 'emit' });
let rows = 0;
outer: for await (const worksheet of reader) {
  for await (const row of worksheet) {
    void row.values;
    rows++;
    if (limit > 0 && rows >= limit) break outer;
  }
  break;
}
console.log(rows);
