import { countContinuationBytes, LINE_HEAD_BYTES } from '../core/long-lines.js';

/**
 * Parses what ripgrep (`--null --line-number --with-filename`) and GNU grep (`-Z -n -H`) both
 * print: `PATH\0LINE:TEXT` for a matching line, `PATH\0LINE-TEXT` for a context line, `--`
 * between groups. The NUL after the path means paths holding ':' or '-' parse right. Other lines
 * (ripgrep's notes about binary files) are ignored. Streaming, in bounded memory: only the
 * first bytes of each output line are kept.
 */

export interface GrepRecord {
  /** Path bytes as printed by the engine (relative to its working directory). */
  path: Buffer;
  line: number;
  isMatch: boolean;
  /** The first bytes of the line's text (trailing \r removed). */
  head: Buffer;
  totalChars: number;
}

const LF = 0x0a;
const CR = 0x0d;
const NUL = 0x00;
const COLON = 0x3a;
const DASH = 0x2d;
/** Room for the longest path (PATH_MAX) and line number in front of the text. */
const PREFIX_ROOM = 4096 + 32;
const KEEP_BYTES = PREFIX_ROOM + LINE_HEAD_BYTES + 1;

export class GrepOutputParser {
  readonly records: GrepRecord[] = [];
  matches = 0;
  /** Set once a match beyond the limit was seen: more matches exist and parsing stops. */
  overLimit = false;

  private parts: Buffer[] = [];
  private keptBytes = 0;
  /** Lines without a NUL: the start of a path that holds a newline, joined to the next line. */
  private pending: Buffer | null = null;
  private lineBytes = 0;
  private lineContinuation = 0;

  constructor(private readonly maxMatches: number) {}

  push(chunk: Buffer): void {
    let position = 0;
    while (position < chunk.length && !this.overLimit) {
      const newline = chunk.indexOf(LF, position);
      const end = newline === -1 ? chunk.length : newline;
      this.keep(chunk, position, end);
      if (newline === -1) break;
      this.endLine();
      position = newline + 1;
    }
  }

  finish(): void {
    if (this.lineBytes > 0 && !this.overLimit) this.endLine();
  }

  private keep(chunk: Buffer, start: number, end: number): void {
    this.lineBytes += end - start;
    this.lineContinuation += countContinuationBytes(chunk, start, end);
    const room = KEEP_BYTES - this.keptBytes;
    if (room > 0 && end > start) {
      const part = Buffer.from(chunk.subarray(start, Math.min(end, start + room)));
      this.parts.push(part);
      this.keptBytes += part.length;
    }
  }

  private endLine(): void {
    let kept = Buffer.concat(this.parts, this.keptBytes);
    let lineBytes = this.lineBytes;
    if (this.pending) {
      kept = Buffer.concat([this.pending, kept]).subarray(0, KEEP_BYTES);
      lineBytes += this.pending.length;
      this.pending = null;
    }
    const isSeparator = kept.length === 2 && kept[0] === DASH && kept[1] === DASH;
    if (!isSeparator && kept.indexOf(NUL) === -1 && kept.length < PREFIX_ROOM) {
      // A path cannot hold NUL, so the line is the first part of one that holds a newline.
      this.pending = Buffer.concat([kept, Buffer.from([LF])]);
      this.parts = [];
      this.keptBytes = 0;
      this.lineBytes = 0;
      this.lineContinuation = 0;
      return;
    }
    const record = parseRecord(kept, lineBytes, this.lineContinuation);
    this.parts = [];
    this.keptBytes = 0;
    this.lineBytes = 0;
    this.lineContinuation = 0;
    if (!record) return;
    if (record.isMatch) {
      if (this.matches === this.maxMatches) {
        this.overLimit = true;
        return;
      }
      this.matches++;
    }
    this.records.push(record);
  }
}

function parseRecord(kept: Buffer, lineBytes: number, lineContinuation: number): GrepRecord | null {
  const nul = kept.indexOf(NUL);
  if (nul <= 0) return null;
  let position = nul + 1;
  let line = 0;
  while (position < kept.length && kept[position]! >= 0x30 && kept[position]! <= 0x39) {
    line = line * 10 + (kept[position]! - 0x30);
    position++;
  }
  const separator = kept[position];
  if (position === nul + 1 || (separator !== COLON && separator !== DASH)) return null;
  const textStart = position + 1;
  let textBytes = lineBytes - textStart;
  let head = kept.subarray(textStart);
  if (textBytes > 0 && head.length >= textBytes && head[textBytes - 1] === CR) {
    textBytes -= 1;
    head = head.subarray(0, textBytes);
  }
  const continuation = lineContinuation - countContinuationBytes(kept, 0, textStart);
  return { path: kept.subarray(0, nul), line, isMatch: separator === COLON, head, totalChars: textBytes - continuation };
}
