import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { MAX_LINE_CHARS } from '../../../src/tools/core/long-lines.js';
import { READ_COUNT_LIMIT_BYTES, READ_MAX_LINES } from '../../../src/tools/files/read.js';
import { LocalBackend } from '../../../src/backends/local.js';
import type { ByteRange } from '../../../src/backends/types.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

const registry = buildToolRegistry(loadProfile('readonly'));
let dir: string;

beforeEach(() => {
  dir = makeTempDir();
});

function read(args: Record<string, unknown>, session = false) {
  const context = makeToolContext({ workingDir: dir, session });
  return { context, result: registry.run('read', args, context) };
}

function numbered(from: number, to: number, text: (n: number) => string = (n) => `line ${n}`): string {
  const lines: string[] = [];
  for (let n = from; n <= to; n++) lines.push(`${String(n).padStart(6)}\t${text(n)}`);
  return lines.join('\n');
}

describe('read', () => {
  it('shows a small file whole, numbered like cat -n, and says so', async () => {
    writeFileSync(join(dir, 'a.txt'), 'alpha\nbeta\n\tgamma\n');
    const result = await read({ path: 'a.txt' }).result;
    expect(result.ok).toBe(true);
    expect(result.output).toBe('     1\talpha\n     2\tbeta\n     3\t\tgamma\n[all 3 lines shown]');
    expect(result.metadata).toMatchObject({ totalLines: 3, linesShown: 3, lineEndings: 'lf' });
  });

  it('counts a last line without a newline', async () => {
    writeFileSync(join(dir, 'a.txt'), 'one\ntwo');
    const result = await read({ path: 'a.txt' }).result;
    expect(result.output).toBe('     1\tone\n     2\ttwo\n[all 2 lines shown]');
  });

  it(`shows ${READ_MAX_LINES} lines by default and says how to read on, with the true total`, async () => {
    const lines = Array.from({ length: 1234 }, (_, i) => `line ${i + 1}`);
    writeFileSync(join(dir, 'long.txt'), lines.join('\n') + '\n');
    const result = await read({ path: 'long.txt' }).result;
    expect(result.output).toBe(`${numbered(1, 500)}\n[showing lines 1-500 of 1,234; 734 more lines: to read on, call read with start_line=501]`);
    const next = await read({ path: 'long.txt', start_line: 501 }).result;
    expect(next.output.split('\n')[0]).toBe('   501\tline 501');
    expect(next.output).toContain('[showing lines 501-1,000 of 1,234; 234 more lines: to read on, call read with start_line=1001]');
    const tail = await read({ path: 'long.txt', start_line: 1200 }).result;
    expect(tail.output).toBe(`${numbered(1200, 1234)}\n[showing lines 1,200-1,234 of 1,234]`);
  });

  it('honours end_line and never shows more than the limit', async () => {
    writeFileSync(join(dir, 'long.txt'), Array.from({ length: 2000 }, (_, i) => `line ${i + 1}`).join('\n'));
    const range = await read({ path: 'long.txt', start_line: '10', end_line: 12 }).result;
    expect(range.output).toBe(`${numbered(10, 12)}\n[showing lines 10-12 of 2,000; 1,988 more lines: to read on, call read with start_line=13]`);
    const wide = await read({ path: 'long.txt', start_line: 1, end_line: 1900 }).result;
    expect(wide.metadata).toMatchObject({ linesShown: READ_MAX_LINES, endLine: READ_MAX_LINES });
  });

  it('refuses a start_line beyond the end, giving the total', async () => {
    writeFileSync(join(dir, 'a.txt'), 'x\ny\n');
    const result = await read({ path: 'a.txt', start_line: 10 }).result;
    expect(result.ok).toBe(false);
    expect(result.output).toBe('start_line 10 is beyond the end of a.txt, which has 2 lines');
    const reversed = await read({ path: 'a.txt', start_line: 2, end_line: 1 }).result;
    expect(reversed.output).toBe('end_line (1) is before start_line (2)');
  });

  it(`cuts lines over ${MAX_LINE_CHARS} characters with a marker giving the full length`, async () => {
    const longLine = 'é'.repeat(12345);
    writeFileSync(join(dir, 'wide.txt'), `short\n${longLine}\n`);
    const result = await read({ path: 'wide.txt' }).result;
    const lines = result.output.split('\n');
    expect(lines[1]).toBe(`     2\t${'é'.repeat(MAX_LINE_CHARS)}… [line cut: 12,345 chars total]`);
    expect(lines[2]).toContain('1 line(s) cut at 500 characters');
    expect(result.metadata.cutLines).toBe(1);
  });

  it('says where to go on when long lines make the output exceed the registry cap', async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `${String(i + 1).padStart(4, '0')} ${'y'.repeat(400)}`);
    writeFileSync(join(dir, 'dense.txt'), lines.join('\n') + '\n');
    const result = await read({ path: 'dense.txt' }).result;
    expect(result.metadata.outputCut).toBe(true);
    const next = /start_line=(\d+) to go on \(the file has 300 lines\)\.\]$/.exec(result.output);
    expect(next).not.toBeNull();
    const nextLine = Number(next![1]);
    // Every line before nextLine is shown whole; nothing is skipped by going on from there.
    const shownWhole = result.output.split('\n').filter((line) => /^ +\d+\t\d{4} y{400}$/.test(line)).length;
    expect(nextLine).toBeGreaterThan(100);
    expect(nextLine).toBeLessThanOrEqual(shownWhole + 1);
  });

  it('the head of a huge file reads a bounded part of it and says the total is a lower bound, with an estimate', async () => {
    /** The local backend, counting the bytes read streams hand out. */
    class CountingBackend extends LocalBackend {
      bytesRead = 0;
      override readStream(path: string, range?: ByteRange): AsyncIterable<Buffer> {
        const inner = super.readStream(path, range);
        const self = this;
        return (async function* () {
          for await (const chunk of inner) {
            self.bytesRead += chunk.length;
            yield chunk;
          }
        })();
      }
    }
    const line = `${'y'.repeat(99)}\n`;
    const reads: number[] = [];
    for (const megabytes of [40, 80]) {
      const path = join(dir, `huge-${megabytes}.log`);
      const stream = createWriteStream(path);
      const block = line.repeat(10_000); // 1 MB
      for (let i = 0; i < megabytes; i++) if (!stream.write(block)) await once(stream, 'drain');
      stream.end();
      await once(stream, 'finish');
      const backend = new CountingBackend();
      const result = await registry.run('read', { path: `huge-${megabytes}.log`, end_line: 2 }, makeToolContext({ workingDir: dir, backend }));
      const counted = Math.floor(READ_COUNT_LIMIT_BYTES / 100); // whole lines in the 16 MiB counted
      expect(result.output).toBe(
        `${numbered(1, 2, () => 'y'.repeat(99))}\n[showing lines 1-2 of at least ${counted.toLocaleString('en-US')} (counting stopped after the first ` +
          `${(backend.bytesRead / 1024 / 1024).toFixed(1)} MB of ${((megabytes * 1_000_000) / 1024 / 1024).toFixed(1)} MB; about ` +
          `${Math.round((counted * megabytes * 1_000_000) / backend.bytesRead).toLocaleString('en-US')} lines in all at that rate; ` +
          'bash `wc -l` gives the exact count); to read on, call read with start_line=3]',
      );
      expect(result.metadata).toMatchObject({ totalLines: null, totalLinesAtLeast: counted, bytes: megabytes * 1_000_000 });
      // The estimate is within 0.1% of the true count (megabytes x 10,000 lines).
      expect(Math.abs(Math.round((counted * megabytes * 1_000_000) / backend.bytesRead) - megabytes * 10_000)).toBeLessThan(megabytes * 10);
      reads.push(backend.bytesRead);
    }
    // The same bounded read whatever the file's size (one 256 KiB chunk of slack).
    for (const bytes of reads) {
      expect(bytes).toBeGreaterThanOrEqual(READ_COUNT_LIMIT_BYTES);
      expect(bytes).toBeLessThanOrEqual(READ_COUNT_LIMIT_BYTES + 256 * 1024);
    }
  });

  it('reports the true line count of a big file while keeping memory flat', async () => {
    const path = join(dir, 'big.log');
    const stream = createWriteStream(path);
    const block = 'x'.repeat(99) + '\n';
    const linesPerWrite = 10_000;
    for (let i = 0; i < 100; i++) {
      if (!stream.write(block.repeat(linesPerWrite))) await once(stream, 'drain');
    }
    stream.end('last line without newline');
    await once(stream, 'finish');
    const before = process.memoryUsage().rss;
    const result = await read({ path: 'big.log', start_line: 999_999 }).result;
    const grown = process.memoryUsage().rss - before;
    expect(result.output).toBe(
      `${String(999_999).padStart(7)}\t${'x'.repeat(99)}\n${String(1_000_000).padStart(7)}\t${'x'.repeat(99)}\n${String(1_000_001).padStart(7)}\tlast line ` +
        `without newline\n[showing lines 999,999-1,000,001 of 1,000,001]`,
    );
    expect(result.metadata.totalLines).toBe(1_000_001);
    expect(grown).toBeLessThan(50 * 1024 * 1024); // the file is 100 MB
    // Removed at once rather than with the run's temporary directory: 100 MB is too much to keep.
    rmSync(path);
  });

  it('shows CRLF lines without the \\r and says the file uses CRLF', async () => {
    writeFileSync(join(dir, 'win.txt'), 'one\r\ntwo\r\n');
    const result = await read({ path: 'win.txt' }).result;
    expect(result.output).toBe('     1\tone\n     2\ttwo\n[all 2 lines shown; the file uses CRLF line endings (\\r\\n), not shown]');
    expect(result.metadata.lineEndings).toBe('crlf');
  });

  it('shows invalid UTF-8 as \\xNN escapes', async () => {
    writeFileSync(join(dir, 'latin.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a, 0x6f, 0x6b, 0x0a]));
    const result = await read({ path: 'latin.txt' }).result;
    expect(result.ok).toBe(true);
    expect(result.output).toBe('     1\tcaf\\xe9\n     2\tok\n[all 2 lines shown]');
  });

  it('refuses binary files with a hint', async () => {
    writeFileSync(join(dir, 'blob.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01, 0x02]));
    const result = await read({ path: 'blob.bin' }).result;
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(
      /^blob\.bin looks like a binary file \(7 B\), not text; inspect it with bash, e\.g\. `file blob\.bin` or `xxd blob\.bin \| head -n 20`$/,
    );
    const random = Buffer.alloc(20_000);
    for (let i = 0; i < random.length; i++) random[i] = 0x80 + ((i * 37) % 0x7f);
    writeFileSync(join(dir, 'noise.dat'), random);
    expect((await read({ path: 'noise.dat' }).result).metadata.error).toBe('binary');
  });

  it('points spreadsheets to read_excel and directories to list', async () => {
    writeFileSync(join(dir, 'book.XLSX'), 'PK\x03\x04');
    writeFileSync(join(dir, 'old.xls'), 'x');
    mkdirSync(join(dir, 'sub'));
    expect((await read({ path: 'book.XLSX' }).result).output).toContain('use the read_excel tool');
    expect((await read({ path: 'old.xls' }).result).output).toContain('use the read_excel tool');
    const directory = await read({ path: 'sub' }).result;
    expect(directory.output).toBe('sub is a directory; use the list tool to see its entries');
  });

  it('names similar files when the path does not exist', async () => {
    writeFileSync(join(dir, 'config.yaml'), 'a: 1\n');
    writeFileSync(join(dir, 'README.md'), '#\n');
    const result = await read({ path: 'config.yml' }).result;
    expect(result.ok).toBe(false);
    expect(result.output).toBe(`no such file or directory: config.yml; similar names in ${dir}: config.yaml`);
    const readme = await read({ path: 'readme.md' }).result;
    expect(readme.output).toContain('similar names in');
    expect(readme.output).toContain('README.md');
    const nowhere = await read({ path: 'no/such/dir/file.txt' }).result;
    expect(nowhere.output).toBe(`no such file or directory: no/such/dir/file.txt (its directory ${join(dir, 'no/such/dir')} does not exist either)`);
  });

  it('refuses a pipe instead of blocking on it', async () => {
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const result = await read({ path: 'pipe' }).result;
    expect(result.ok).toBe(false);
    expect(result.output).toBe('pipe is not a regular file (a device, socket or pipe); read only reads files');
  });

  it('says an empty file is empty', async () => {
    writeFileSync(join(dir, 'empty.txt'), '');
    const result = await read({ path: 'empty.txt' }).result;
    expect(result.ok).toBe(true);
    expect(result.output).toBe('(empty.txt is empty: 0 bytes)');
  });

  it('records a successful read in the session ledger, and only then', async () => {
    const path = join(dir, 'a.txt');
    writeFileSync(path, 'x\n');
    writeFileSync(join(dir, 'b.bin'), Buffer.from([0, 1, 2]));
    const { context, result } = read({ path: 'a.txt' }, true);
    await result;
    const stat = statSync(path);
    expect(context.fileReads!.checkUnchanged(path, { mtimeMs: stat.mtimeMs, size: stat.size })).toBeNull();
    const binary = read({ path: 'b.bin' }, true);
    await binary.result;
    expect(binary.context.fileReads!.checkUnchanged(join(dir, 'b.bin'), { mtimeMs: 0, size: 3 })).toContain('has not been read');
  });

  it('reads absolute paths outside the working directory and shows them absolute', async () => {
    const other = makeTempDir();
    writeFileSync(join(other, 'x.txt'), 'hi\n');
    const result = await read({ path: join(other, 'x.txt') }).result;
    expect(result.output).toBe('     1\thi\n[the only line shown]');
    expect(result.metadata.path).toBe(join(other, 'x.txt'));
  });
});
