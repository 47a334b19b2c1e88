import type { CellValue } from './model.js';

/**
 * Cell values as a user sees them in Excel: dates as ISO dates, percentages with a %, numbers
 * without binary float noise, booleans as TRUE/FALSE, errors as written. Shared by .xlsx and .xls.
 */

/** Longest cell text shown; longer values are cut with a marker. */
export const MAX_CELL_CHARS = 300;

const MS_PER_DAY = 86_400_000;
/** Serial 0 of the 1900 date system is 1899-12-30 once Excel's fictitious 1900-02-29 is skipped. */
const EPOCH_1900 = Date.UTC(1899, 11, 30);
const EPOCH_1904 = Date.UTC(1904, 0, 1);
/** 9999-12-31, the last date Excel shows. */
const MAX_DATE_SERIAL = 2_958_465;

export type FormatKind = 'date' | 'datetime' | 'time' | 'percent' | 'general';

/** Built-in number formats (ECMA-376 18.8.30) that are dates, times or percentages. */
const BUILTIN_FORMATS: Record<number, string> = {
  9: '0%', 10: '0.00%',
  14: 'yyyy-mm-dd', 15: 'd-mmm-yy', 16: 'd-mmm', 17: 'mmm-yy', 18: 'h:mm AM/PM', 19: 'h:mm:ss AM/PM',
  20: 'h:mm', 21: 'h:mm:ss', 22: 'yyyy-mm-dd h:mm', 45: 'mm:ss', 46: '[h]:mm:ss', 47: 'mm:ss.0',
  27: 'yyyy-mm-dd', 28: 'yyyy-mm-dd', 29: 'yyyy-mm-dd', 30: 'yyyy-mm-dd', 31: 'yyyy-mm-dd', 32: 'h:mm:ss', 33: 'h:mm:ss',
  34: 'h:mm:ss', 35: 'h:mm:ss', 36: 'yyyy-mm-dd', 50: 'yyyy-mm-dd', 51: 'yyyy-mm-dd', 52: 'yyyy-mm-dd', 53: 'yyyy-mm-dd',
  54: 'yyyy-mm-dd', 55: 'yyyy-mm-dd', 56: 'yyyy-mm-dd', 57: 'yyyy-mm-dd', 58: 'yyyy-mm-dd',
};

export function builtinFormatCode(id: number): string {
  return BUILTIN_FORMATS[id] ?? 'General';
}

const kindCache = new Map<string, FormatKind>();

/** Whether a number format shows a date, a time, both, a percentage, or plain numbers. */
export function classifyFormat(code: string): FormatKind {
  const cached = kindCache.get(code);
  if (cached) return cached;
  // Only the first section (positive numbers) matters; quoted text, escapes and [colour]/[$-409]
  // brackets are not format letters, but [h] [mm] [ss] (elapsed time) are.
  const section = code.split(';')[0] ?? '';
  const letters = section
    .replace(/"[^"]*"/g, '')
    .replace(/\\./g, '')
    .replace(/\[(h+|m+|s+)\]/gi, '$1')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/_.|\*./g, '')
    .toLowerCase();
  let kind: FormatKind;
  const hasTime = /[hs]/.test(letters) || letters.includes('am/pm');
  const hasDate = /[yd]/.test(letters) || (/m/.test(letters) && !hasTime);
  if (letters === 'general') kind = 'general';
  else if (hasDate && hasTime) kind = 'datetime';
  else if (hasDate) kind = 'date';
  else if (hasTime) kind = 'time';
  else if (letters.includes('%')) kind = 'percent';
  else kind = 'general';
  kindCache.set(code, kind);
  return kind;
}

/** A number with binary float noise removed: 0.30000000000000004 → "0.3". */
export function cleanNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(15)));
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** An Excel date serial as ISO text, or null when it is outside Excel's date range. */
export function serialToIso(serial: number, kind: 'date' | 'datetime' | 'time', date1904: boolean): string | null {
  if (!Number.isFinite(serial) || serial < 0 || serial > MAX_DATE_SERIAL) return null;
  // Whole seconds, rounded: 0.5729166666 of a day is 13:45:00, not 13:44:59.999.
  const totalSeconds = Math.round(serial * 86_400);
  const days = Math.floor(totalSeconds / 86_400);
  const seconds = totalSeconds - days * 86_400;
  const time = `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor((seconds % 3600) / 60))}:${pad(seconds % 60)}`;
  if (kind === 'time') return time;
  let date: string;
  if (!date1904 && days === 60) date = '1900-02-29'; // Excel's fictitious leap day, kept as Excel shows it
  else {
    const epoch = date1904 ? EPOCH_1904 : days < 60 ? EPOCH_1900 + MS_PER_DAY : EPOCH_1900;
    const d = new Date(epoch + days * MS_PER_DAY);
    date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  }
  return kind === 'date' ? date : `${date} ${time}`;
}

function formatNumber(value: number, format: string, date1904: boolean): string {
  const kind = classifyFormat(format);
  if (kind === 'date' || kind === 'datetime' || kind === 'time') return serialToIso(value, kind, date1904) ?? cleanNumber(value);
  if (kind === 'percent') return `${cleanNumber(value * 100)}%`;
  return cleanNumber(value);
}

/** Tabs, newlines and carriage returns inside a cell would break the row layout: shown escaped. */
export function escapeCellText(text: string): string {
  return text.replace(/[\t\n\r]/g, (c) => (c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

function cut(text: string): string {
  if (text.length <= MAX_CELL_CHARS) return text;
  const chars = Array.from(text);
  if (chars.length <= MAX_CELL_CHARS) return text;
  return `${chars.slice(0, MAX_CELL_CHARS).join('')}…[${chars.length} chars]`;
}

export function displayCellValue(value: CellValue, date1904: boolean): string {
  switch (value.kind) {
    case 'number':
      return formatNumber(value.value, value.format, date1904);
    case 'string':
      return cut(escapeCellText(value.text));
    case 'boolean':
      return value.value ? 'TRUE' : 'FALSE';
    case 'error':
      return value.text;
    case 'isoDate':
      return value.text.replace('T', ' ').replace(/(\.\d+)?Z?$/, '').replace(/ 00:00:00$/, '');
    case 'noCachedValue':
      return cut(escapeCellText(value.formula ? `=${value.formula} [formula, no cached value]` : '[formula, no cached value]'));
  }
}

/** Decodes Excel's `_xHHHH_` escapes (control characters stored in XML text). */
export function decodeOoxmlEscapes(text: string): string {
  if (!text.includes('_x')) return text;
  return text.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
