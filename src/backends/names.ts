/**
 * How names and undecodable bytes are shown: as visible escapes, never raw. The backends list
 * directories with these names, and the tools show them (src/tools/core/sanitize.ts escapes output
 * the same way).
 */

export function hexEscape(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

/** Length of the valid UTF-8 sequence starting at `i`, or 0 when the byte there starts none. */
function utf8SequenceLength(bytes: Uint8Array, i: number): number {
  const b0 = bytes[i]!;
  if (b0 < 0x80) return 1;
  let length: number;
  let min: number;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
    min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    min = 0x10000;
  } else return 0;
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
