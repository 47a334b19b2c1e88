import { createInflateRaw, type InflateRaw } from 'node:zlib';
import type { Backend } from '../../backends/types.js';
import { WorkbookError } from './errors.js';

/**
 * Reading parts of a zip (an .xlsx) through a backend that can only stream a file from its start.
 * One pass keeps the file's tail to find the central directory (names, sizes, offsets: local
 * headers may not carry sizes); later passes stream the file again and inflate only the wanted
 * entries, each into a sink that may stop early. Memory stays small whatever the file's size.
 */

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

/** What a wanted entry's text is fed to. `write` returns false once it needs no more. */
export interface TextSink {
  write(text: string): boolean;
  end(): void;
}

/** The central directory must lie within this many bytes of the end of the file. */
const TAIL_BYTES = 4 * 1024 * 1024;
const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const EOCD_MIN_BYTES = 22;
const MAX_COMMENT_BYTES = 0xffff;
const LOCAL_HEADER_BYTES = 30;
/** Inflated bytes per step: large steps mean fewer hops between the zlib thread and this one. */
const INFLATE_CHUNK_BYTES = 256 * 1024;

export interface FileEnds {
  /** The first bytes of the file (its signature). */
  head: Buffer;
  /** The last TAIL_BYTES bytes (or the whole file). */
  tail: Buffer;
  size: number;
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new WorkbookError('cancelled', 'cancelled');
}

/** Streams the whole file once, keeping its first bytes and its tail. */
export async function readFileEnds(backend: Backend, path: string, signal: AbortSignal, headBytes = 8): Promise<FileEnds> {
  let head: Buffer | null = null;
  const chunks: Buffer[] = [];
  let kept = 0;
  let size = 0;
  for await (const chunk of backend.readStream(path)) {
    throwIfAborted(signal);
    if (head === null || head.length < headBytes) head = Buffer.concat([head ?? Buffer.alloc(0), chunk]).subarray(0, headBytes);
    chunks.push(chunk);
    kept += chunk.length;
    size += chunk.length;
    while (chunks.length > 1 && kept - chunks[0]!.length >= TAIL_BYTES) kept -= chunks.shift()!.length;
  }
  const all = Buffer.concat(chunks);
  return { head: head ?? Buffer.alloc(0), tail: all.subarray(Math.max(0, all.length - TAIL_BYTES)), size };
}

/** Parses the central directory found in the file's tail. */
export function parseCentralDirectory({ tail, size }: FileEnds): ZipEntry[] {
  let eocd = -1;
  const lowest = Math.max(0, tail.length - EOCD_MIN_BYTES - MAX_COMMENT_BYTES);
  for (let i = tail.length - EOCD_MIN_BYTES; i >= lowest; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIGNATURE) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new WorkbookError('the zip container is damaged or truncated (no end-of-directory record)', 'corrupt');
  const count = tail.readUInt16LE(eocd + 10);
  const directorySize = tail.readUInt32LE(eocd + 12);
  const directoryOffset = tail.readUInt32LE(eocd + 16);
  if (count === 0xffff || directoryOffset === 0xffffffff) throw new WorkbookError('ZIP64 workbooks (over 4 GB or 65,535 parts) are not supported', 'unsupported');
  const tailStart = size - tail.length;
  let offset = directoryOffset - tailStart;
  if (offset < 0 || offset + directorySize > tail.length) throw new WorkbookError('the zip container is damaged (its directory lies outside the file)', 'corrupt');
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (offset + 46 > tail.length || tail.readUInt32LE(offset) !== CENTRAL_SIGNATURE) throw new WorkbookError('the zip container is damaged (bad directory entry)', 'corrupt');
    const nameLength = tail.readUInt16LE(offset + 28);
    entries.push({
      name: tail.subarray(offset + 46, offset + 46 + nameLength).toString('utf8'),
      method: tail.readUInt16LE(offset + 10),
      compressedSize: tail.readUInt32LE(offset + 20),
      uncompressedSize: tail.readUInt32LE(offset + 24),
      localHeaderOffset: tail.readUInt32LE(offset + 42),
    });
    offset += 46 + nameLength + tail.readUInt16LE(offset + 30) + tail.readUInt16LE(offset + 32);
  }
  return entries;
}

/** Inflates one entry's compressed bytes as they pass and hands the text to its sink. */
class EntryReader {
  private inflater: InflateRaw | null = null;
  private readonly decoder = new TextDecoder('utf-8');
  private failure: Error | null = null;
  stopped = false;

  constructor(readonly entry: ZipEntry, private readonly sink: TextSink) {
    if (entry.method !== 0 && entry.method !== 8) throw new WorkbookError(`part ${entry.name} uses zip compression method ${entry.method}, which is not supported`, 'unsupported');
    if (entry.method === 8) {
      this.inflater = createInflateRaw({ chunkSize: INFLATE_CHUNK_BYTES });
      this.inflater.on('data', (out: Buffer) => this.deliver(this.decoder.decode(out, { stream: true })));
      this.inflater.on('error', (error: Error) => { this.failure = error; });
    }
  }

  private deliver(text: string): void {
    if (this.stopped || text === '') return;
    if (!this.sink.write(text)) this.stop();
  }

  private stop(): void {
    this.stopped = true;
    this.inflater?.destroy();
    this.inflater = null;
  }

  private check(): void {
    if (this.failure) throw new WorkbookError(`part ${this.entry.name} is damaged (${this.failure.message})`, 'corrupt');
  }

  async push(bytes: Buffer): Promise<void> {
    if (this.stopped) return;
    const inflater = this.inflater;
    if (!inflater) {
      this.deliver(this.decoder.decode(bytes, { stream: true }));
      return;
    }
    // The write callback runs once the chunk is inflated and its output delivered.
    await new Promise<void>((resolve) => inflater.write(bytes, () => resolve()));
    this.check();
  }

