import { ToolError } from '../../core/types.js';
import { formatTable, plural } from '../format.js';
import type { CellValue, DatabaseDriver, Engine, RunOptions } from '../types.js';
import { valueToText } from '../values.js';
import { byCountThenValue, DIALECTS } from './dialects.js';
import { categoryOf } from './profile.js';

/**
 * find_values (docs/guide/databases.md "Knowing the data"): which tables and columns hold a value the question
 * mentions. The candidate columns come from one catalogue statement (base tables only: a view
 * repeats its tables' values; DuckDB's file views excepted); each table is then read by one aggregate statement that counts, per
 * candidate column, the rows equal to the value (exactly and case-insensitively) and, for the
 * partial modes, the rows containing it. The value is always a bound parameter and partial
 * matches use the engine's substring function (no LIKE pattern to escape). A time budget
 * (profile_budget_seconds) bounds the whole call: tables not reached are named, so an empty
 * answer is never a silent "nowhere". Columns the value index covers (values-index/) are
 * answered from it instead of the database.
 */

export const FIND_VALUES_MATCHES = ['exact', 'prefix', 'contains', 'fuzzy'] as const;
export type FindValuesMatch = (typeof FIND_VALUES_MATCHES)[number];
export const FIND_VALUES_DEFAULT_LIMIT = 20;
export const FIND_VALUES_MAX_LIMIT = 100;
/** Matching distinct values shown per column for the partial modes. */
export const SHOWN_VALUES = 5;
/** Distinct values of one column that fuzzy matching compares at most (per column, live scan). */
const FUZZY_CANDIDATES = 20_000;
/** The longest value compared by edit distance (longer ones are matched exactly or not at all). */
const FUZZY_MAX_LENGTH = 200;

/** How a column holds the value: 0 exactly, 1 in another case, 2 partly (prefix, contains, fuzzy). */
export type MatchRank = 0 | 1 | 2;
const RANK_NAMES = ['exact', 'case-insensitive', 'partial'] as const;

export interface CandidateColumn {
  schema: string | null;
  table: string;
  column: string;
  type: string;
  /** How the value is compared: as text, as a number or as a date/time. */
  kind: 'text' | 'number' | 'temporal';
}

export interface ColumnMatch {
  schema: string | null;
  table: string;
  column: string;
  type: string;
  rank: MatchRank;
  /** Rows holding the value (for the partial modes: rows matching it). */
  rows: number;
  /** Rows of the table (or of the index's count), for the share. */
  tableRows: number | null;
  /** Distinct values of the column, where known. */
  distinct: number | null;
  /** Up to SHOWN_VALUES matching distinct values with their counts (partial modes). */
  values: [string, number][];
  /** Where the figure came from: the table itself, or the value index built at a time. */
  source: 'table' | 'index';
}

export interface Coverage {
  tables: number;
  tablesSearched: number;
  columnsSearched: number;
  rowsRead: number;
  /** Tables the budget did not reach, with their candidate columns. */
  notReached: { table: string; columns: number }[];
  /** Tables that could not be read (permissions, engine errors): name and first line of the reason. */
  skipped: { table: string; reason: string }[];
  /** Tables answered from the value index. */
  fromIndex: number;
  /** What the index said about itself (built when, how many columns it left to the live scan). */
  indexNote?: string;
}

export interface FindValuesRequest {
  value: string;
  match: FindValuesMatch;
  tablePattern?: string;
  limit: number;
}

export interface FindValuesInput {
  engine: Engine;
  driver: DatabaseDriver;
  options: RunOptions;
  budgetSeconds: number;
}

const NUMBER_VALUE = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const DATE_VALUE = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?$/;

/** The value as a number parameter, when it reads as one (kept as text where a double would round it). */
export function numberValue(value: string): number | string | null {
  const text = value.trim();
  if (!NUMBER_VALUE.test(text)) return null;
  const number = Number(text);
  if (!Number.isFinite(number)) return null;
  return Number.isSafeInteger(number) || !/^[-+]?\d+$/.test(text) ? number : text;
}

