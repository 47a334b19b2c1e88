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

/**
 * How a number format shows a number. date/datetime/time: as ISO text (unambiguous whatever the
 * file's locale); elapsed ([h]:mm:ss, [mm]:ss) and a lone date or time part ("d", "yy", "mmmm",
 * "h", which LibreOffice puts on plain numbers): exactly as Excel shows them, through SheetJS's formatter;
 * percent: the number times 100 with a %; general: the number itself, full precision.
 */
export type FormatKind = 'date' | 'datetime' | 'time' | 'elapsed' | 'excelText' | 'percent' | 'general';

/** Built-in number formats (ECMA-376 18.8.30) that are dates, times or percentages. */
const BUILTIN_FORMATS: Record<number, string> = {
  9: '0%',
  10: '0.00%',
  14: 'yyyy-mm-dd',
  15: 'd-mmm-yy',
  16: 'd-mmm',
  17: 'mmm-yy',
  18: 'h:mm AM/PM',
  19: 'h:mm:ss AM/PM',
  20: 'h:mm',
  21: 'h:mm:ss',
  22: 'yyyy-mm-dd h:mm',
  45: 'mm:ss',
  46: '[h]:mm:ss',
  47: 'mm:ss.0',
  27: 'yyyy-mm-dd',
  28: 'yyyy-mm-dd',
  29: 'yyyy-mm-dd',
  30: 'yyyy-mm-dd',
  31: 'yyyy-mm-dd',
  32: 'h:mm:ss',
  33: 'h:mm:ss',
  34: 'h:mm:ss',
  35: 'h:mm:ss',
  36: 'yyyy-mm-dd',
  50: 'yyyy-mm-dd',
  51: 'yyyy-mm-dd',
  52: 'yyyy-mm-dd',
  53: 'yyyy-mm-dd',
  54: 'yyyy-mm-dd',
  55: 'yyyy-mm-dd',
  56: 'yyyy-mm-dd',
  57: 'yyyy-mm-dd',
  58: 'yyyy-mm-dd',
};

export function builtinFormatCode(id: number): string {
  return BUILTIN_FORMATS[id] ?? 'General';
}

type Ssf = typeof import('@e965/xlsx').SSF;
let ssf: Ssf | undefined;

/**
 * Loads SheetJS's number-format engine (SSF, the field's reference implementation of Excel's
 * format codes), which decides what is a date and renders elapsed times. Loaded with a workbook,
 * not at start-up: SheetJS takes a while to import.
 */
export async function loadNumberFormats(): Promise<void> {
  ssf ??= (await import('@e965/xlsx')).SSF;
}

function formatter(): Ssf {
  if (!ssf) throw new Error('number formats used before loadNumberFormats()');
  return ssf;
}

/** A format's sections with literals removed: quoted text, \x escapes, _x padding, *x fills, [colour] [$-409] [>100] brackets (not [h] [mm] [ss]). */
function formatLetters(section: string): string {
  return section
    .replace(/"[^"]*"/g, '')
    .replace(/\\./g, '')
    .replace(/_.|\*./g, '')
    .replace(/\[(?![hms]+\])[^\]]*\]/gi, '')
    .toLowerCase();
}

const kindCache = new Map<string, FormatKind>();

function dateKind(letters: string): FormatKind {
  if (/\[(h+|m+|s+)\]/.test(letters)) return 'elapsed';
  const plain = letters.replace(/am\/pm|a\/p/g, '');
  const hasTime = /[hs]/.test(plain) || plain !== letters;
  // m next to h (h:mm) or before s (mm:ss) is minutes, any other m the month.
  const months = plain.replace(/h+[^a-z]*m+/g, 'h').replace(/m+([^a-z]*s)/g, '$1');
  const parts = Number(/[ye]/.test(plain)) + Number(/m/.test(months)) + Number(/d/.test(plain));
  // A lone hour, second or half-day ("h", "hh AM/PM", "ss", "A/P"), which LibreOffice also puts
  // on plain numbers, is shown as Excel shows it ("7", "7 AM", "A").
  const timeParts = Number(/h/.test(plain)) + Number(/m/.test(plain) && !/m/.test(months)) + Number(/s/.test(plain));
  if (parts === 0 && timeParts <= 1) return 'excelText';
  if (parts === 0) return hasTime ? 'time' : 'excelText';
  if (parts === 1 && !hasTime) return 'excelText';
  return hasTime ? 'datetime' : 'date';
}

