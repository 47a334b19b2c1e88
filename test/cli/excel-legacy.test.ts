// read_excel on legacy workbooks through the BUILT CLI: the bundle resolves packages as Node does
// (with "exports" and the require condition), which the test runner does not, so a module path
// that works under vitest can still fail in dist/ (issue: BIFF5 files refused in the built CLI).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as XLSX from '@e965/xlsx';
import { beforeAll, describe, expect, it } from 'vitest';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

let dir: string;
let home: string;
beforeAll(() => {
  dir = makeTempDir();
  home = makeTempDir('quarry-home-');
});

async function readSheet(file: string): Promise<string> {
  const result = await runQuarry(['tool', 'read_excel', '--args', JSON.stringify({ path: file, action: 'read_sheet' }), '-w', dir], {
    env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined },
  });
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return result.stdout;
}

/**
 * A BIFF5 (Excel 95) workbook whose text is in a Windows code page, as Excel 95 saved it.
 * SheetJS writes BIFF5 with ASCII text only, so the text is written as a same-length placeholder
 * and then replaced by its code-page bytes, and the CODEPAGE record (0x0042) set to the page.
 */
function biff5(text: string, codepage: number, encode: (s: string) => Buffer): Buffer {
  const placeholder = 'Q'.repeat(text.length);
  const wb = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(
    wb,
    XLSX.utils.aoa_to_sheet([
      ['name', 'amount'],
      [placeholder, 0.3112],
    ]),
    'Data',
  );
  const bytes = XLSX.write(wb, { type: 'buffer', bookType: 'biff5' }) as Buffer;
  const at = bytes.indexOf(placeholder, 0, 'latin1');
  const record = bytes.indexOf(Buffer.from([0x42, 0x00, 0x02, 0x00]));
  expect(at).toBeGreaterThan(0);
  expect(record).toBeGreaterThan(0);
  encode(text).copy(bytes, at);
  bytes.writeUInt16LE(codepage, record + 4);
  return bytes;
}

/** Encodes text in a single-byte Windows code page, with the table that Node's TextDecoder decodes by. */
function encoder(label: string): (s: string) => Buffer {
  const decoder = new TextDecoder(label);
  const byChar = new Map<string, number>();
  for (let b = 0; b < 256; b++) byChar.set(decoder.decode(Uint8Array.of(b)), b);
  return (s) => Buffer.from([...s].map((ch) => byChar.get(ch) ?? 0x3f));
}

const xlrd = spawnSync('/usr/bin/python3', ['-c', 'import xlrd'], { stdio: 'ignore' }).status === 0;

describe('legacy .xls through the built CLI', () => {
  it('reads BIFF5 (Excel 95) workbooks in code pages 1251 and 1253, as xlrd reads them', async () => {
    writeFileSync(join(dir, 'ru.xls'), biff5('Россия', 1251, encoder('windows-1251')));
    writeFileSync(join(dir, 'el.xls'), biff5('Ελλάδα … €', 1253, encoder('windows-1253')));
    expect(await readSheet('ru.xls')).toBe('sheet "Data"\nrow\tA\tB\n1\tname\tamount\n2\tРоссия\t0.3112\n[rows 1-2 of 2]\n');
    expect(await readSheet('el.xls')).toBe('sheet "Data"\nrow\tA\tB\n1\tname\tamount\n2\tΕλλάδα … €\t0.3112\n[rows 1-2 of 2]\n');
    if (xlrd) {
      // The independent reader agrees on the bytes written above (xlrd's version 70: the BIFF5/7 format of Excel 95).
      const script = 'import sys, xlrd\nfor p in sys.argv[1:]:\n b = xlrd.open_workbook(p); print(b.biff_version, b.sheet_by_index(0).cell_value(1, 0))';
      const py = spawnSync('/usr/bin/python3', ['-c', script, join(dir, 'ru.xls'), join(dir, 'el.xls')], { encoding: 'utf8' });
      expect(py.stdout).toBe('70 Россия\n70 Ελλάδα … €\n');
    }
  });

  it('reads a delimited text export named .XLS (CRLF, Windows-1252)', async () => {
    writeFileSync(join(dir, 'EXPORT.XLS'), Buffer.from('id;name;when\r\n007;Caf\xe9;1/2/2020\r\n', 'latin1'));
    expect(await readSheet('EXPORT.XLS')).toBe('sheet "Sheet1"\nrow\tA\tB\tC\n1\tid\tname\twhen\n2\t007\tCafé\t1/2/2020\n[rows 1-2 of 2]\n');
  });
});
