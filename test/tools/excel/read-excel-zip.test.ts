import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ExcelJS from 'exceljs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDaytonaBackend } from '../../../src/backends/daytona.js';
import { LocalBackend } from '../../../src/backends/local.js';
import type { Backend, ByteRange } from '../../../src/backends/types.js';
import { XmlScanner } from '../../../src/tools/excel/xml-scanner.js';
import { readExcelTool } from '../../../src/tools/excel/tool.js';
import { ToolRegistry, type ToolCallResult } from '../../../src/tools/core/registry.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { fakeDaytona } from '../../support/fake-daytona.js';

/**
 * read_excel's zip and XML layers (yauzl over Backend byte ranges, saxes): what is read of a
 * large file, ZIP64, stored parts, and damaged or unsupported zips reported as model-readable
 * errors.
 */

const fixtures = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const registry = new ToolRegistry();
registry.register(readExcelTool);
let dir: string;

/** The local backend, counting the bytes its streams hand out. */
class CountingBackend extends LocalBackend {
  bytesRead = 0;
  override async *readStream(path: string, range?: ByteRange): AsyncIterable<Buffer> {
    for await (const chunk of super.readStream(path, range)) {
      this.bytesRead += chunk.length;
      yield chunk;
    }
  }
}

/** The local backend, failing range reads that `failAfter` picks (after that many chunks) as a real read error would. */
class FailingBackend extends LocalBackend {
  constructor(private readonly failAfter: (range: ByteRange) => number | null) {
    super();
  }
  override async *readStream(path: string, range?: ByteRange): AsyncIterable<Buffer> {
    const after = range ? this.failAfter(range) : null;
    let passed = 0;
    for await (const chunk of super.readStream(path, range)) {
      if (after !== null && passed++ >= after) throw Object.assign(new Error(`EACCES: permission denied, read '${path}'`), { code: 'EACCES', path });
      yield chunk;
    }
  }
}

function run(args: Record<string, unknown>, backend: Backend = new LocalBackend()): Promise<ToolCallResult> {
  return registry.run('read_excel', args, makeToolContext({ workingDir: dir, backend }));
}

async function writeWorkbook(name: string, rows: number, zip: Record<string, unknown>): Promise<string> {
  const file = join(dir, name);
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: true, zip });
  const sheet = workbook.addWorksheet('Data');
  for (let r = 1; r <= rows; r++) sheet.addRow([r, `name ${r}`, r * 1.5, `city ${r % 50}`]).commit();
  sheet.commit();
  await workbook.commit();
  return file;
}

/** A copy of sample.xlsx with `patch` applied to its bytes (at the sheet2 part's headers). */
function patchedSample(name: string, patch: (bytes: Buffer, local: number, central: number) => void): string {
  const bytes = Buffer.from(readFileSync(join(fixtures, 'sample.xlsx')));
  const part = Buffer.from('xl/worksheets/sheet2.xml');
  const local = bytes.indexOf(part) - 30;
  const central = bytes.indexOf(part, local + 31) - 46;
  expect(bytes.readUInt32LE(local)).toBe(0x04034b50);
  expect(bytes.readUInt32LE(central)).toBe(0x02014b50);
  patch(bytes, local, central);
  writeFileSync(join(dir, name), bytes);
  return name;
}

const ROWS = 30_000;

beforeAll(() => {
  dir = makeTempDir();
});

describe('read_excel reads only what it needs of a large workbook', () => {
  let stored: string;

  beforeAll(async () => {
    // Stored (uncompressed) parts: the sheet is about 5.5 MB in the file, so bytes read show how far reading went.
    stored = await writeWorkbook('stored.xlsx', ROWS, { zlib: { level: 0 } });
  });

  it('the first rows: the end of the file (directory, string table) and the start of the sheet, not the rest', async () => {
    const backend = new CountingBackend();
    const result = await run({ path: 'stored.xlsx', action: 'read_sheet', end_row: 3 }, backend);
    expect(result.output).toBe(
      [
        'sheet "Data"',
        'row\tA\tB\tC\tD',
        '1\t1\tname 1\t1.5\tcity 1',
        '2\t2\tname 2\t3\tcity 2',
        '3\t3\tname 3\t4.5\tcity 3',
        "[rows 1-3 of more (the file does not declare the sheet's size; get_info counts its rows); more rows: call read_excel with start_row=4]",
      ].join('\n'),
    );
    const size = statSync(stored).size;
    expect(size).toBeGreaterThan(5_000_000);
    expect(backend.bytesRead).toBeLessThan(size * 0.4);
  });

  it('the last rows: the whole sheet, once', async () => {
    const backend = new CountingBackend();
    const result = await run({ path: 'stored.xlsx', action: 'read_sheet', start_row: ROWS }, backend);
    expect(result.output).toBe(
      ['sheet "Data"', 'row\tA\tB\tC\tD', `${ROWS}\t${ROWS}\tname ${ROWS}\t45000\tcity 0`, '[rows 30,000-30,000 of 30,000]'].join('\n'),
    );
    const size = statSync(stored).size;
    expect(backend.bytesRead).toBeGreaterThan(size * 0.85);
    expect(backend.bytesRead).toBeLessThan(size * 1.25);
  });

  it('on daytona: the same output from a few range reads in the sandbox, not a download of the file', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    fake.mirror(dir);
    try {
      const args = { path: 'stored.xlsx', action: 'read_sheet', end_row: 3 };
      const remote = await run(args, backend);
      expect(remote.output).toBe((await run(args)).output);
      const reads = fake.sandboxes[0]!.commands.filter((command) => command.includes('skip_bytes'));
      // The file's first bytes, its last MiB, a block read ahead (the first parts, the sheet's
      // header), the start of the sheet (a first chunk, and the next, which the stream reads ahead).
      expect(reads.length).toBeLessThanOrEqual(5);
      const bytesAsked = reads.reduce((sum, command) => sum + Number(/count=(\d+)/.exec(command)?.[1]), 0);
      expect(bytesAsked).toBeLessThan(statSync(stored).size * 0.4);
    } finally {
      await backend.dispose();
    }
  });

  it('a ZIP64 workbook is read like any other', async () => {
    await writeWorkbook('zip64.xlsx', 5, { forceZip64: true });
    const result = await run({ path: 'zip64.xlsx', action: 'read_sheet' });
    expect(result.output).toBe(
      [
        'sheet "Data"',
        'row\tA\tB\tC\tD',
        '1\t1\tname 1\t1.5\tcity 1',
        '2\t2\tname 2\t3\tcity 2',
        '3\t3\tname 3\t4.5\tcity 3',
        '4\t4\tname 4\t6\tcity 4',
        '5\t5\tname 5\t7.5\tcity 5',
        '[rows 1-5 of 5]',
      ].join('\n'),
    );
  });
});

