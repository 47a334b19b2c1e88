import { link, lstat, mkdir, open, readFile, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { processRuns, removeStaleTempFiles, tempPathFor } from '../../backends/temp-files.js';
import { basename, dirname, join } from 'node:path';
import type { CellValue, CsvSink } from './types.js';
import { numberToText, valueToText } from './values.js';

/**
 * CSV export files (docs/guide/databases.md): RFC 4180 with a header row, written to a temporary file beside
 * the target and linked into place only when complete, so an error or a cancel leaves no file
 * and a file that appears meanwhile is never replaced. Memory stays constant: text is encoded
 * straight into one reused output buffer that is written out whenever it fills. (Gathering a
 * fresh megabyte string or Buffer per write made peak memory grow with the row count: dead
 * buffers piled up between collections and V8 enlarged its young generation.)
 */

/** Database tools run on this machine whatever the backend (docs/guide/daytona.md), so exports use node:fs. */
const WRITE_BUFFER_BYTES = 1 << 20;
/** Rows encoded by quarry are handed to the output buffer once their text reaches this many characters. */
const ENCODE_CHUNK_CHARS = 64 * 1024;
const utf8 = new TextEncoder();
export const EXPORT_PREVIEW_ROWS = 5;
/** Bytes of engine-encoded CSV kept to build the preview from. */
export const PREVIEW_BYTES = 64 * 1024;
export const PROGRESS_INTERVAL_MS = 500;
const NEEDS_QUOTES = /[",\r\n]/;

function quoteIfNeeded(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvField(value: CellValue): string {
  // Strings and numbers first: they are nearly every value of an export, and this runs per value.
  if (typeof value === 'string') return quoteIfNeeded(value);
  if (typeof value === 'number') return numberToText(value);
  if (typeof value === 'bigint') return `${value}`;
  const text = valueToText(value);
  return text === null ? '' : quoteIfNeeded(text);
}

export function csvLine(values: readonly CellValue[]): string {
  let line = values.length ? csvField(values[0]) : '';
  for (let i = 1; i < values.length; i++) line += ',' + csvField(values[i]);
  return line + '\r\n';
}

/** Parses up to `limit` records of RFC 4180 text (for previews); an incomplete last record is dropped. */
export function parseCsvRecords(text: string, limit: number): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  while (i < text.length && records.length < limit) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
        continue;
      }
      if (ch === '"') quoted = false;
      else field += ch;
      i++;
      continue;
    }
    if (ch === '"') quoted = true;
    else if (ch === ',') {
      record.push(field);
      field = '';
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += ch;
    i++;
  }
  return records;
}

/** The index just after the line break that ends the first record (quotes respected), or -1. */
export function firstRecordEnd(text: string): number {
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') quoted = !quoted;
    else if (ch === '\n' && !quoted) return i + 1;
  }
  return -1;
}

/**
 * An engine's own CSV (header record first, records ended by CRLF) into the sink: the header is
 * handed over with its column names, the rest as it comes. Returns whether a header was seen.
 */
export async function writeEngineCsv(chunks: AsyncIterable<Buffer>, sink: CsvSink): Promise<boolean> {
  // Bytes until the header's end is seen: a chunk may end inside a multi-byte character.
  let head = Buffer.alloc(0);
  let headerDone = false;
  for await (const chunk of chunks) {
    if (headerDone) {
      await sink.writeEncoded(chunk, 0);
      continue;
    }
    head = Buffer.concat([head, chunk]);
    // Latin-1 maps bytes to characters one to one, and `"` and LF are single bytes in UTF-8.
    const end = firstRecordEnd(head.toString('latin1'));
    if (end < 0) continue;
    const header = head.subarray(0, end - 2).toString('utf8');
    sink.setColumns(parseCsvRecords(`${header}\n`, 1)[0] ?? [], `${header}\r\n`);
    headerDone = true;
    if (end < head.length) await sink.writeEncoded(head.subarray(end), 0);
  }
  return headerDone;
}

/** An export refused before it started (the target exists or another export is writing it). */
export class ExportRefused extends Error {}

