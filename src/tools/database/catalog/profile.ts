import { ToolError } from '../../core/types.js';
import { cellText, formatTable } from '../format.js';
import type { CellValue, DatabaseDriver, Engine, RunOptions, TableDescription } from '../types.js';
import { shortened, valueToText } from '../values.js';
import { byCountThenValue, DIALECTS } from './dialects.js';
import { PROFILE_ROWS, profileSource, targetFor, type ProfileSource } from './sampling.js';

/**
 * profile (docs/guide/databases.md "Knowing the data"): per column, the null fraction, distinct count, min and
 * max, mean and standard deviation of numbers, shortest and longest text, and the top values of
 * low-cardinality columns. The engine computes each figure (one aggregate statement per column,
 * one more for the top values) over the whole table when it is small, else over a sample
 * (sampling.ts), and the output says which. A time budget bounds the whole operation: each
 * statement is cancelled when the budget runs out, and the columns not reached are named.
 */

/** Columns profiled when the call names none. */
export const PROFILE_DEFAULT_COLUMNS = 50;
/** Distinct values up to which the top values are listed. */
const LOW_CARDINALITY = 100;
const TOP_VALUES = 5;

type Category = 'number' | 'text' | 'temporal' | 'boolean' | 'binary' | 'other';

/** What an engine's type name says about the aggregates that make sense for it. */
export function categoryOf(type: string): Category {
  const t = type.toLowerCase();
  if (/bool/.test(t)) return 'boolean';
  if (/blob|bytea|binary|\braw\b|\blob\b|clob|image|bfile|geometry|geography/.test(t)) return 'binary';
  if (/interval/.test(t)) return 'other';
  if (/date|time|year/.test(t)) return 'temporal';
  if (/int|numeric|decimal|\bdec\b|real|double|float|number|money|serial|hugeint/.test(t) && !/point|\[\]|array|\blist\b/.test(t)) return 'number';
  if (/char|text|string|\bname\b|uuid|enum|\bset\b|citext|varchar/.test(t)) return 'text';
  return 'other';
}

export interface ColumnProfile {
  name: string;
  type: string;
  rows: number;
  nulls: number;
  distinct: number | null;
  min: CellValue;
  max: CellValue;
  mean: number | null;
  stddev: number | null;
  minLength: number | null;
  maxLength: number | null;
  top: [CellValue, number][];
  /** Why the top values are missing, when they are. */
  topMissing?: string;
  /** Why a figure is missing (budget, an engine error). */
  note?: string;
}

export interface ProfileResult {
  subject: string;
  sampled: string | null;
  rowsRead: number;
  columns: ColumnProfile[];
  notReached: string[];
  /** How many of notReached (the first ones) the time budget left out; the rest are beyond the column limit. */
  outOfBudget?: number;
  totalColumns: number;
  budgetSeconds: number;
}

interface ProfileInput {
  engine: Engine;
  driver: DatabaseDriver;
  options: RunOptions;
  budgetSeconds: number;
  columns?: string[];
}

/** Profile of a table (sampled when large). */
export async function profileTable(input: ProfileInput, description: TableDescription): Promise<ProfileResult> {
  const target = await targetFor(input.engine, input.driver, description, input.options);
  const source = await profileSource(input.driver, target, input.options);
  const available = description.columns.map((column) => ({ name: column.name, type: column.type }));
  const name = description.schema ? `${description.schema}.${description.name}` : description.name;
  return profileColumns(input, name, source, available);
}

const NUMBER_TEXT = /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;
const DATE_TEXT = /^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?([+-]\d{2}(:?\d{2})?|Z)?$/;