/** The section of a format code that shows `value` (positive;negative;zero;text). */
function sectionFor(code: string, value: number): string {
  const sections = code.match(/("[^"]*"|\\.|[^;"\\])+/g) ?? [code];
  if (value < 0 && sections.length >= 2) return sections[1]!;
  if (value === 0 && sections.length >= 3) return sections[2]!;
  return sections[0] ?? '';
}

/** Whether a number format shows a date, a time, both, an elapsed time, a percentage, or plain numbers. */
export function classifyFormat(code: string, value = 1): FormatKind {
  const key = `${value < 0 ? '-' : value === 0 ? '0' : '+'}${code}`;
  const cached = kindCache.get(key);
  if (cached) return cached;
  let kind: FormatKind = 'general';
  const section = formatLetters(sectionFor(code, value));
  let isDate = false;
  try {
    isDate = code !== 'General' && formatter().is_date(code);
  } catch {
    isDate = false;
  }
  if (isDate) kind = dateKind(section);
  else if (section.includes('%')) kind = 'percent';
  kindCache.set(key, kind);
  return kind;
}

/**
 * A number as Excel shows it in General format: at most 15 significant digits (Excel's
 * precision), and float noise in the 15th digit removed: 0.30000000000000004 → "0.3", and
 * 0.311199999999999 (0.3112 less one unit in the 15th digit, what arithmetic leaves) → "0.3112",
 * as Excel shows the cell; 1/3 stays 0.333333333333333. A value that is a short decimal (at most
 * 10 significant digits) once its 15th digit is dropped is shown as that decimal.
 */
export function cleanNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const short = Number(value.toPrecision(14));
  if (significantDigits(short) <= 10) return String(short);
  return String(Number(value.toPrecision(15)));
}

function significantDigits(value: number): number {
  const [mantissa = ''] = value.toExponential().split('e');
  return mantissa.replace(/[-.]/g, '').length;
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
  // Excel's fictitious leap day and its day 0 (what a zero, such as an empty lookup's result, shows in a date format), kept as Excel shows them.
  if (!date1904 && days === 60) date = '1900-02-29';
  else if (!date1904 && days === 0) date = '1900-01-00';
  else {
    const epoch = date1904 ? EPOCH_1904 : days < 60 ? EPOCH_1900 + MS_PER_DAY : EPOCH_1900;
    const d = new Date(epoch + days * MS_PER_DAY);
    date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  }
  return kind === 'date' ? date : `${date} ${time}`;
}

function formatNumber(value: number, format: string, date1904: boolean): string {
  const kind = classifyFormat(format, value);
  switch (kind) {
    case 'date':
    case 'datetime':
    case 'time':
      return serialToIso(value, kind, date1904) ?? cleanNumber(value);
    case 'elapsed':
    case 'excelText':
      try {
        // SSF gives "" where Excel shows ##### (a negative or too large serial): the number is shown instead.
        return formatter().format(format, value, { date1904 }) || cleanNumber(value);
      } catch {
        return cleanNumber(value);
      }
    case 'percent':
      return `${cleanNumber(value * 100)}%`;
    case 'general':
      return cleanNumber(value);
  }
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
      return value.text
        .replace('T', ' ')
        .replace(/(\.\d+)?Z?$/, '')
        .replace(/ 00:00:00$/, '');
    case 'noCachedValue':
      return cut(escapeCellText(value.formula ? `=${value.formula} [formula, no cached value]` : '[formula, no cached value]'));
  }
}

/** Decodes Excel's `_xHHHH_` escapes (control characters stored in XML text). */
export function decodeOoxmlEscapes(text: string): string {
  if (!text.includes('_x')) return text;
  return text.replace(/_x([0-9A-Fa-f]{4})_/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}