/** The value as a day or an instant: [start, end) in ISO text, when it reads as a date (valid calendar day). */
export function dateRange(value: string): [string, string] | null {
  const found = DATE_VALUE.exec(value.trim());
  if (!found) return null;
  const [, year, month, day, hour, minute, second] = found;
  const start = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour ?? 0), Number(minute ?? 0), Number(second ?? 0)));
  if (start.getUTCMonth() !== Number(month) - 1 || start.getUTCDate() !== Number(day)) return null;
  const end = new Date(start.getTime() + (hour === undefined ? 86_400_000 : second === undefined ? 60_000 : 1000));
  const iso = (date: Date) => date.toISOString().slice(0, 19).replace('T', ' ');
  return [iso(start), iso(end)];
}

/** Which columns a value is compared against: text always, numbers and dates when the value reads as one. */
export function candidateKind(engine: Engine, type: string, value: string, match: FindValuesMatch): CandidateColumn['kind'] | null {
  const category = categoryOf(type);
  // SQLite stores any value in any column: a column without a known type is searched as text.
  if (category === 'text' || (engine === 'sqlite' && category === 'other')) return 'text';
  if (match !== 'exact') return null;
  if (category === 'number' && numberValue(value) !== null) return 'number';
  // A time of day (or a year) cannot be compared with a day's range of timestamps.
  if (category === 'temporal' && dateRange(value) !== null && /date|timestamp/i.test(type)) return 'temporal';
  return null;
}

/** Optimal string alignment distance (edits, adjacent transpositions), stopping once it exceeds `most`. */
export function editDistance(a: string, b: string, most: number): number {
  if (Math.abs(a.length - b.length) > most) return most + 1;
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, previous2[j - 2]! + 1);
      current.push(value);
      if (value < best) best = value;
    }
    if (best > most) return most + 1;
    previous2 = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/** Edits a fuzzy match may differ by: none for short values, one up to 7 characters, then one per 4. */
export function fuzzyAllowance(value: string): number {
  const length = [...value].length;
  return length <= 3 ? 0 : length <= 7 ? 1 : Math.floor(length / 4);
}

/** Whether a stored value matches the wanted one (both in lower case) in a partial mode. */
export function partialMatch(stored: string, wanted: string, match: FindValuesMatch): boolean {
  if (match === 'prefix') return stored.startsWith(wanted);
  if (match === 'contains') return stored.includes(wanted);
  if (match === 'fuzzy') {
    if (stored.length > FUZZY_MAX_LENGTH || wanted.length > FUZZY_MAX_LENGTH) return stored === wanted;
    return editDistance(stored, wanted, fuzzyAllowance(wanted)) <= fuzzyAllowance(wanted);
  }
  return stored === wanted;
}

/** A table name as SQL: schema-qualified and quoted (DuckDB names other attached databases "database.schema"). */
export function qualifiedTable(engine: Engine, schema: string | null, table: string): string {
  const quote = DIALECTS[engine].quote;
  if (schema === null || schema === '') return quote(table);
  if (engine === 'duckdb' && schema.includes('.')) {
    const dot = schema.indexOf('.');
    return `${quote(schema.slice(0, dot))}.${quote(schema.slice(dot + 1))}.${quote(table)}`;
  }
  return `${quote(schema)}.${quote(table)}`;
}

export function shownTable(schema: string | null, table: string): string {
  return schema ? `${schema}.${table}` : table;
}