/** Profile of a query's rows (its first PROFILE_ROWS); types are read off its first rows. */
export async function profileQuery(input: ProfileInput, sql: string): Promise<ProfileResult> {
  const dialect = DIALECTS[input.engine];
  const head = await input.driver.query(sql, 200, input.options);
  const available = head.columns.map((name, index) => {
    const values = head.rows.map((row) => row[index]).filter((value) => value !== null && value !== undefined);
    let type = 'text';
    if (values.length && values.every((value) => typeof value === 'number' || typeof value === 'bigint')) type = 'number';
    else if (values.length && values.every((value) => typeof value === 'boolean')) type = 'boolean';
    else if (values.length && values.every((value) => value instanceof Date)) type = 'timestamp';
    else if (values.length && values.every((value) => Buffer.isBuffer(value))) type = 'binary';
    else if (values.length && values.every((value) => typeof value === 'string' && NUMBER_TEXT.test(value))) type = 'number (from its values)';
    else if (values.length && values.every((value) => typeof value === 'string' && DATE_TEXT.test(value))) type = 'date (from its values)';
    else if (!values.length) type = 'unknown (no values in the first rows)';
    return { name, type };
  });
  const unique = new Set(head.columns);
  if (unique.size !== head.columns.length)
    throw new ToolError('profile: the query returns two columns with the same name; give each column its own alias', 'invalid_arguments');
  const source: ProfileSource = { from: `(${dialect.limit(`SELECT * FROM (\n${sql}\n) quarry_query`, PROFILE_ROWS)}) quarry_rows`, params: [], sampled: null };
  const result = await profileColumns(input, 'the query', source, available);
  if (result.rowsRead >= PROFILE_ROWS) result.sampled = `the query's first ${PROFILE_ROWS.toLocaleString('en-US')} rows (it may return more)`;
  return result;
}

async function profileColumns(
  input: ProfileInput,
  subject: string,
  source: ProfileSource,
  available: { name: string; type: string }[],
): Promise<ProfileResult> {
  const { engine, driver, options } = input;
  let chosen = available;
  if (input.columns?.length) {
    const missing = input.columns.filter((name) => !available.some((column) => column.name === name));
    if (missing.length)
      throw new ToolError(
        `profile: no column ${missing.map((name) => JSON.stringify(name)).join(', ')} in ${subject}; columns: ${available
          .slice(0, 40)
          .map((column) => column.name)
          .join(', ')}${available.length > 40 ? ', …' : ''}`,
        'invalid_arguments',
      );
    chosen = available.filter((column) => input.columns!.includes(column.name));
  }
  const limited = input.columns?.length ? chosen : chosen.slice(0, PROFILE_DEFAULT_COLUMNS);
  const deadline = Date.now() + input.budgetSeconds * 1000;
  const profiles: ColumnProfile[] = [];
  const notReached: string[] = [];
  let rowsRead = 0;
  let firstError: unknown;
  for (const column of limited) {
    const left = deadline - Date.now();
    if (left <= 0) {
      notReached.push(column.name);
      continue;
    }
    const budget = AbortSignal.timeout(left);
    const columnOptions: RunOptions = { ...options, signal: AbortSignal.any([options.signal, budget]) };
    try {
      const profile = await profileColumn(engine, driver, source, column.name, column.type, columnOptions);
      rowsRead = Math.max(rowsRead, profile.rows);
      profiles.push(profile);
    } catch (error) {
      if (options.signal.aborted) throw error;
      if (budget.aborted) {
        notReached.push(column.name);
        continue;
      }
      // A lost connection fails the whole call: a profile is whole or not written (the driver
      // learns of the loss from the client's events, which may come just after the error).
      await new Promise((resolve) => setImmediate(resolve));
      if (driver.connectionLost?.()) throw error;
      profiles.push(emptyProfile(column.name, column.type, `not profiled: ${firstLine(error)}`));
      firstError ??= error;
    }
  }
  // Not one column could be profiled: that is a failed call, not a profile of 0 rows.
  if (firstError !== undefined && profiles.every((profile) => profile.note !== undefined)) throw firstError;
  const outOfBudget = notReached.length;
  if (chosen.length > limited.length) notReached.push(...chosen.slice(limited.length).map((column) => column.name));
  return {
    subject,
    sampled: source.sampled,
    rowsRead,
    columns: profiles,
    notReached,
    outOfBudget,
    totalColumns: available.length,
    budgetSeconds: input.budgetSeconds,
  };
}

function emptyProfile(name: string, type: string, note: string): ColumnProfile {
  return { name, type, rows: 0, nulls: 0, distinct: null, min: null, max: null, mean: null, stddev: null, minLength: null, maxLength: null, top: [], note };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 300);
}

function toNumber(value: CellValue): number | null {
  if (value === null || value === undefined) return null;
  const number = Number(value);
  return Number.isFinite(number) ? number : null;
}

