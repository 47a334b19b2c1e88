// read_excel on a 200,000-row .xlsx (goal, docs/development/benchmarks.md: the first 500 rows in under 1.5 s and 200 MB), each
// beside a bare exceljs streaming read (WorkbookReader) of the same rows. The workbook is made
// once under bench/.work by bench/excel-workbook.mjs (exceljs's streaming writer, shared strings
// after the sheet as Excel writes them, no declared dimension). Whole `quarry tool` processes.
import { join } from 'node:path';
import { BENCH_ROWS, ensureBenchWorkbook } from './excel-workbook.mjs';

const RUNS = 3;

export async function run({ root, workDir, measure }) {
  process.stderr.write('bench: excel: making the 200,000-row workbook (once) ...\n');
  const file = await ensureBenchWorkbook(join(workDir, 'excel-200k.xlsx'));
  const cli = (args) => [process.execPath, join(root, 'dist', 'cli.cjs'), 'tool', 'read_excel', '--args', JSON.stringify({ path: file, ...args })];
  const reference = (limit) => [process.execPath, join(root, 'bench', 'excel-reference.mjs'), file, String(limit)];

  const first = measure(cli({ action: 'read_sheet' }), { runs: RUNS, cwd: root });
  const firstRef = measure(reference(500), { runs: RUNS, cwd: root });
  const last = measure(cli({ action: 'read_sheet', start_row: BENCH_ROWS - 498 }), { runs: RUNS, cwd: root });
  const info = measure(cli({ action: 'get_info' }), { runs: RUNS, cwd: root });
  const wholeRef = measure(reference(0), { runs: RUNS, cwd: root });
  const note = `${RUNS} runs; whole process`;
  return [
    {
      name: 'read_excel first 500 rows of 200k (time)',
      quarry: first.ms,
      referenceName: 'exceljs stream, 500 rows',
      reference: firstRef.ms,
      unit: 'ms',
      note: `${note}; target < 1500 ms`,
    },
    {
      name: 'read_excel first 500 rows of 200k (peak RSS)',
      quarry: first.rssMb,
      referenceName: 'exceljs stream, 500 rows',
      reference: firstRef.rssMb,
      unit: 'MB',
      note: 'target < 200 MB',
    },
    {
      name: 'read_excel last 500 rows (whole sheet streamed)',
      quarry: last.ms,
      referenceName: 'exceljs stream, all rows',
      reference: wholeRef.ms,
      unit: 'ms',
      note,
    },
    { name: 'read_excel last 500 rows (peak RSS)', quarry: last.rssMb, referenceName: 'exceljs stream, all rows', reference: wholeRef.rssMb, unit: 'MB', note },
    { name: 'read_excel get_info (whole sheet scan)', quarry: info.ms, referenceName: 'exceljs stream, all rows', reference: wholeRef.ms, unit: 'ms', note },
    { name: 'read_excel get_info (peak RSS)', quarry: info.rssMb, referenceName: 'exceljs stream, all rows', reference: wholeRef.rssMb, unit: 'MB', note },
  ];
}