/** The candidate columns of base tables (one catalogue statement), those whose table matches the pattern (case-insensitive LIKE). */
export async function candidateColumns(input: FindValuesInput, request: FindValuesRequest): Promise<CandidateColumn[]> {
  const { engine, driver, options } = input;
  const dialect = DIALECTS[engine];
  const rows = await driver.catalog(
    `SELECT kind, schema_name, table_name, column_name, data_type FROM (${dialect.objects}) o WHERE LOWER(table_name) LIKE LOWER(?) ` +
      `ORDER BY schema_name, table_name`,
    [request.tablePattern ?? '%'],
    options,
  );
  const tables = new Set<string>();
  // DuckDB's files are views (docs/guide/duckdb-files.md), so there views are searched too.
  for (const [kind, schema, table] of rows)
    if (kind === 'table' || (kind === 'view' && engine === 'duckdb')) tables.add(JSON.stringify([schema ?? null, table]));
  const columns: CandidateColumn[] = [];
  for (const [kind, schema, table, column, type] of rows) {
    if (kind !== 'column' || !tables.has(JSON.stringify([schema ?? null, table]))) continue;
    const columnKind = candidateKind(engine, String(type ?? ''), request.value, request.match);
    if (columnKind)
      columns.push({
        schema: schema === null || schema === undefined ? null : String(schema),
        table: String(table),
        column: String(column),
        type: String(type ?? ''),
        kind: columnKind,
      });
  }
  return columns;
}

/** Candidate columns grouped by table, in catalogue order. */
export function byTable(columns: readonly CandidateColumn[]): CandidateColumn[][] {
  const groups = new Map<string, CandidateColumn[]>();
  for (const column of columns) {
    const key = JSON.stringify([column.schema, column.table]);
    const group = groups.get(key);
    if (group) group.push(column);
    else groups.set(key, [column]);
  }
  return [...groups.values()];
}

function count(value: CellValue | undefined): number {
  if (value === null || value === undefined) return 0;
  const number = Number(value);
  return Number.isFinite(number) ? number : 0;
}

/** The SQL text of a column for comparison: PostgreSQL, DuckDB and ClickHouse have no LOWER for enums, uuids and the like, so those are cast to text. */
function textOf(engine: Engine, column: string): string {
  const quoted = DIALECTS[engine].quote(column);
  return engine === 'postgres' || engine === 'duckdb' || engine === 'clickhouse' ? DIALECTS[engine].asText(quoted) : quoted;
}

/** Exact (case-sensitive) equality: MySQL/MariaDB's usual collations ignore case, so its bytes are compared. */
function sameText(engine: Engine, expression: string): string {
  return engine === 'mysql' ? `BINARY ${expression} = ?` : `${expression} = ?`;
}

function timestampParam(engine: Engine): string {
  switch (engine) {
    case 'sqlite':
      return '?';
    case 'oracle':
      return `TO_TIMESTAMP(?, 'YYYY-MM-DD HH24:MI:SS')`;
    case 'mysql':
      return 'CAST(? AS DATETIME)';
    case 'clickhouse':
      return 'toDateTime(?)';
    default:
      return 'CAST(? AS TIMESTAMP)';
  }
}

/**
 * A number column equal to the value. PostgreSQL, Vertica and DuckDB would type the parameter as the
 * column's own type (12.5 against an integer column is an error there), so both sides are compared
 * as exact decimals (DuckDB: doubles, its decimals being of fixed scale); the others convert.
 */