describe('read_excel on damaged and unsupported zips', () => {
  it('a part stored with a compression method other than deflate', async () => {
    const name = patchedSample('bzip2.xlsx', (bytes, local, central) => {
      bytes.writeUInt16LE(12, local + 8);
      bytes.writeUInt16LE(12, central + 10);
    });
    const result = await run({ path: name, action: 'read_sheet', sheet: 'Sales' });
    expect(result.ok).toBe(false);
    expect(result.output).toBe('bzip2.xlsx: part xl/worksheets/sheet2.xml uses zip compression method 12, which is not supported');
    expect(result.metadata.error).toBe('unsupported');
    // The other sheets are still readable.
    expect((await run({ path: name, action: 'read_sheet', sheet: 'Notes' })).output).toContain('1\tTopic\tDétail');
  });

  it('a part whose compressed data is damaged', async () => {
    const name = patchedSample('garbled.xlsx', (bytes, local) => {
      const dataStart = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
      bytes.fill(0xff, dataStart, dataStart + 64);
    });
    const result = await run({ path: name, action: 'get_info', sheet: 'Sales' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/^garbled\.xlsx: part xl\/worksheets\/sheet2\.xml is damaged \(.+\)$/);
    expect(result.output).not.toMatch(/\n\s+at /);
    expect(result.metadata.error).toBe('corrupt');
  });

  it('a directory entry that points past the end of the file', async () => {
    const name = patchedSample('overflow.xlsx', (bytes, _local, central) => {
      bytes.writeUInt32LE(50_000_000, central + 20);
    });
    const result = await run({ path: name, action: 'read_sheet', sheet: 'Sales' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/^overflow\.xlsx: the zip container is damaged \(file data overflows file bounds: .+\)$/);
    expect(result.metadata.error).toBe('corrupt');
  });
});

describe('read errors of the backend', () => {
  it('pass through as they are, not as a damaged zip: while reading the directory and inside a sheet', async () => {
    copyFileSync(join(fixtures, 'sample.xlsx'), join(dir, 'sample.xlsx'));
    // Everything but the 8-byte signature check fails (sample.xlsx is small: its tail is the whole file).
    const atOpen = await run({ path: 'sample.xlsx', action: 'list_sheets' }, new FailingBackend((range) => (range.end - range.start > 8 ? 0 : null)));
    expect(atOpen).toMatchObject({ ok: false, output: `read_excel failed: permission denied: ${join(dir, 'sample.xlsx')}`, metadata: { error: 'EACCES' } });
    // stored.xlsx: the sheet's data (the one long range not at the end of the file) fails after two chunks.
    const size = statSync(join(dir, 'stored.xlsx')).size;
    const inSheet = await run(
      { path: 'stored.xlsx', action: 'get_info' },
      new FailingBackend((range) => (range.end - range.start > 1_000_000 && range.end < size ? 2 : null)),
    );
    expect(inSheet).toMatchObject({ ok: false, output: `read_excel failed: permission denied: ${join(dir, 'stored.xlsx')}`, metadata: { error: 'EACCES' } });
  });
});

describe('the XML layer (saxes)', () => {
  it('is lenient as before: an entity XML does not define stays as written; input after stop() is ignored', () => {
    const events: string[] = [];
    const scanner = new XmlScanner({
      open: (name) => events.push(`open ${name}`),
      close: (name) => {
        events.push(`close ${name}`);
        if (name === 'c') scanner.stop();
      },
      text: (text) => events.push(`text ${text}`),
    });
    scanner.feed('<sheetData><c><v>a&nbsp;b &lt; c</v></c><c><v>never</v>');
    scanner.feed('</c></sheetData>');
    expect(events).toEqual(['open sheetData', 'open c', 'open v', 'text a&nbsp;b < c', 'close v', 'close c']);
    expect(scanner.isStopped).toBe(true);
  });
});
