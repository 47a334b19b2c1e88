// read_excel through the built CLI: numbers in General format as Excel shows them, on workbooks
// saved by LibreOffice; the row count of read_sheet and get_info on a sheet with formatted empty
// rows below its data (as openpyxl writes them); the next row named when the output cap cuts a sheet.
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

let dir: string;
let home: string;
const soffice = ['/usr/bin/soffice', '/usr/bin/libreoffice'].find((path) => existsSync(path));
const openpyxl = spawnSync('/usr/bin/python3', ['-c', 'import openpyxl'], { stdio: 'ignore' }).status === 0;

beforeAll(() => {
  dir = makeTempDir('quarry-excel-display-');
  home = makeTempDir('quarry-home-');
});

async function readExcel(args: Record<string, unknown>): Promise<string> {
  const result = await runQuarry(['tool', 'read_excel', '-w', dir, '--args', JSON.stringify(args)], {
    env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined },
    timeoutMs: 60_000,
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return result.stdout;
}

function python(script: string): string {
  const run = spawnSync('/usr/bin/python3', ['-c', script], { cwd: dir, encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

describe.skipIf(!soffice)('General-format numbers in LibreOffice-saved workbooks (built CLI)', () => {
  it('shows 0.311199999999999 as Excel shows it (0.3112), and keeps every real digit of the others', async () => {
    writeFileSync(join(dir, 'rates.csv'), 'rate\n0.311199999999999\n0.333333333333333\n123456789.123456\n0.1\n66.6666666666667\n');
    for (const target of ['xlsx', 'xls']) {
      const converted = spawnSync(
        soffice!,
        [`-env:UserInstallation=file://${join(dir, 'lo-profile')}`, '--headless', '--convert-to', target, '--outdir', dir, join(dir, 'rates.csv')],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(converted.status, converted.stderr).toBe(0);
      expect(await readExcel({ path: `rates.${target}`, action: 'read_sheet' })).toBe(
        'sheet "rates"\nrow\tA\n1\trate\n2\t0.3112\n3\t0.333333333333333\n4\t123456789.123456\n5\t0.1\n6\t66.6666666666667\n[rows 1-6 of 6]\n',
      );
    }
    if (openpyxl) {
      // The stored double is 0.3112 less one unit in the 15th digit; openpyxl shows the double as it is.
      expect(python("import openpyxl; print(repr(openpyxl.load_workbook('rates.xlsx').active['A2'].value))")).toBe('0.311199999999999\n');
    }
  }, 200_000);
});

describe.skipIf(!openpyxl)('read_sheet and get_info (built CLI)', () => {
  it('agree on the row count when formatted empty rows follow the data', async () => {
    python(
      [
        'import openpyxl',
        'from openpyxl.styles import Font',
        'wb = openpyxl.Workbook(); ws = wb.active; ws.title = "Orders"',
        'ws.append(["id", "rate"])',
        'for i in range(1, 474): ws.append([i, i / 8])',
        'for r in (475, 476): ws.cell(row=r, column=1).font = Font(bold=True)',
        'wb.save("trailing.xlsx")',
        'print(ws.max_row)',
      ].join('\n'),
    );
    const info = await readExcel({ path: 'trailing.xlsx', action: 'get_info' });
    expect(info).toContain('(474 rows, 2 columns; 474 rows with values)');
    const tail = await readExcel({ path: 'trailing.xlsx', action: 'read_sheet', start_row: 470 });
    expect(tail.trim().split('\n').pop()).toBe('[rows 470-474 of 474]');
  });

  it('when the output cap cuts a sheet, the hint names the row to go on from (not row 1)', async () => {
    python(
      ['import openpyxl', 'wb = openpyxl.Workbook(); ws = wb.active', 'for i in range(1, 501): ws.append([i, "x" * 300])', 'wb.save("long.xlsx")'].join('\n'),
    );
    const cut = await readExcel({ path: 'long.xlsx', action: 'read_sheet', end_row: 500 });
    const next = Number(/start_row=(\d+) to go on/.exec(cut)?.[1]);
    expect(next).toBeGreaterThan(100);
    expect(next).toBeLessThan(500);
    // Nothing is skipped: the row before it is shown whole, the one after it is not shown (the
    // hint keeps room for the cap's marker, so it may repeat the last row shown).
    expect(cut).toContain(`\n${next - 1}\t${next - 1}\t${'x'.repeat(300)}\n`);
    expect(cut).not.toContain(`\n${next + 1}\t`);
  });
});