function numberEquals(engine: Engine, quoted: string, value: string, type: string): [string, unknown[]] {
  const text = value.trim();
  if (engine === 'postgres' || engine === 'vertica') return [`(${quoted})::numeric = (?)::numeric`, [text]];
  if (engine === 'duckdb') return [`CAST(${quoted} AS DOUBLE) = CAST(? AS DOUBLE)`, [text]];
  // ClickHouse has no equality of a Decimal and a Float64 (and a Decimal parameter would need the column's scale):
  // integer columns against an integer compare exactly, anything else as doubles, as DuckDB does.
  if (engine === 'clickhouse' && !(/^(Nullable\()?(LowCardinality\()?U?Int\d/.test(type) && /^[-+]?\d+$/.test(text)))
    return [`toFloat64(${quoted}) = toFloat64(?)`, [text]];
  return [`${quoted} = ?`, [numberValue(value)]];
}

interface ColumnCondition {
  /** SQL true when the row holds the value exactly, and its parameters. */
  exact: [string, unknown[]];
  /** Case-insensitive equality (text only). */
  folded: [string, unknown[]] | null;
  /** The partial mode's condition (text only; prefix and contains). */
  partial: [string, unknown[]] | null;
}

function conditionFor(engine: Engine, column: CandidateColumn, request: FindValuesRequest): ColumnCondition {
  const dialect = DIALECTS[engine];
  if (column.kind === 'number') return { exact: numberEquals(engine, dialect.quote(column.column), request.value, column.type), folded: null, partial: null };
  if (column.kind === 'temporal') {
    const [start, end] = dateRange(request.value)!;
    // ClickHouse compares a Date with a DateTime wrongly (18.16: a day is never >= its own midnight): both as DateTime.
    const quoted = engine === 'clickhouse' ? `toDateTime(${dialect.quote(column.column)})` : dialect.quote(column.column);
    return { exact: [`${quoted} >= ${timestampParam(engine)} AND ${quoted} < ${timestampParam(engine)}`, [start, end]], folded: null, partial: null };
  }
  const text = textOf(engine, column.column);
  const lower = request.value.toLowerCase();
  // Both sides folded by the engine's own LOWER (SQLite's folds ASCII only), the parameter typed as text for PostgreSQL and DuckDB.
  // ClickHouse's LOWER folds ASCII letters only; lowerUTF8 folds the others too (É to é).
  const lowerOf = engine === 'clickhouse' ? 'lowerUTF8' : 'LOWER';
  const param = engine === 'postgres' || engine === 'duckdb' ? `LOWER(${dialect.asText('?')})` : `${lowerOf}(?)`;
  const partial: [string, unknown[]] | null =
    request.match === 'prefix' ? [dialect.startsWith(text, param), [lower]] : request.match === 'contains' ? [dialect.contains(text, param), [lower]] : null;
  return { exact: [sameText(engine, text), [request.value]], folded: [`${lowerOf}(${text}) = ${param}`, [lower]], partial };
}

/** One table's counts per column: COUNT(*), then per column exact, case-insensitive and partial matches. */
async function scanTable(
  input: FindValuesInput,
  columns: readonly CandidateColumn[],
  request: FindValuesRequest,
  options: RunOptions,
): Promise<{ rows: number; matches: ColumnMatch[] }> {
  const { engine, driver } = input;
  const parts = ['COUNT(*)'];
  const params: unknown[] = [];
  const conditions = columns.map((column) => conditionFor(engine, column, request));
  for (const condition of conditions) {
    for (const part of [condition.exact, condition.folded, condition.partial]) {
      if (!part) continue;
      parts.push(`SUM(CASE WHEN ${part[0]} THEN 1 ELSE 0 END)`);
      params.push(...part[1]);
    }
  }
  const first = columns[0]!;
  const [row = []] = await driver.catalog(`SELECT ${parts.join(', ')} FROM ${qualifiedTable(engine, first.schema, first.table)}`, params, options);
  const rows = count(row[0]);
  const matches: ColumnMatch[] = [];
  let index = 1;
  for (const [i, column] of columns.entries()) {
    const condition = conditions[i]!;
    const exact = count(row[index++]);
    const folded = condition.folded ? count(row[index++]) : 0;
    const partial = condition.partial ? count(row[index++]) : 0;
    const found = request.match === 'exact' || !condition.partial ? Math.max(exact, folded) : partial;
    if (found === 0) continue;
    matches.push({
      schema: column.schema,
      table: column.table,
      column: column.column,
      type: column.type,
      rank: exact > 0 ? 0 : folded > 0 ? 1 : 2,
      rows: found,
      tableRows: rows,
      distinct: null,
      values: [],
      source: 'table',
    });
  }
  return { rows, matches };
}

/** Fuzzy matching reads each text column's distinct values of about the right length and compares them here. */
async function fuzzyScanTable(
  input: FindValuesInput,
  columns: readonly CandidateColumn[],
  request: FindValuesRequest,
  options: RunOptions,
): Promise<{ rows: number; matches: ColumnMatch[]; cut: string[] }> {
  const { engine, driver } = input;
  const dialect = DIALECTS[engine];
  const wanted = request.value.toLowerCase();
  const allowance = fuzzyAllowance(wanted);
  const length = [...wanted].length;
  const first = columns[0]!;
  const from = qualifiedTable(engine, first.schema, first.table);
  const [[total] = []] = await driver.catalog(`SELECT COUNT(*) FROM ${from}`, [], options);
  const matches: ColumnMatch[] = [];
  const cut: string[] = [];
  for (const column of columns.filter((candidate) => candidate.kind === 'text')) {
    const text = textOf(engine, column.column);
    const found = await driver.catalog(
      dialect.limit(
        `SELECT ${text}, COUNT(*) FROM ${from} WHERE ${dialect.length(text)} BETWEEN ? AND ? GROUP BY ${text} ${byCountThenValue(engine, text)}`,
        FUZZY_CANDIDATES + 1,
      ),
      [Math.max(1, length - allowance), length + allowance],
      options,
    );
    if (found.length > FUZZY_CANDIDATES) cut.push(`${shownTable(column.schema, column.table)}.${column.column}`);
    const match = matchValues(
      found.slice(0, FUZZY_CANDIDATES).map(([value, rows]) => [valueToText(value ?? null) ?? '', count(rows)]),
      request,
    );
    // The candidates are only the values of about the right length: their number is not the column's distinct count.
    if (match)
      matches.push({
        ...match,
        distinct: null,
        schema: column.schema,
        table: column.table,
        column: column.column,
        type: column.type,
        tableRows: count(total),
        source: 'table',
      });
  }
  return { rows: count(total), matches, cut };
}

/**
 * The match of one column from its distinct values with counts (the index's, or fuzzy's candidates):
 * its rank, matching rows and the most frequent matching values; null when none matches.
 */
export function matchValues(
  values: readonly [string, number][],
  request: FindValuesRequest,
): Pick<ColumnMatch, 'rank' | 'rows' | 'values' | 'distinct'> | null {
  const wanted = request.value.toLowerCase();
  let exact = 0;
  let folded = 0;
  let partial = 0;
  const shown: [string, number][] = [];
  for (const [value, rows] of values) {
    const lower = value.toLowerCase();
    if (value === request.value) exact += rows;
    if (lower === wanted) folded += rows;
    else if (request.match === 'exact' || !partialMatch(lower, wanted, request.match)) continue;
    partial += rows;
    shown.push([value, rows]);
  }
  const rows = request.match === 'exact' ? folded : partial;
  if (rows === 0) return null;
  shown.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return { rank: exact > 0 ? 0 : folded > 0 ? 1 : 2, rows, values: request.match === 'exact' ? [] : shown.slice(0, SHOWN_VALUES), distinct: values.length };
}

/** Up to SHOWN_VALUES matching values of one column, most frequent first (prefix and contains). */
async function matchingValues(input: FindValuesInput, match: ColumnMatch, request: FindValuesRequest, options: RunOptions): Promise<[string, number][]> {
  const { engine, driver } = input;
  const dialect = DIALECTS[engine];
  const text = textOf(engine, match.column);
  const condition = conditionFor(engine, { ...match, kind: 'text' }, request).partial!;
  const rows = await driver.catalog(
    dialect.limit(
      `SELECT ${text}, COUNT(*) FROM ${qualifiedTable(engine, match.schema, match.table)} WHERE ${condition[0]} GROUP BY ${text} ${byCountThenValue(engine, text)}`,
      SHOWN_VALUES,
    ),
    condition[1],
    options,
  );
  return rows.map(([value, rows]) => [valueToText(value ?? null) ?? '', count(rows)]);
}

/** Distinct values of the matching columns of one table, for the ranking (one statement). */
async function distinctCounts(input: FindValuesInput, matches: ColumnMatch[], options: RunOptions): Promise<void> {
  const { engine, driver } = input;
  const first = matches[0]!;
  const [row = []] = await driver.catalog(
    `SELECT ${matches.map((match) => `COUNT(DISTINCT ${DIALECTS[engine].quote(match.column)})`).join(', ')} FROM ${qualifiedTable(engine, first.schema, first.table)}`,
    [],
    options,
  );
  matches.forEach((match, index) => {
    match.distinct = row[index] === null || row[index] === undefined ? null : count(row[index]);
  });
}

/** Best first: exact before case-insensitive before partial; then where the value is frequent; then columns with few distinct values. */
export function rankMatches(matches: ColumnMatch[]): ColumnMatch[] {
  const share = (match: ColumnMatch) => (match.tableRows ? match.rows / match.tableRows : 0);
  return [...matches].sort(
    (a, b) =>
      a.rank - b.rank ||
      share(b) - share(a) ||
      (a.distinct ?? Number.MAX_SAFE_INTEGER) - (b.distinct ?? Number.MAX_SAFE_INTEGER) ||
      shownTable(a.schema, a.table).localeCompare(shownTable(b.schema, b.table)) ||
      a.column.localeCompare(b.column),
  );
}

export interface FindValuesResult {
  matches: ColumnMatch[];
  coverage: Coverage;
  /** Columns whose fuzzy candidates were cut at FUZZY_CANDIDATES distinct values. */
  cut: string[];
  seconds: number;
}

/** What answers some tables before the live scan (the value index): their matches, and the tables it leaves to the scan. */
export interface IndexAnswer {
  matches: ColumnMatch[];
  /** Candidate columns the index does not hold (too many distinct values, or not indexed). */
  remaining: CandidateColumn[];
  tables: number;
  note: string;
}

export function checkValue(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new ToolError('operation find_values needs "value" (the text, number or date to look for)', 'bad_value');
  return value;
}

/** find_values over the database (and the index where one answers), within the time budget. */
export async function findValues(
  input: FindValuesInput,
  request: FindValuesRequest,
  fromIndex?: (columns: CandidateColumn[]) => Promise<IndexAnswer | null>,
): Promise<FindValuesResult> {
  const started = Date.now();
  const deadline = started + input.budgetSeconds * 1000;
  const candidates = await candidateColumns(input, request);
  const tables = byTable(candidates);
  const coverage: Coverage = { tables: tables.length, tablesSearched: 0, columnsSearched: 0, rowsRead: 0, notReached: [], skipped: [], fromIndex: 0 };
  const matches: ColumnMatch[] = [];
  const cut: string[] = [];
  let remaining = candidates;
  // PostgreSQL text holds no NUL byte, so no text column can hold such a value (the engine would refuse the parameter).
  if (input.engine === 'postgres' && request.value.includes('\0')) remaining = remaining.filter((column) => column.kind !== 'text');
  const indexed = fromIndex ? await fromIndex(remaining) : null;
  if (indexed) {
    matches.push(...indexed.matches);
    remaining = indexed.remaining;
    coverage.fromIndex = indexed.tables;
    coverage.indexNote = indexed.note;
    coverage.columnsSearched += candidates.length - indexed.remaining.length;
  }
  for (const group of byTable(remaining)) {
    const first = group[0]!;
    const name = shownTable(first.schema, first.table);
    const left = deadline - Date.now();
    if (left <= 0) {
      coverage.notReached.push({ table: name, columns: group.length });
      continue;
    }
    const budget = AbortSignal.timeout(left);
    const options: RunOptions = { ...input.options, signal: AbortSignal.any([input.options.signal, budget]) };
    try {
      const scanned =
        request.match === 'fuzzy' ? await fuzzyScanTable(input, group, request, options) : { ...(await scanTable(input, group, request, options)), cut: [] };
      coverage.tablesSearched++;
      coverage.columnsSearched += group.length;
      coverage.rowsRead += scanned.rows;
      cut.push(...scanned.cut);
      // Figures for the ranking and the values shown: best effort within the budget, the counts above stand.
      try {
        if (request.match !== 'fuzzy' && scanned.matches.length) await distinctCounts(input, scanned.matches, options);
        if (request.match === 'prefix' || request.match === 'contains')
          for (const match of scanned.matches) match.values = await matchingValues(input, match, request, options);
      } catch (error) {
        if (input.options.signal.aborted) throw error;
      }
      matches.push(...scanned.matches);
    } catch (error) {
      if (input.options.signal.aborted) throw error;
      if (budget.aborted) coverage.notReached.push({ table: name, columns: group.length });
      else {
        // A lost connection fails the call rather than reading as "not here".
        await new Promise((resolve) => setImmediate(resolve));
        if (input.driver.connectionLost?.()) throw error;
        coverage.skipped.push({ table: name, reason: (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200) });
      }
    }
  }
  return { matches: rankMatches(matches), coverage, cut, seconds: (Date.now() - started) / 1000 };
}

function figure(value: number): string {
  return value.toLocaleString('en-US');
}

function listNames(names: readonly string[], most = 10): string {
  return `${names.slice(0, most).join(', ')}${names.length > most ? `, … (${figure(names.length - most)} more)` : ''}`;
}

/** What the model sees: one row per (table, column), best first, then what was searched and what was not. */
export function formatFindValues(result: FindValuesResult, request: FindValuesRequest, budgetSeconds: number): string {
  const { matches, coverage } = result;
  const shown = matches.slice(0, request.limit);
  const partial = request.match !== 'exact';
  const header = ['table', 'column', 'type', 'match', 'rows', 'distinct', ...(partial ? ['values'] : [])];
  const rows = shown.map((match) => [
    shownTable(match.schema, match.table),
    match.column,
    match.type,
    match.rank === 2 ? request.match : RANK_NAMES[match.rank],
    `${figure(match.rows)}${match.tableRows ? ` of ${figure(match.tableRows)}` : ''}`,
    match.distinct === null ? '' : figure(match.distinct),
    ...(partial
      ? [match.values.map(([value, rows]) => `${JSON.stringify(value.length > 60 ? `${value.slice(0, 59)}…` : value)} (${figure(rows)})`).join(', ')]
      : []),
  ]);
  const lines: string[] = [];
  const what = `${JSON.stringify(request.value.length > 80 ? `${request.value.slice(0, 79)}…` : request.value)} (${request.match}${request.match === 'exact' ? ', any case' : ''})`;
  if (coverage.tables === 0)
    lines.push(
      request.tablePattern
        ? `No table matches ${JSON.stringify(request.tablePattern)} with a column that could hold ${what}.`
        : `No table has a column that could hold ${what}.`,
    );
  else if (matches.length === 0) lines.push(`No column holds ${what}.`);
  else {
    const table = formatTable(header, rows);
    const more = matches.length > table.rows ? `; showing ${table.rows}: pass limit (at most ${FIND_VALUES_MAX_LIMIT}) or table_pattern for the rest` : '';
    lines.push(`${plural(matches.length, 'column')} hold${matches.length === 1 ? 's' : ''} ${what}, best first${more}:`, table.text);
  }
  if (coverage.tables > 0)
    lines.push(
      `Searched ${figure(coverage.tablesSearched + coverage.fromIndex)} of the ${plural(coverage.tables, 'table')} with a column that could hold it ` +
        `(${plural(coverage.columnsSearched, 'column')}${coverage.rowsRead ? `, ${plural(coverage.rowsRead, 'row')} read` : ''}) in ` +
        `${result.seconds.toFixed(1)} s${coverage.indexNote ? `; ${coverage.indexNote}` : ''}.`,
    );
  if (coverage.notReached.length)
    lines.push(
      `NOT searched: ${plural(coverage.notReached.length, 'table')} (${listNames(coverage.notReached.map((table) => table.table))}): the ${budgetSeconds} s budget ` +
        `ran out; narrow with table_pattern, or build the value index (quarry db index).`,
    );
  if (coverage.skipped.length)
    lines.push(
      `Skipped ${plural(coverage.skipped.length, 'table')} that could not be read: ${listNames(
        coverage.skipped.map((table) => `${table.table} (${table.reason})`),
        5,
      )}.`,
    );
  if (result.cut.length) lines.push(`Fuzzy compared only the ${figure(FUZZY_CANDIDATES)} most frequent values of ${listNames(result.cut)}.`);
  return lines.join('\n');
}
