import { describe, expect, it } from 'vitest';
import { decodeBytesVisibly } from '../../../src/backends/names.js';
import { capOutput, escapeControlChars, truncateUtf8 } from '../../../src/tools/core/sanitize.js';

describe('decodeBytesVisibly', () => {
  it('keeps valid UTF-8 of every length and escapes each invalid byte', () => {
    const valid = 'aé€😀';
    expect(decodeBytesVisibly(Buffer.from(valid))).toBe(valid);
    expect(decodeBytesVisibly(Buffer.from([0x61, 0x80, 0x62]))).toBe('a\\x80b');
    // overlong encoding of '/', a surrogate half, and a truncated 3-byte sequence at the end
    expect(decodeBytesVisibly(Buffer.from([0xc0, 0xaf, 0xed, 0xa0, 0x80, 0xe2, 0x82]))).toBe('\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x82');
  });
});

describe('escapeControlChars', () => {
  it('keeps tab and newline, escapes the rest of C0, DEL and C1', () => {
    expect(escapeControlChars('a\tb\nc\x00d\x07e\x7ff\u0085g\rh')).toBe('a\tb\nc\\x00d\\x07e\\x7ff\\x85g\\rh');
  });
});

describe('truncateUtf8 and capOutput', () => {
  it('never splits a multi-byte character', () => {
    expect(truncateUtf8('ééé', 3)).toBe('é');
  });

  it('leaves short output alone', () => {
    expect(capOutput('short', 100)).toEqual({ text: 'short', truncated: false, originalBytes: 5 });
  });

  it('stays within the limit including the marker', () => {
    const capped = capOutput('x'.repeat(5000), 1000);
    expect(capped.truncated).toBe(true);
    expect(Buffer.byteLength(capped.text)).toBeLessThanOrEqual(1000);
    expect(capped.text).toContain('of 5000 bytes');
  });
});
