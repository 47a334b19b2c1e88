import { parseCsvRecords } from '../database/csv.js';
import { runQuery } from '../database/run-query.js';
import type { CellValue, DatabaseConfig } from '../database/types.js';
import { valueToText } from '../database/values.js';
import { formatCount } from '../core/long-lines.js';
import { ToolError } from '../core/types.js';

/**
 * The chart tool's data: rows of a read-only query (the same statement check and engine
 * read-only layer as `query`) or of a CSV file, with each column's kind decided from its values.
 */

/** The most rows a chart takes; more must be aggregated in SQL first. */
export const MAX_CHART_ROWS = 10_000;
/** The largest CSV file a chart reads. */
export const MAX_CHART_CSV_BYTES = 20 * 1024 * 1024;

export type ColumnKind = 'quantitative' | 'temporal' | 'nominal';

export interface ChartData {
  columns: string[];
  /** Values as plotted: numbers, ISO date text, or text; null for NULL / empty. */
  rows: Array<Array<number | string | null>>;
  kinds: Record<string, ColumnKind>;
  /** Columns of years (1960, "2021"): temporal, their values as four-digit text (see yearColumn). */
  years: string[];
  source: string;
}

const ISO_DATE = /^\d{4}-\d{2}(-\d{2})?([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const NUMBER_TEXT = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

function plotValue(value: CellValue): number | string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  const text = valueToText(value);
  return text === null || text === '' ? null : text;
}

/** A column is quantitative when every value is a number, temporal when every value is an ISO date or time, nominal otherwise. */
export function columnKind(values: ReadonlyArray<number | string | null>): ColumnKind {
  const present = values.filter((value): value is number | string => value !== null);
  if (present.length === 0) return 'nominal';
  // Numeric text beyond the double range ("1e400", a 400-digit NUMERIC) would plot as Infinity: not a number here.
  if (present.every((value) => typeof value === 'number' || (NUMBER_TEXT.test(value.trim()) && Number.isFinite(Number(value.trim()))))) return 'quantitative';
  if (present.every((value) => typeof value === 'string' && ISO_DATE.test(value.trim()))) return 'temporal';
  return 'nominal';
}

/** Names that say a column holds years: year, yr, yyyy, fiscal_year, Jahr, año, année. */
const YEAR_NAME = /year|^(yr|yyyy|fy|jahr|año|anno|ano)$|(^|[^a-z])(yr|jahr|año|année|annee)([^a-z]|$)/i;
const YEAR_TEXT = /^\s*\d{4}\s*$/;

/**
 * A column of years: whole numbers from 1000 to 2999, named as years (a number column called
 * "year" or "yr") or, from a database, held as four-digit text (strftime('%Y', ...)). Plotted as
 * years, not amounts: no thousands separator, no zero baseline, a time axis or ordered categories.
 * (A CSV holds only text, so there the name decides.)
 */
function yearColumn(name: string, values: ReadonlyArray<number | string | null>, typedText: boolean): boolean {
  const present = values.filter((value): value is number | string => value !== null);
  if (present.length === 0) return false;
  const whole = present.every((value) => {
    const number = typeof value === 'number' ? value : YEAR_TEXT.test(value) ? Number(value) : Number.NaN;
    return Number.isInteger(number) && number >= 1000 && number <= 2999;
  });
  if (!whole) return false;
  return YEAR_NAME.test(name) || (typedText && present.every((value) => typeof value === 'string'));
}

function typed(columns: string[], raw: Array<Array<number | string | null>>, source: string, typedText: boolean): ChartData {
  const kinds: Record<string, ColumnKind> = {};
  const years: string[] = [];
  columns.forEach((column, index) => {
    const values = raw.map((row) => row[index] ?? null);
    kinds[column] = columnKind(values);
    if (yearColumn(column, values, typedText)) {
      kinds[column] = 'temporal';
      years.push(column);
    }
  });
  const rows = raw.map((row) =>
    columns.map((column, index) => {
      const value = row[index] ?? null;
      if (value === null) return null;
      if (years.includes(column)) return String(Number(value)).padStart(4, '0');
      if (kinds[column] === 'quantitative') return typeof value === 'number' ? value : Number(value.trim());
      return typeof value === 'string' ? value : String(value);
    }),
  );
  return { columns, rows, kinds, years, source };
}

const TOO_MANY = `a chart takes at most ${formatCount(MAX_CHART_ROWS)} rows`;

export async function queryData(config: DatabaseConfig, sql: string, readOnly: boolean, signal: AbortSignal): Promise<ChartData> {
  // The database tools' own check and wording (refusals as they are, passwords scrubbed from driver text).
  const result = await runQuery(config, sql, MAX_CHART_ROWS, readOnly, signal, 'chart query');
  if (result.more)
    throw new ToolError(
      `chart: the query returns more than ${formatCount(MAX_CHART_ROWS)} rows; ${TOO_MANY}: aggregate in SQL first (GROUP BY, date_trunc/strftime buckets, ` +
        `or a sample)`,
      'too_large',
    );
  if (result.columns.length === 0) throw new ToolError('chart: the statement returned no columns', 'no_data');
  const unique = uniqueNames(result.columns);
  return typed(
    unique,
    result.rows.map((row) => row.map(plotValue)),
    `${config.alias} (${config.engine})`,
    true,
  );
}

export function csvData(text: string, source: string): ChartData {
  const records = parseCsvRecords(/[\r\n]$/.test(text) ? text : `${text}\n`, MAX_CHART_ROWS + 2);
  if (records.length === 0) throw new ToolError(`chart: ${source} is empty`, 'no_data');
  const [header, ...body] = records;
  if (body.length > MAX_CHART_ROWS)
    throw new ToolError(
      `chart: ${source} has more than ${formatCount(MAX_CHART_ROWS)} rows; ${TOO_MANY}: aggregate first (export a GROUP BY query)`,
      'too_large',
    );
  const columns = uniqueNames(header!);
  return typed(
    columns,
    body.map((row) => columns.map((_, index) => (row[index] === undefined || row[index] === '' ? null : row[index]!))),
    source,
    false,
  );
}

/** Column names as Vega-Lite fields: duplicates get a suffix (a field name must be unique). */
function uniqueNames(columns: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return columns.map((column) => {
    const name = column === '' ? 'column' : column;
    const count = seen.get(name) ?? 0;
    seen.set(name, count + 1);
    return count === 0 ? name : `${name}_${count + 1}`;
  });
}
