import { Readable } from 'node:stream';
import { RandomAccessReader } from 'yauzl';
import type { Backend } from '../../backends/types.js';
import { readBytes } from './file-bytes.js';

/**
 * yauzl's view of a file read through the Backend by byte ranges. yauzl makes many small reads
 * (directory records, local headers, small parts): they are served from blocks read whole, the
 * file's end (the directory; in files Excel writes, also the styles and the string table) and the
 * last block read ahead of a small read that missed (workbook.xml and its relationships, or a
 * sheet's local header, usually lie together). A part's data beyond them streams from the
 * backend. On the daytona backend every read is a round trip, so this keeps them few.
 */

/** Bytes read at once from the end of the file. */
const TAIL_BYTES = 1024 * 1024;
/** Bytes read at once from where a small read missed the blocks in memory. */
const READ_AHEAD_BYTES = 64 * 1024;

interface Block {
  start: number;
  bytes: Buffer;
}

function slice(block: Block | null, start: number, end: number): Buffer | null {
  if (!block || start < block.start || end > block.start + block.bytes.length) return null;
  return block.bytes.subarray(start - block.start, end - block.start);
}

/** A failure of the backend while reading (not of the zip): reported as it is. */
export class SourceReadError extends Error {
  constructor(readonly original: unknown) {
    super('reading the file failed');
  }
}

async function* sourceChunks(chunks: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  try {
    yield* chunks;
  } catch (error) {
    throw new SourceReadError(error);
  }
}

async function readOrTag(backend: Backend, path: string, start: number, end: number): Promise<Buffer> {
  try {
    return await readBytes(backend, path, start, end);
  } catch (error) {
    throw new SourceReadError(error);
  }
}

export class BackendRangeReader extends RandomAccessReader {
  private readAhead: Block | null = null;

  private constructor(
    private readonly backend: Backend,
    private readonly path: string,
    private readonly size: number,
    private readonly tail: Block,
  ) {
    super();
  }

  static async open(backend: Backend, path: string, size: number): Promise<BackendRangeReader> {
    const start = Math.max(0, size - TAIL_BYTES);
    return new BackendRangeReader(backend, path, size, { start, bytes: await readOrTag(backend, path, start, size) });
  }

  private inMemory(start: number, end: number): Buffer | null {
    return slice(this.tail, start, end) ?? slice(this.readAhead, start, end);
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const known = this.inMemory(start, end);
    return Readable.from(known ? [known] : sourceChunks(this.backend.readStream(this.path, { start, end })), { objectMode: false });
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, callback: (error: Error | null) => void): void {
    this.bytesAt(position, position + length).then(
      (bytes) => {
        // yauzl's own readers fail a read that the end of the file cuts short, with this message.
        if (bytes.length < length) return callback(new Error('unexpected EOF'));
        bytes.copy(buffer, offset);
        callback(null);
      },
      (error: Error) => callback(error),
    );
  }

  private async bytesAt(start: number, end: number): Promise<Buffer> {
    const known = this.inMemory(start, end);
    if (known) return known;
    if (end - start > READ_AHEAD_BYTES) return readOrTag(this.backend, this.path, start, end);
    this.readAhead = { start, bytes: await readOrTag(this.backend, this.path, start, Math.min(this.size, start + READ_AHEAD_BYTES)) };
    return slice(this.readAhead, start, Math.min(end, this.size)) ?? Buffer.alloc(0);
  }
}
