/**
 * Making tool output safe to show a model: bytes that are not valid UTF-8 and control
 * characters (other than tab and newline) become visible escapes such as `\x00` or `\x1b`,
 * and output is capped with a marker that says what was cut.
 */

import { decodeBytesVisibly, hexEscape } from '../../backends/names.js';

export const MAX_TOOL_OUTPUT_BYTES = 64 * 1024;

// C0 controls except \t (0x09) and \n (0x0a), DEL, and C1 controls.
const CONTROL_CHARS = /[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]/g;

export function escapeControlChars(text: string): string {
  return text.replace(CONTROL_CHARS, (char) => {
    const code = char.charCodeAt(0);
    if (char === '\r') return '\\r';
    return code <= 0xff ? hexEscape(code) : char;
  });
}

export function sanitizeOutput(output: string | Uint8Array): string {
  return escapeControlChars(typeof output === 'string' ? output : decodeBytesVisibly(output));
}

/** Cuts `text` to at most `limit` UTF-8 bytes on a character boundary. */
export function truncateUtf8(text: string, limit: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return text;
  let end = limit;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

export interface CappedOutput {
  text: string;
  truncated: boolean;
  originalBytes: number;
}

/**
 * Caps output at `limit` bytes (marker included). Keeps the head, cut at a line boundary when
 * one is near, and appends a marker naming how much was cut and how to see more.
 */
export function capOutput(
  text: string,
  limit = MAX_TOOL_OUTPUT_BYTES,
  howToSeeMore = 'narrow the request (a smaller range, a more specific pattern or path)',
): CappedOutput {
  const originalBytes = Buffer.byteLength(text, 'utf8');
  if (originalBytes <= limit) return { text, truncated: false, originalBytes };
  const marker = (keptBytes: number) =>
    `\n[output cut: showing the first ${keptBytes} of ${originalBytes} bytes; ${originalBytes - keptBytes} bytes not shown. To see more, ${howToSeeMore}.]`;
  const room = limit - Buffer.byteLength(marker(limit), 'utf8');
  let head = truncateUtf8(text, Math.max(room, 0));
  const lastNewline = head.lastIndexOf('\n');
  if (lastNewline > head.length * 0.8) head = head.slice(0, lastNewline);
  const kept = Buffer.byteLength(head, 'utf8');
  return { text: head + marker(kept), truncated: true, originalBytes };
}