  async finish(): Promise<void> {
    const inflater = this.inflater;
    if (!this.stopped && inflater) {
      await new Promise<void>((resolve) => {
        inflater.once('end', resolve);
        inflater.once('error', () => resolve());
        inflater.end();
      });
      this.check();
    }
    if (!this.stopped) this.deliver(this.decoder.decode());
    if (!this.stopped) this.sink.end();
    this.stopped = true;
  }
}

/** The part of the file already in memory (the tail kept by readFileEnds). */
export interface KnownBytes {
  bytes: Buffer;
  /** File offset of bytes[0]. */
  start: number;
}

/** Where an entry's compressed data lies inside `known`, or null when it is not all there. */
function dataInKnownBytes(entry: ZipEntry, known: KnownBytes | undefined): Buffer | null {
  if (!known) return null;
  const header = entry.localHeaderOffset - known.start;
  if (header < 0 || header + LOCAL_HEADER_BYTES > known.bytes.length) return null;
  if (known.bytes.readUInt32LE(header) !== LOCAL_SIGNATURE) throw new WorkbookError(`the zip container is damaged (no header for part ${entry.name})`, 'corrupt');
  const dataStart = header + LOCAL_HEADER_BYTES + known.bytes.readUInt16LE(header + 26) + known.bytes.readUInt16LE(header + 28);
  const dataEnd = dataStart + entry.compressedSize;
  return dataEnd <= known.bytes.length ? known.bytes.subarray(dataStart, dataEnd) : null;
}

/**
 * Feeds each wanted entry's text to its sink, in file order. Entries whose bytes are already in
 * memory (the file's tail, where many writers put the small parts) are read from there; the file
 * is streamed only as far as the others need, then reading stops.
 */
export async function streamEntries(backend: Backend, path: string, wanted: Array<{ entry: ZipEntry; sink: TextSink }>, signal: AbortSignal, known?: KnownBytes): Promise<void> {
  const sorted = [...wanted].sort((a, b) => a.entry.localHeaderOffset - b.entry.localHeaderOffset);
  // The tail is the end of the file, so the entries found in it are a suffix of the sorted list.
  let firstInMemory = sorted.length;
  while (firstInMemory > 0 && dataInKnownBytes(sorted[firstInMemory - 1]!.entry, known) !== null) firstInMemory--;
  await streamFromFile(backend, path, sorted.slice(0, firstInMemory), signal);
  for (const item of sorted.slice(firstInMemory)) {
    throwIfAborted(signal);
    const reader = new EntryReader(item.entry, item.sink);
    await reader.push(dataInKnownBytes(item.entry, known)!);
    await reader.finish();
  }
}

async function streamFromFile(backend: Backend, path: string, queue: Array<{ entry: ZipEntry; sink: TextSink }>, signal: AbortSignal): Promise<void> {
  let index = 0;
  let position = 0;
  let header: Buffer | null = null;
  let reader: EntryReader | null = null;
  let remaining = 0;
  if (queue.length === 0) return;
  for await (const chunk of backend.readStream(path)) {
    throwIfAborted(signal);
    let offset = 0;
    while (offset < chunk.length && index < queue.length) {
      const item = queue[index]!;
      if (reader === null && header === null) {
        // Seeking to the next wanted entry's local header.
        const skip = Math.min(item.entry.localHeaderOffset - position, chunk.length - offset);
        if (skip < 0) throw new WorkbookError('the zip container is damaged (overlapping parts)', 'corrupt');
        offset += skip;
        position += skip;
        if (position === item.entry.localHeaderOffset) header = Buffer.alloc(0);
        continue;
      }
      if (reader === null) {
        const needed = header!.length < LOCAL_HEADER_BYTES ? LOCAL_HEADER_BYTES : LOCAL_HEADER_BYTES + header!.readUInt16LE(26) + header!.readUInt16LE(28);
        const take = Math.min(needed - header!.length, chunk.length - offset);
        header = Buffer.concat([header!, chunk.subarray(offset, offset + take)]);
        offset += take;
        position += take;
        if (header.length === LOCAL_HEADER_BYTES && header.readUInt32LE(0) !== LOCAL_SIGNATURE) throw new WorkbookError(`the zip container is damaged (no header for part ${item.entry.name})`, 'corrupt');
        const full = header.length >= LOCAL_HEADER_BYTES && header.length === LOCAL_HEADER_BYTES + header.readUInt16LE(26) + header.readUInt16LE(28);
        if (!full) continue;
        reader = new EntryReader(item.entry, item.sink);
        remaining = item.entry.compressedSize;
      }
      const take = Math.min(remaining, chunk.length - offset);
      if (take > 0) await reader.push(chunk.subarray(offset, offset + take));
      offset += take;
      position += take;
      remaining -= take;
      if (remaining === 0) {
        await reader.finish();
        reader = null;
        header = null;
        index++;
      }
    }
    if (index >= queue.length) break;
    // The last wanted entry needs nothing more: no reason to read the rest of the file.
    if (index === queue.length - 1 && reader?.stopped) return;
  }
  if (index < queue.length) throw new WorkbookError('the file is truncated: some workbook parts are missing their data', 'corrupt');
}

/** A sink that keeps the whole text (for small parts such as workbook.xml). */
export class TextCollector implements TextSink {
  private readonly parts: string[] = [];
  done = false;
  write(text: string): boolean {
    this.parts.push(text);
    return true;
  }
  end(): void {
    this.done = true;
  }
  text(): string {
    return this.parts.join('');
  }
}
