/**
 * Making tool output safe to show a model: bytes that are not valid UTF-8 and control
 * characters (other than tab and newline) become visible escapes such as `\x00` or `\x1b`,
 * and output is capped with a marker that says what was cut.
 */

export const MAX_TOOL_OUTPUT_BYTES = 64 * 1024;

function hexEscape(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

/** Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there starts none. */
function utf8SequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  let length: number;
  let min: number;
  if (b0 >= 0xc2 && b0 <= 0xdf) { length = 2; min = 0x80; }
  else if (b0 >= 0xe0 && b0 <= 0xef) { length = 3; min = 0x800; }
  else if (b0 >= 0xf0 && b0 <= 0xf4) { length = 4; min = 0x10000; }
  else return 0;
  if (i + length > bytes.length) return 0;
  let codePoint = b0 & (0xff >> (length + 1));
  for (let k = 1; k < length; k++) {
    const b = bytes[i + k]!;
    if ((b & 0xc0) !== 0x80) return 0;
    codePoint = (codePoint << 6) | (b & 0x3f);
  }
  if (codePoint < min || codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) return 0;
  return length;
}

/** Decodes bytes as UTF-8, writing each byte that is not part of valid UTF-8 as `\xNN`. */
export function decodeBytesVisibly(bytes: Uint8Array, mapText: (text: string) => string = (text) => text): string {
  const decoder = new TextDecoder('utf-8');
  let out = '';
  let runStart = 0;
  let i = 0;
  while (i < bytes.length) {
    const length = utf8SequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    out += mapText(decoder.decode(bytes.subarray(runStart, i))) + hexEscape(bytes[i]!);
    i += 1;
    runStart = i;
  }
  return out + mapText(decoder.decode(bytes.subarray(runStart)));
}

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
export function capOutput(text: string, limit = MAX_TOOL_OUTPUT_BYTES, howToSeeMore = 'narrow the request (a smaller range, a more specific pattern or path)'): CappedOutput {
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

/**
 * A file name (or path) as the tools show it, on one line and unambiguous: bytes that are not
 * valid UTF-8 become `\xNN` as in tool output, control characters `\n`, `\t`, `\r`, `\xNN`
 * (C1 controls `\u0080`-`\u009f`, so they differ from raw bytes), and a backslash is doubled.
 * `unescapeName` reverses it exactly, so the file tools accept a name as shown.
 */
export function escapeName(name: Uint8Array | string): string {
  return decodeBytesVisibly(typeof name === 'string' ? Buffer.from(name, 'utf8') : name, escapeNameText);
}

const NAME_SPECIALS = /[\\\x00-\x1f\x7f\x80-\x9f]/g;
const NAME_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\t': '\\t', '\r': '\\r' };

function escapeNameText(text: string): string {
  return text.replace(NAME_SPECIALS, (char) => {
    const code = char.charCodeAt(0);
    return NAME_ESCAPES[char] ?? (code < 0x80 ? hexEscape(code) : `\\u00${code.toString(16)}`);
  });
}

/** Whether a shown name needed escaping (then `unescapeName` gives other bytes than its UTF-8). */
export function hasNameEscapes(text: string): boolean {
  return /\\(?:[\\ntr]|x[0-9a-f]{2}|u00[89][0-9a-f])/.test(text);
}

/** The bytes of a name shown by `escapeName`; other backslashes stay as they are. */
export function unescapeName(text: string): Buffer {
  const parts: Buffer[] = [];
  let literalStart = 0;
  const pattern = /\\(?:([\\ntr])|x([0-9a-f]{2})|u00([89][0-9a-f]))/g;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    parts.push(Buffer.from(text.slice(literalStart, match.index), 'utf8'));
    if (match[1]) parts.push(Buffer.from(match[1] === '\\' ? '\\' : match[1] === 'n' ? '\n' : match[1] === 't' ? '\t' : '\r', 'utf8'));
    else if (match[2]) parts.push(Buffer.from([parseInt(match[2], 16)]));
    else parts.push(Buffer.from(String.fromCharCode(parseInt(match[3]!, 16)), 'utf8'));
    literalStart = pattern.lastIndex;
  }
  parts.push(Buffer.from(text.slice(literalStart), 'utf8'));
  return Buffer.concat(parts);
}
