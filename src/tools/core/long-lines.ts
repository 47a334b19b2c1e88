import { decodeBytesVisibly } from '../../backends/names.js';

/** Lines longer than this many characters are cut by read and grep. */
export const MAX_LINE_CHARS = 500;
/** Bytes of a line worth keeping to show MAX_LINE_CHARS characters (UTF-8 is at most 4 bytes each). */
export const LINE_HEAD_BYTES = MAX_LINE_CHARS * 4;

/** Characters (code points) in UTF-8 bytes: every byte that is not a continuation byte starts one. */
export function countContinuationBytes(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let continuation = 0;
  for (let i = start; i < end; i++) {
    if ((bytes[i]! & 0xc0) === 0x80) continuation++;
  }
  return continuation;
}

/**
 * "2,000": a number as `toLocaleString('en-US')` writes it. Integers are grouped here by hand,
 * because the first toLocaleString of a process loads ICU's number formats (about 15 ms, paid by
 * every command that printed a count or built a tool description with one); other numbers use it.
 */
export function formatCount(n: number): string {
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return n.toLocaleString('en-US');
  const digits = String(Math.abs(n));
  let out = digits.slice(0, digits.length % 3 || 3);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return n < 0 ? `-${out}` : out;
}

/** "1 file", "2,000 files". */
export function countOf(n: number, singular: string, plural = `${singular}s`): string {
  return `${formatCount(n)} ${n === 1 ? singular : plural}`;
}

/**
 * Shows the head of a line, at most MAX_LINE_CHARS characters, with a marker when the line was
 * longer. `totalChars` is the whole line's length (the head may hold only part of the line).
 */
export function showLine(head: Uint8Array, totalChars: number): { text: string; cut: boolean } {
  const decoded = decodeBytesVisibly(head);
  // A string has at most as many characters as UTF-16 units: most lines need no split into characters.
  if (decoded.length <= MAX_LINE_CHARS && totalChars <= MAX_LINE_CHARS) return { text: decoded, cut: false };
  const chars = Array.from(decoded);
  if (chars.length <= MAX_LINE_CHARS && totalChars <= MAX_LINE_CHARS) return { text: decoded, cut: false };
  const total = Math.max(totalChars, chars.length);
  return { text: `${chars.slice(0, MAX_LINE_CHARS).join('')}… [line cut: ${formatCount(total)} chars total]`, cut: true };
}
