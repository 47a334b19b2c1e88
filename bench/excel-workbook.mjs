// Makes the 200,000-row workbook the read_excel bench reads (once, under bench/.work; not
// committed), with exceljs's streaming writer and shared strings, so the sheet comes before the
// string table in the zip as in files Excel writes. Deterministic: a seeded PRNG, fixed dates.
import ExcelJS from 'exceljs';
import { existsSync, renameSync } from 'node:fs';

export const BENCH_ROWS = 200_000;
const REGIONS = ['North', 'South', 'East', 'West', 'Central'];
const PRODUCTS = Array.from({ length: 400 }, (_, i) => `Product ${String(i + 1).padStart(4, '0')}`);

/** A deterministic pseudo-random sequence in [0, 1) (a 32-bit xorshift). */
function xorshift(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

/** Writes the workbook unless it is already there; returns its path. */
export async function ensureBenchWorkbook(path) {
  if (existsSync(path)) return path;
  const random = xorshift(7);
  const partial = `${path}.partial`;
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: partial, useSharedStrings: true, useStyles: true });
  const sheet = workbook.addWorksheet('Orders');
  sheet.columns = [
    { key: 'id' },
    { key: 'date', style: { numFmt: 'yyyy-mm-dd' } },
    { key: 'region' },
    { key: 'product' },
    { key: 'qty' },
    { key: 'price' },
    { key: 'total' },
    { key: 'note' },
  ];
  sheet.addRow(['Order', 'Date', 'Region', 'Product', 'Qty', 'Price', 'Total', 'Note']).commit();
  const start = Date.UTC(2022, 0, 1);
  for (let i = 1; i <= BENCH_ROWS; i++) {
    const qty = 1 + Math.floor(random() * 20);
    const price = Math.round(random() * 50000) / 100;
    sheet
      .addRow({
        id: 100000 + i,
        date: new Date(start + Math.floor(random() * 1000) * 86_400_000),
        region: REGIONS[Math.floor(random() * REGIONS.length)],
        product: PRODUCTS[Math.floor(random() * PRODUCTS.length)],
        qty,
        price,
        total: { formula: `E${i + 1}*F${i + 1}`, result: Math.round(qty * price * 100) / 100 },
        note: `order ${i} of batch ${Math.floor(i / 1000)}`,
      })
      .commit();
  }
  sheet.commit();
  await workbook.commit();
  renameSync(partial, path);
  return path;
}