async function profileColumn(
  engine: Engine,
  driver: DatabaseDriver,
  source: ProfileSource,
  name: string,
  type: string,
  options: RunOptions,
): Promise<ColumnProfile> {
  const dialect = DIALECTS[engine];
  const column = dialect.quote(name);
  const category = categoryOf(type);
  const ordered = category === 'number' || category === 'text' || category === 'temporal';
  // Numbers told apart only by their text (a query's values) are tried as numbers first, then as text.
  const attempts: Category[] = category === 'number' && / \(from its values\)$/.test(type) ? ['number', 'text'] : [category];
  // A number column whose standard deviation overflows (values near 1e300) is tried again without it.
  if (category === 'number' && dialect.stddev) attempts.splice(1, 0, 'number');
  let lastError: unknown;
  for (const [index, attempt] of attempts.entries()) {
    const spread = attempt === 'number' && index === 0;
    const value = attempt === 'binary' ? null : ordered && attempt === category ? column : dialect.asText(column);
    const parts = ['COUNT(*)', `COUNT(${column})`];
    if (value) parts.push(`COUNT(DISTINCT ${value})`, `MIN(${value})`, `MAX(${value})`);
    const double = dialect.asDouble(column);
    // Never AVG(x²) − AVG(x)²: on large values with a small spread (epoch times, ids) it cancels to 0.
    if (attempt === 'number') parts.push(`AVG(${double})`, spread && dialect.stddev ? dialect.stddev(double) : 'NULL');
    if (attempt === 'text') parts.push(`MIN(${dialect.length(column)})`, `MAX(${dialect.length(column)})`);
    try {
      const [row = []] = await driver.catalog(`SELECT ${parts.join(', ')} FROM ${source.from}`, source.params, options);
      const rows = toNumber(row[0] ?? 0) ?? 0;
      const nonNull = toNumber(row[1] ?? 0) ?? 0;
      const profile: ColumnProfile = emptyProfile(name, type, '');
      delete profile.note;
      profile.rows = rows;
      profile.nulls = rows - nonNull;
      if (value) {
        profile.distinct = toNumber(row[2] ?? null);
        profile.min = row[3] ?? null;
        profile.max = row[4] ?? null;
      }
      if (attempt === 'number' && nonNull > 0) {
        const mean = toNumber(row[5] ?? null);
        profile.mean = mean;
        if (dialect.stddev) profile.stddev = toNumber(row[6] ?? null);
        else if (spread && mean !== null && nonNull > 1) {
          // SQLite has no STDDEV: a second pass over the same rows, centred on the mean (its two ? come before the source's own).
          const [[square] = []] = await driver.catalog(
            `SELECT AVG((${double} - ?) * (${double} - ?)) FROM ${source.from}`,
            [mean, mean, ...source.params],
            options,
          );
          const meanSquare = toNumber(square ?? null);
          if (meanSquare !== null) profile.stddev = Math.sqrt(meanSquare * (nonNull / (nonNull - 1)));
        }
      }
      if (attempt === 'text') {
        profile.minLength = toNumber(row[5] ?? null);
        profile.maxLength = toNumber(row[6] ?? null);
      }
      if (value && profile.distinct !== null && profile.distinct > 0 && profile.distinct <= LOW_CARDINALITY) {
        try {
          const top = await driver.catalog(
            dialect.limit(
              `SELECT ${value}, COUNT(*) FROM ${source.from} WHERE ${column} IS NOT NULL GROUP BY ${value} ${byCountThenValue(engine, value)}`,
              TOP_VALUES,
            ),
            source.params,
            options,
          );
          profile.top = top.map(([item, count]) => [item ?? null, toNumber(count ?? 0) ?? 0]);
        } catch (error) {
          // The figures above stand; only the top values are missing (a user's cancel is seen by the caller's next statement).
          if (!options.signal.aborted) throw error;
          profile.topMissing = 'the time budget ran out';
        }
      }
      return profile;
    } catch (error) {
      if (options.signal.aborted) throw error;
      lastError = error;
    }
  }
  throw lastError;
}

function figure(value: number | null, digits = 4): string {
  if (value === null) return '';
  // Integers beyond 2^53 are not exact in a double: shown in exponent form, never as 300 digits.
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return value.toLocaleString('en-US');
  if (Math.abs(value) > Number.MAX_SAFE_INTEGER) return value.toExponential(digits + 1).replace(/\.?0+e/, 'e');
  // Every integer digit and two decimals at least (1000000000.5 is not shown as 1000000000), within the 15 digits a double holds.
  const whole = Math.floor(Math.log10(Math.abs(value))) + 1;
  return Number(value.toPrecision(Math.min(15, Math.max(digits + 2, whole + 2)))).toString();
}