/** The temporary file was replaced before it was linked into place: nothing of it is kept. */
export class ReplacedTempFile extends Error {
  constructor(tempPath: string) {
    super(
      `the export's temporary file ${basename(tempPath)} was replaced before it was put in place; nothing was kept (is someone else writing this directory?)`,
    );
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Creates `.NAME.quarry-export.lock` (O_EXCL) holding this process id; one left by a process
 * that no longer runs is taken over. Returns the lock's path.
 */
async function reserveTarget(target: string): Promise<string> {
  const lockPath = join(dirname(target), `.${basename(target)}.quarry-export.lock`);
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(lockPath, `${process.pid}\n`, { flag: 'wx', mode: 0o644 });
      return lockPath;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    const owner = Number((await readFile(lockPath, 'utf8').catch(() => '')).trim());
    if (owner && owner !== process.pid && !processRuns(owner)) {
      await unlink(lockPath).catch(() => undefined);
      continue;
    }
    throw new ExportRefused(
      `another export to ${basename(target)} is running${owner ? ` (process ${owner})` : ''}; nothing was overwritten (wait for it, or choose a new name)`,
    );
  }
}

export interface ExportSummary {
  path: string;
  rows: number;
  bytes: number;
  columns: string[];
  preview: CellValue[][];
}

export class CsvExportFile implements CsvSink {
  private columns: string[] | null = null;
  /** The header line, written ahead of the first rows (setColumns is synchronous). */
  private header: Buffer | null = null;
  /** One reused output buffer: no allocation per write, so nothing piles up for the collector. */
  private readonly buffer = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  private used = 0;
  private rows = 0;
  private bytes = 0;
  private preview: CellValue[][] = [];
  /** The first PREVIEW_BYTES of engine-encoded CSV, as bytes so a character split between chunks stays whole. */
  private encodedHead: Buffer[] = [];
  private encodedHeadBytes = 0;
  private lastProgress = 0;

  private constructor(
    readonly target: string,
    private readonly tempPath: string,
    private readonly lockPath: string,
    private readonly handle: FileHandle,
    private readonly showProgress: boolean,
    private readonly onProgress?: (progress: { rows: number; bytes: number }) => void,
  ) {}

  /**
   * Reserves the target and opens the temporary file. A second export to the same target while
   * one runs (in this process or another) is refused at once instead of streaming the whole
   * result to lose at the final link, and so is a target that exists by now; the link stays the
   * guard against a file that appears meanwhile by other means. showProgress: a progress line on
   * stderr (a TTY); onProgress: the same figures to a caller (an MCP client).
   */
  static async create(
    target: string,
    options: { showProgress: boolean; onProgress?: ((progress: { rows: number; bytes: number }) => void) | undefined },
  ): Promise<CsvExportFile> {
    await mkdir(dirname(target), { recursive: true });
    await removeStaleTempFiles(dirname(target));
    const lockPath = await reserveTarget(target);
    try {
      if (await exists(target)) throw new ExportRefused(`${basename(target)} already exists; nothing was overwritten (choose a new name)`);
      const tempPath = tempPathFor(target);
      const handle = await open(tempPath, 'wx', 0o644);
      return new CsvExportFile(target, tempPath, lockPath, handle, options.showProgress, options.onProgress);
    } catch (error) {
      await unlink(lockPath).catch(() => undefined);
      throw error;
    }
  }

  setColumns(columns: string[], encodedHeader?: string): void {
    if (this.columns) return;
    this.columns = columns;
    this.header = Buffer.from(encodedHeader ?? csvLine(columns), 'utf8');
  }

  async writeRows(rows: CellValue[][]): Promise<void> {
    let text = '';
    for (const row of rows) {
      if (this.preview.length < EXPORT_PREVIEW_ROWS) this.preview.push(row);
      text += csvLine(row);
      if (text.length >= ENCODE_CHUNK_CHARS) {
        await this.appendText(text);
        text = '';
      }
    }
    await this.appendText(text);
    this.rows += rows.length;
    this.progress();
  }

  async writeEncoded(chunk: Buffer | string, rowCount: number): Promise<void> {
    if (this.encodedHeadBytes < PREVIEW_BYTES) {
      const head =
        typeof chunk === 'string'
          ? Buffer.from(chunk.slice(0, PREVIEW_BYTES - this.encodedHeadBytes), 'utf8')
          : Buffer.from(chunk.subarray(0, PREVIEW_BYTES - this.encodedHeadBytes));
      this.encodedHead.push(head);
      this.encodedHeadBytes += head.length;
    }
    if (typeof chunk === 'string') await this.appendText(chunk);
    else await this.appendBytes(chunk);
    this.rows += rowCount;
    this.progress();
  }

  /** The row count, for engines that report it at the end instead of per chunk. */
  setRowCount(rows: number): void {
    this.rows = rows;
  }

