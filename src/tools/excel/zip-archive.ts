import type { Readable } from 'node:stream';
import { fromRandomAccessReaderPromise, type Entry, type ZipFile } from 'yauzl';
import type { Backend } from '../../backends/types.js';
import { WorkbookError } from './errors.js';
import { BackendRangeReader, SourceReadError } from './range-reader.js';

/**
 * The parts of an .xlsx (a zip) through yauzl, reading the file by byte ranges through the
 * Backend (so the daytona backend works too): the end of the file with the central directory
 * first, then only the parts asked for, each inflated as it streams, so that a reader can stop
 * inside a large sheet and the rest of the file is never read.
 *
 * yauzl rather than unzipper: yauzl finds parts only through the central directory, the one
 * reliable record of sizes and offsets (streaming writers such as exceljs leave them out of the
 * local headers), reads from any random-access source (fromRandomAccessReader), checks entry
 * sizes, handles ZIP64 and has one small dependency. unzipper's streaming Parse walks local
 * headers in file order (a string table stored after the sheet, as Excel writes it, means
 * streaming or buffering the whole sheet first); its Open.custom is the random-access design
 * yauzl is built on, with more dependencies (bluebird, fs-extra and others).
 */

/** yauzl's and zlib's errors as WorkbookErrors; the backend's own errors and bugs pass unchanged. */
function asWorkbookError(error: unknown, part?: string): unknown {
  if (error instanceof WorkbookError) return error;
  if (error instanceof SourceReadError) return error.original;
  if (!(error instanceof Error) || error.constructor !== Error) return error;
  const { message } = error;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code.startsWith('Z_')) return new WorkbookError(`part ${part} is damaged (${message})`, 'corrupt');
  if (message.startsWith('End of central directory record signature not found')) {
    return new WorkbookError('the zip container is damaged or truncated (no end-of-directory record)', 'corrupt');
  }
  if (message.startsWith('too many bytes in the stream')) {
    return new WorkbookError(`part ${part} inflates past the size the zip directory declares for it (a damaged file or a zip bomb); not read`, 'corrupt');
  }
  const method = /^unsupported compression method: (\d+)/.exec(message);
  if (method) return new WorkbookError(`part ${part} uses zip compression method ${method[1]}, which is not supported`, 'unsupported');
  if (message.startsWith('entry is encrypted')) return new WorkbookError(`part ${part} is encrypted inside the zip, which is not supported`, 'unsupported');
  if (message.startsWith('multi-disk zip files')) return new WorkbookError('split (multi-disk) zip archives are not supported', 'unsupported');
  return new WorkbookError(`the zip container is damaged (${message})`, 'corrupt');
}

const MIB = 1024 * 1024;
/** The most a part read whole (workbook.xml, relationships, styles) may inflate to. */
export const MAX_SMALL_PART_BYTES = 64 * MIB;
/** The most a streamed part (a sheet, the shared strings) may inflate to. */
export const MAX_STREAMED_PART_BYTES = 4096 * MIB;

/** Limits of one read_excel call: a zip bomb or a hostile part ends in a clear error, in bounded time and memory. */
export interface ReadLimits {
  signal: AbortSignal;
  /** Date.now() after which reading gives up. */
  deadline: number;
  /** Shown in the time-out message. */
  seconds: number;
}

const megabytes = (bytes: number) => `${Math.round(bytes / MIB).toLocaleString('en-US')} MB`;

function tooLarge(part: string, limit: number): WorkbookError {
  return new WorkbookError(
    `part ${part} inflates past ${megabytes(limit)}, more than any real workbook part (a damaged file or a zip bomb); not read`,
    'too_large',
  );
}

export class ZipArchive {
  private constructor(
    private readonly zip: ZipFile,
    private readonly entries: Map<string, Entry>,
    private readonly limits: ReadLimits,
  ) {}

  /** Reads the central directory; `size` is the file's size in bytes. */
  static async open(backend: Backend, path: string, size: number, limits: ReadLimits): Promise<ZipArchive> {
    try {
      // The reader holds no handle (each range is its own read), so nothing needs closing.
      const reader = await BackendRangeReader.open(backend, path, size);
      const zip = await fromRandomAccessReaderPromise(reader, size, { lazyEntries: true, autoClose: false });
      const entries = new Map<string, Entry>();
      for await (const entry of zip.eachEntry()) {
        // Two parts of one name: readers disagree on which counts (one shows what another hides), so neither is trusted.
        if (entries.has(entry.fileName))
          throw new WorkbookError(
            `the zip holds two parts named ${entry.fileName} (a damaged or crafted file: readers disagree on which one counts); not read`,
            'corrupt',
          );
        entries.set(entry.fileName, entry);
      }
      return new ZipArchive(zip, entries, limits);
    } catch (error) {
      throw asWorkbookError(error);
    }
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** The stored and inflated sizes the zip directory declares for a part (0 when there is no such part). */
  declaredSizes(name: string): { stored: number; inflated: number } {
    const entry = this.entries.get(name);
    return { stored: entry?.compressedSize ?? 0, inflated: entry?.uncompressedSize ?? 0 };
  }

  /**
   * Feeds a part's text to `write` until it returns false; the rest of the part is not read.
   * Inflating stops at `maxBytes` (whatever size the directory declares) and at the call's deadline.
   */
  async streamText(name: string, write: (text: string) => boolean, maxBytes = MAX_STREAMED_PART_BYTES): Promise<void> {
    const entry = this.entries.get(name);
    if (!entry) throw new WorkbookError(`the zip holds no part ${name}`, 'corrupt');
    if (entry.uncompressedSize > maxBytes) throw tooLarge(name, maxBytes);
    const decoder = new TextDecoder('utf-8');
    const { signal, deadline, seconds } = this.limits;
    let stream: Readable | undefined;
    let inflated = 0;
    try {
      stream = await this.zip.openReadStreamPromise(entry);
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (signal.aborted) throw new WorkbookError('cancelled', 'cancelled');
        inflated += chunk.length;
        if (inflated > maxBytes) throw tooLarge(name, maxBytes);
        if (Date.now() > deadline) {
          throw new WorkbookError(
            `gave up reading part ${name} after ${seconds} s (${megabytes(inflated)} inflated so far), the time limit of one read_excel call ` +
              `(QUARRY_EXCEL_SECONDS); read a smaller row range`,
            'timeout',
          );
        }
        if (!write(decoder.decode(chunk, { stream: true }))) return;
      }
      write(decoder.decode());
    } catch (error) {
      throw asWorkbookError(error, name);
    } finally {
      stream?.destroy();
    }
  }

  /** A whole (small) part as text, at most MAX_SMALL_PART_BYTES inflated. */
  async readText(name: string): Promise<string> {
    const parts: string[] = [];
    await this.streamText(
      name,
      (text) => {
        parts.push(text);
        return true;
      },
      MAX_SMALL_PART_BYTES,
    );
    return parts.join('');
  }
}