function percent(part: number, whole: number): string {
  if (whole === 0) return '';
  const share = (100 * part) / whole;
  return `${share === 0 ? '0' : share < 0.1 ? '<0.1' : share.toFixed(1)}%`;
}

function shown(value: CellValue): string {
  return value === null || value === undefined ? '' : cellText(value);
}

/** Characters of a top value shown in the profile table. */
const TOP_VALUE_CHARS = 40;

/** A top value as the profile lists it: NULL, '' for an empty text, else cut on a character boundary with "…". */
function topValueText(value: CellValue): string {
  const text = valueToText(value);
  if (text === null) return 'NULL';
  if (text === '') return "''";
  return shortened(cellText(value), TOP_VALUE_CHARS);
}

function profileRow(profile: ColumnProfile): CellValue[] {
  const length = profile.minLength === null ? '' : `${profile.minLength}–${profile.maxLength}`;
  const top = profile.topMissing
    ? `(${profile.topMissing})`
    : profile.top.map(([value, count]) => `${topValueText(value)} (${count.toLocaleString('en-US')})`).join(', ');
  return [
    profile.name,
    profile.type,
    profile.note ?? percent(profile.nulls, profile.rows),
    profile.distinct === null ? '' : profile.distinct.toLocaleString('en-US'),
    shown(profile.min),
    shown(profile.max),
    figure(profile.mean),
    figure(profile.stddev),
    length,
    top,
  ];
}

const PROFILE_HEADER = ['column', 'type', 'nulls', 'distinct', 'min', 'max', 'mean', 'stddev', 'length', 'top values'];

function summary(result: ProfileResult): string {
  const rows = result.rowsRead.toLocaleString('en-US');
  const from = result.sampled
    ? `SAMPLED: figures are from ${rows} rows: ${result.sampled}; distinct counts and top values are the sample's`
    : `from all ${rows} rows`;
  const outOfBudget = result.outOfBudget ?? result.notReached.length;
  const names = (list: string[]) => `${list.slice(0, 10).join(', ')}${list.length > 10 ? ', …' : ''}`;
  const columns = (n: number) => `${n.toLocaleString('en-US')} column${n === 1 ? '' : 's'}`;
  const reasons = [
    outOfBudget > 0 && `${columns(outOfBudget)} (${names(result.notReached.slice(0, outOfBudget))}) not reached in the ${result.budgetSeconds} s budget`,
    result.notReached.length > outOfBudget &&
      `${columns(result.notReached.length - outOfBudget)} more beyond the ${PROFILE_DEFAULT_COLUMNS} a call profiles unless "columns" names them`,
  ].filter(Boolean);
  const reached = reasons.length ? `; not profiled: ${reasons.join('; ')}` : '';
  // Nothing finished: no row count to report (a profile of "all 0 rows" would claim an empty table).
  if (result.columns.length === 0) return `Profile of ${result.subject}: 0 of ${result.totalColumns} columns, no rows read${reached}`;
  return `Profile of ${result.subject}: ${result.columns.length} of ${result.totalColumns} columns, ${from}${reached}`;
}

/** What the model sees: the summary, then as many column rows as fit. */
export function formatProfile(result: ProfileResult): string {
  const table = formatTable(PROFILE_HEADER, result.columns.map(profileRow));
  const cut =
    table.rows < table.totalRows || table.columns < table.totalColumns
      ? `\n(showing ${table.rows} of ${result.columns.length} profiled columns and ${table.columns} of ${PROFILE_HEADER.length} figures: the output is ` +
        `limited; pass "columns" or output_path for the whole profile)`
      : '';
  return `${summary(result)}\n${table.text}${cut}`;
}

function markdownCell(value: CellValue): string {
  return shown(value).replace(/\|/g, '\\|');
}

/** The whole profile as Markdown, for output_path. */
export function profileMarkdown(result: ProfileResult): string {
  const lines = [`# ${summary(result)}`, '', `| ${PROFILE_HEADER.join(' | ')} |`, `|${PROFILE_HEADER.map(() => ' --- ').join('|')}|`];
  for (const profile of result.columns) lines.push(`| ${profileRow(profile).map(markdownCell).join(' | ')} |`);
  return `${lines.join('\n')}\n`;
}