  /** The temporary file, while nothing is written to it (CsvSink.directFile). */
  async directFile(): Promise<{ path: string; dev: string; ino: string } | null> {
    if (this.columns || this.used > 0 || this.bytes > 0) return null;
    const stat = await this.handle.stat({ bigint: true });
    if (stat.size !== 0n) return null;
    return { path: this.tempPath, dev: String(stat.dev), ino: String(stat.ino) };
  }

  directProgress(rows: number, bytes: number): void {
    this.rows = rows;
    this.bytes = bytes;
    this.progress();
  }

  directWritten(written: { columns: string[]; rows: number; bytes: number; head: Uint8Array }): void {
    this.columns = written.columns;
    this.header = null;
    this.rows = written.rows;
    this.bytes = written.bytes;
    const head = Buffer.from(written.head.buffer, written.head.byteOffset, Math.min(written.head.byteLength, PREVIEW_BYTES));
    this.encodedHead = [head];
    this.encodedHeadBytes = head.length;
  }

  /** Encodes text straight into the output buffer, writing the buffer out whenever it fills. */
  private async appendText(text: string): Promise<void> {
    let rest = text;
    while (rest.length > 0) {
      const { read, written } = utf8.encodeInto(rest, this.buffer.subarray(this.used));
      this.used += written;
      if (read === rest.length) return;
      rest = rest.slice(read);
      await this.flush();
    }
  }

  private async appendBytes(data: Buffer): Promise<void> {
    // flush() also writes the pending header, which must come before bytes written straight out.
    if (data.length > this.buffer.length - this.used || (this.header && data.length >= this.buffer.length)) await this.flush();
    if (data.length >= this.buffer.length) {
      await this.writeOut(data);
      return;
    }
    data.copy(this.buffer, this.used);
    this.used += data.length;
  }

  private async flush(): Promise<void> {
    if (this.header) {
      const header = this.header;
      this.header = null;
      await this.writeOut(header);
    }
    if (this.used === 0) return;
    await this.writeOut(this.buffer.subarray(0, this.used));
    this.used = 0;
  }

  private async writeOut(data: Buffer): Promise<void> {
    let offset = 0;
    while (offset < data.length) {
      const { bytesWritten } = await this.handle.write(data, offset);
      offset += bytesWritten;
    }
    this.bytes += data.length;
  }

  private progress(): void {
    if (!this.showProgress && !this.onProgress) return;
    const now = Date.now();
    if (now - this.lastProgress < PROGRESS_INTERVAL_MS) return;
    this.lastProgress = now;
    this.onProgress?.({ rows: this.rows, bytes: this.bytes });
    if (this.showProgress) process.stderr.write(`\rexport: ${this.rows.toLocaleString('en-US')} rows, ${(this.bytes / 1e6).toFixed(1)} MB`);
  }

  /** Finishes the file and links it into place; fails (and cleans up) if the target appeared meanwhile. */
  async commit(): Promise<ExportSummary> {
    try {
      if (!this.columns) throw new Error('the statement returned no columns');
      await this.flush();
      const own = await this.handle.stat({ bigint: true });
      await this.handle.close();
      // The link is by name: what is linked must be the file written, not one put in its place
      // (someone who can write the directory could rename it away and leave another). Checked
      // before, and after on the target, which only this link created (it never replaces).
      const same = (other: { dev: bigint; ino: bigint }) => other.dev === own.dev && other.ino === own.ino;
      if (!same(await lstat(this.tempPath, { bigint: true }))) throw new ReplacedTempFile(this.tempPath);
      await link(this.tempPath, this.target);
      if (!same(await lstat(this.target, { bigint: true }))) {
        await unlink(this.target).catch(() => undefined);
        throw new ReplacedTempFile(this.tempPath);
      }
    } finally {
      await this.discard();
    }
    if (this.showProgress) process.stderr.write('\r\x1b[K');
    const columns = this.columns;
    const preview = this.preview.length ? this.preview : parseCsvRecords(Buffer.concat(this.encodedHead).toString('utf8'), EXPORT_PREVIEW_ROWS);
    return { path: this.target, rows: this.rows, bytes: this.bytes, columns, preview };
  }

  /** Removes the temporary file (after a commit it is the extra link; after a failure, all there is). */
  async discard(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await unlink(this.tempPath).catch(() => undefined);
    await unlink(this.lockPath).catch(() => undefined);
    if (this.showProgress) process.stderr.write('\r\x1b[K');
  }
}
