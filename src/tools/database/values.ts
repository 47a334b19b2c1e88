import type { CellValue } from './types.js';

/**
 * How a database value becomes text, exactly: drivers deliver decimals, big integers and dates
 * as strings (or bigint), so nothing here rounds. Shared by result tables and CSV export.
 */
export function valueToText(value: CellValue): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return numberToText(value);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (Buffer.isBuffer(value)) return `\\x${value.toString('hex')}`;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  return JSON.stringify(value, (_key, inner: unknown) => (typeof inner === 'bigint' ? inner.toString() : inner));
}

/**
 * JavaScript's own text for a number (the shortest decimal that reads back as the same double),
 * with a faster path for values with at most two decimals (prices, amounts), which V8 prints
 * several times slower than integers. The path is exact: when `k / 100 === value` the double is
 * the one nearest to the decimal k/100; below 10^13 doubles lie less than 0.002 apart, so no
 * other decimal with two or fewer decimals reads back as it, and a shorter one would be such a
 * decimal. So the shortest text is k/100 without trailing zeros, which is what this writes.
 */
export function numberToText(value: number): string {
  const cents = Math.round(value * 100);
  if (cents / 100 !== value || !(Math.abs(cents) < 1e15)) return String(value);
  const magnitude = Math.abs(cents);
  const whole = Math.floor(magnitude / 100);
  const fraction = magnitude - whole * 100;
  const sign = cents < 0 ? '-' : '';
  if (fraction === 0) return `${sign}${whole}`;
  if (fraction % 10 === 0) return `${sign}${whole}.${fraction / 10}`;
  return `${sign}${whole}.${fraction < 10 ? '0' : ''}${fraction}`;
}

/**
 * Characters of a text (bytes of a blob) a query result keeps per value. Result tables show at
 * most MAX_CELL_CHARS characters of a value (format.ts), and escaping only lengthens text, so
 * anything past this bound is never shown: drivers cut values as rows arrive, and 1,000 rows of
 * 1 MB values no longer take a gigabyte. Exports never cut.
 */
export const KEPT_VALUE_CHARS = 1024;
/**
 * The first rows of a result keep far more: a result of one or a few long values (a table's DDL
 * from SHOW CREATE TABLE or sqlite_master, a JSON document) is shown whole up to the output cap
 * in a vertical layout (format.ts), so those rows must still hold the whole value.
 */
export const LONG_VALUE_ROWS = 10;
export const KEPT_LONG_VALUE_CHARS = 64 * 1024;

/** The row with long texts and blobs cut to what a result can show (in place); `index` is the row's place in the result. */
export function cutForDisplay(row: CellValue[], index = LONG_VALUE_ROWS): CellValue[] {
  const kept = index < LONG_VALUE_ROWS ? KEPT_LONG_VALUE_CHARS : KEPT_VALUE_CHARS;
  for (let i = 0; i < row.length; i++) {
    const value = row[i];
    // A plain slice would be a V8 sliced string that keeps the whole value alive; joining copies.
    if (typeof value === 'string' && value.length > kept) row[i] = cutChars(value, kept).split('').join('');
    else if (Buffer.isBuffer(value) && value.length > kept) row[i] = Buffer.from(value.subarray(0, kept));
  }
  return row;
}

/** The first `limit` UTF-16 units of a text, one fewer when that would split a surrogate pair (an emoji). */
export function cutChars(text: string, limit: number): string {
  if (text.length <= limit) return text;
  const code = text.charCodeAt(limit - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit);
}

/** A text cut to at most `limit` characters on a character boundary, ending with "…" when cut. */
export function shortened(text: string, limit: number): string {
  return text.length <= limit ? text : `${cutChars(text, limit - 1)}…`;
}
