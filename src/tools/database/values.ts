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
