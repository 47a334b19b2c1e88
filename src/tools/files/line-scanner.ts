import { countContinuationBytes, LINE_HEAD_BYTES } from '../core/long-lines.js';

/** A line kept by the scanner: its number, its first bytes (without \r\n) and its full length. */
export interface ScannedLine {
  number: number;
  head: Buffer;
  totalChars: number;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits a byte stream into lines in constant memory: keeps the heads of the lines numbered
 * `first..last` and only counts the others, so that the true total of a huge file is known.
 */
export class LineScanner {
  readonly lines: ScannedLine[] = [];
  /** Newline characters seen, and how many of them were preceded by \r. */
  newlines = 0;
  crlfNewlines = 0;
  totalBytes = 0;

  private lineNumber = 1;
  private lineBytes = 0;
  private lineContinuation = 0;
  private headParts: Buffer[] = [];
  private headBytes = 0;
  private previousByte = -1;

  constructor(
    private readonly first: number,
    private readonly last: number,
  ) {}

  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    let position = 0;
    while (position < chunk.length) {
      const newline = chunk.indexOf(LF, position);
      const end = newline === -1 ? chunk.length : newline;
      if (this.lineNumber >= this.first && this.lineNumber <= this.last) this.keep(chunk, position, end);
      else this.lineBytes += end - position;
      if (newline === -1) break;
      const before = newline > 0 ? chunk[newline - 1]! : this.previousByte;
      this.newlines++;
      if (before === CR) this.crlfNewlines++;
      this.endLine(before === CR);
      position = newline + 1;
    }
    if (chunk.length > 0) this.previousByte = chunk[chunk.length - 1]!;
  }

  /** Whether every line of the window has been seen (the rest is only counted). */
  get windowDone(): boolean {
    return this.lineNumber > this.last;
  }

  /** Call once at the end of the stream. */
  finish(): void {
    if (this.lineBytes === 0) return;
    this.unterminatedLastLine = true;
    this.endLine(false);
  }

  /** Lines as `cat -n` numbers them: a last line without a newline counts too. */
  get totalLines(): number {
    return this.newlines + (this.unterminatedLastLine ? 1 : 0);
  }

  private unterminatedLastLine = false;

  private keep(chunk: Buffer, start: number, end: number): void {
    this.lineBytes += end - start;
    this.lineContinuation += countContinuationBytes(chunk, start, end);
    const room = LINE_HEAD_BYTES + 1 - this.headBytes; // one spare byte for a \r before the newline
    if (room > 0 && end > start) {
      const part = chunk.subarray(start, Math.min(end, start + room));
      this.headParts.push(Buffer.from(part));
      this.headBytes += part.length;
    }
  }

  private endLine(endsWithCr: boolean): void {
    if (this.lineNumber >= this.first && this.lineNumber <= this.last) {
      let head = Buffer.concat(this.headParts, this.headBytes);
      let bytes = this.lineBytes;
      if (endsWithCr && bytes > 0) {
        bytes -= 1;
        if (head.length > bytes) head = head.subarray(0, bytes);
      }
      this.lines.push({ number: this.lineNumber, head, totalChars: bytes - this.lineContinuation });
    }
    this.lineNumber++;
    this.lineBytes = 0;
    this.lineContinuation = 0;
    this.headParts = [];
    this.headBytes = 0;
  }
}
