import type { DuckDBConnection } from '@duckdb/node-api';
import { statSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { duckdbOptionSql, type FileOptionValue } from '../../../config/duckdb-options.js';
import { sqlIdentifier, sqlString } from './duckdb-files.js';

/**
 * CSV views read the way DuckDB detected them, detected once (docs/guide/duckdb-files.md).
 *
 * read_csv with auto-detection sniffs the file again in every statement that reads the view; on a
 * 3,000-column file that was about half a minute a statement. The driver runs DuckDB's own sniffer
 * (sniff_csv) once per view when the database is opened and defines the view with what it found
 * (dialect, header, column names and types, date formats) and auto_detect=false, so later
 * statements read the file without sniffing and see exactly what auto-detection would have given.
 * What was detected is kept for `describe`, which shows it and warns where the guess is doubtful.
 */

/** What sniff_csv reported for a file. */
export interface SniffedCsv {
  delimiter: string;
  quote: string;
  escape: string;
  newLine: string;
  comment: string;
  skipRows: number;
  header: boolean;
  columns: { name: string; type: string }[];
  dateFormat: string | null;
  timestampFormat: string | null;
}

/** A file view as the driver set it up: its files, reader, the user's options and, for CSV, what was detected. */
export interface FileView {
  view: string;
  file: string;
  paths: string[];
  reader: string;
  options: Record<string, FileOptionValue>;
  sniffed: SniffedCsv | null;
}

/** Options that decide what the sniffer decides: given by the user they go to the sniffer, not again to read_csv. */
const SNIFFED_OPTIONS = new Set([
  'delim',
  'sep',
  'quote',
  'escape',
  'new_line',
  'comment',
  'skip',
  'header',
  'dateformat',
  'timestampformat',
  'columns',
  'types',
  'dtypes',
  'column_types',
  'names',
  'column_names',
  'all_varchar',
  'auto_type_candidates',
  'sample_size',
  'files_to_sniff',
  'normalize_names',
]);

/** "(empty)" is how sniff_csv writes an absent quote, escape or comment character. */
const absent = (value: unknown) => (value === null || value === '(empty)' ? '' : String(value));

/** Runs sniff_csv on the view's first file with the user's options; null when the view is not one it can define explicitly. */
export async function sniffCsv(connection: DuckDBConnection, file: FileView): Promise<SniffedCsv | null> {
  // With auto_detect off the user defines everything; with union_by_name each file has its own columns.
  if (file.options.auto_detect === false || file.options.union_by_name === true) return null;
  const options = Object.entries(file.options).map(([name, value]) => duckdbOptionSql(name, value));
  const dialect = await headDialect(connection, file, options);
  const reader = await connection.runAndReadAll(`SELECT * FROM sniff_csv(${[sqlString(file.paths[0]!), ...options, ...dialect].join(', ')})`);
  const row = reader.getRowObjectsJS()[0];
  if (!row) return null;
  return {
    delimiter: String(row.Delimiter),
    quote: absent(row.Quote),
    escape: absent(row.Escape),
    newLine: String(row.NewLineDelimiter),
    comment: absent(row.Comment),
    skipRows: Number(row.SkipRows),
    header: row.HasHeader === true,
    columns: (row.Columns as { name: string; type: string }[]).map((column) => ({ name: String(column.name), type: String(column.type) })),
    dateFormat: row.DateFormat === null ? null : String(row.DateFormat),
    timestampFormat: row.TimestampFormat === null ? null : String(row.TimestampFormat),
  };
}

/** Files larger than this have their dialect found in their head (headDialect). */
const HEAD_BYTES = 1024 * 1024;
const DIALECT_OPTIONS = ['delim', 'quote', 'escape', 'new_line', 'comment', 'skip', 'header'] as const;

/**
 * The dialect (delimiter, quote, escape, line ending, comment, skipped lines, header) of a large
 * file, found by sniff_csv in a copy of its first whole lines (at most 1 MiB, in a temporary
 * folder removed at once), as options for the sniff of the whole file. DuckDB's search for the
 * quote and escape costs in proportion to the columns times the bytes it samples: 7 s of CPU on
 * a 3,000-column file, 1 s once they are given. Compressed files, a given encoding and files of
 * at most 2 MiB are sniffed whole (an empty list).
 */
async function headDialect(connection: DuckDBConnection, file: FileView, options: string[]): Promise<string[]> {
  const path = file.paths[0]!;
  const given = Object.keys(file.options);
  if (/\.(gz|zst)$/i.test(path) || given.includes('encoding') || (statSync(path, { throwIfNoEntry: false })?.size ?? 0) <= 2 * HEAD_BYTES) return [];
  const handle = await open(path, 'r');
  let head: Buffer;
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    head = buffer.subarray(0, buffer.subarray(0, bytesRead).lastIndexOf(0x0a) + 1);
  } finally {
    await handle.close();
  }
  if (head.length === 0) return [];
  const dir = await mkdtemp(join(tmpdir(), 'quarry-sniff-'));
  try {
    const copy = join(dir, 'head.csv');
    await writeFile(copy, head);
    const row = (await connection.runAndReadAll(`SELECT * FROM sniff_csv(${[sqlString(copy), ...options].join(', ')})`)).getRowObjectsJS()[0];
    if (!row) return [];
    const found: Record<(typeof DIALECT_OPTIONS)[number], string> = {
      delim: sqlString(String(row.Delimiter)),
      quote: sqlString(absent(row.Quote)),
      escape: sqlString(absent(row.Escape)),
      new_line: sqlString(String(row.NewLineDelimiter)),
      comment: sqlString(absent(row.Comment)),
      skip: String(Number(row.SkipRows)),
      header: String(row.HasHeader === true),
    };
    return DIALECT_OPTIONS.filter((name) => !given.includes(name) && !(name === 'delim' && given.includes('sep'))).map((name) => `${name}=${found[name]}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The read_csv call that reads the files as detected, without sniffing; `allVarchar` reads every column as text. */
export function explicitReadCsv(source: string, file: FileView, sniffed: SniffedCsv, allVarchar = false): string {
  const struct = `{${sniffed.columns.map((column) => `${sqlString(column.name)}: ${sqlString(allVarchar ? 'VARCHAR' : column.type)}`).join(', ')}}`;
  const parts = [
    source,
    'auto_detect=false',
    `delim=${sqlString(sniffed.delimiter)}`,
    `quote=${sqlString(sniffed.quote)}`,
    `escape=${sqlString(sniffed.escape)}`,
    `new_line=${sqlString(sniffed.newLine)}`,
    `skip=${sniffed.skipRows}`,
    `comment=${sqlString(sniffed.comment)}`,
    `header=${sniffed.header}`,
    `columns=${struct}`,
    ...(sniffed.dateFormat !== null && !allVarchar ? [`dateformat=${sqlString(sniffed.dateFormat)}`] : []),
    ...(sniffed.timestampFormat !== null && !allVarchar ? [`timestampformat=${sqlString(sniffed.timestampFormat)}`] : []),
    ...Object.entries(file.options)
      .filter(([name]) => !SNIFFED_OPTIONS.has(name))
      .map(([name, value]) => duckdbOptionSql(name, value)),
  ];
  return `read_csv(${parts.join(', ')})`;
}

/** Rows the date check reads at most. */
const DATE_CHECK_ROWS = 100_000;

/** What `describe` says about a file view: what was detected, and warnings where the guess is doubtful. */
export async function describeFileView(connection: DuckDBConnection, file: FileView, source: string): Promise<string[]> {
  const given = Object.keys(file.options);
  const lines = [`file: ${file.file}${file.paths.length > 1 ? ` (${file.paths.length} files)` : ''}, read by ${file.reader}`];
  if (given.length)
    lines.push(
      `options given: ${Object.entries(file.options)
        .map(([name, value]) => duckdbOptionSql(name, value))
        .join(', ')}`,
    );
  const empty = file.paths.filter((path) => statSync(path, { throwIfNoEntry: false })?.size === 0);
  const sniffed = file.sniffed;
  const show = (text: string) => (text === '' ? 'none' : JSON.stringify(text));
  if (sniffed)
    lines.push(
      `detected by DuckDB: delimiter ${show(sniffed.delimiter)}, quote ${show(sniffed.quote)}, escape ${show(sniffed.escape)}, ` +
        `header ${sniffed.header ? 'yes' : 'no'}${sniffed.skipRows ? `, ${sniffed.skipRows} leading lines skipped` : ''}, ` +
        `date format ${sniffed.dateFormat ?? 'none'}, timestamp format ${sniffed.timestampFormat ?? 'none'}`,
    );
  if (empty.length)
    lines.push(
      `warning: ${empty.length === file.paths.length ? 'the file is' : `${empty.length} of the files are`} empty (0 bytes)` +
        `${empty.length === file.paths.length ? ': the view has no rows, and its column is a placeholder DuckDB made up' : ''}`,
    );
  if (!sniffed) return lines;
  if (sniffed.skipRows > 0 && !given.includes('skip'))
    lines.push(`warning: DuckDB skipped the first ${sniffed.skipRows} lines of the file as not part of the table; set options: {skip: 0} to read them`);
  if (file.options.ignore_errors === true) lines.push('warning: ignore_errors is set: rows that do not fit the columns are left out without a word');
  if (sniffed.columns.length === 1 && !empty.length) {
    const head = await firstLine(connection, source);
    const delimiter = [',', ';', '\t', '|'].find((candidate) => head.includes(candidate));
    if (delimiter !== undefined && delimiter !== sniffed.delimiter)
      lines.push(
        `warning: the file became one column, though its first line holds ${JSON.stringify(delimiter)}: a quote that never closes (or a stray one) ` +
          `can make DuckDB read it so; set options: {delim: ${JSON.stringify(delimiter)}, quote: '"'} to see where it fails, or fix the file`,
      );
  }
  if (!given.some((name) => ['dateformat', 'timestampformat', 'types', 'dtypes', 'column_types', 'columns', 'all_varchar'].includes(name)))
    lines.push(...(await ambiguousDates(connection, file, sniffed, source)));
  return lines;
}

async function firstLine(connection: DuckDBConnection, source: string): Promise<string> {
  const reader = await connection.runAndReadAll(
    `SELECT * FROM read_csv(${source}, auto_detect=false, delim=${sqlString('\u0001')}, quote='', escape='', header=false, columns={'line': 'VARCHAR'}) LIMIT 1`,
  );
  return String(reader.getRowsJS()[0]?.[0] ?? '');
}

/**
 * Date and timestamp columns whose every value also reads with the day, month and year in another
 * order (01/12/20 is 2001-12-20 as %y/%m/%d, 2020-12-01 as %d/%m/%y): DuckDB picked one format,
 * and nothing in the values says it was the right one.
 */
async function ambiguousDates(connection: DuckDBConnection, file: FileView, sniffed: SniffedCsv, source: string): Promise<string[]> {
  const checks: { column: string; format: string; alternatives: string[]; option: string }[] = [];
  for (const column of sniffed.columns) {
    const timestamp = /^TIMESTAMP/.test(column.type);
    const format = column.type === 'DATE' ? sniffed.dateFormat : timestamp ? sniffed.timestampFormat : null;
    if (format === null) continue;
    const alternatives = reorderedDates(format);
    if (alternatives.length) checks.push({ column: column.name, format, alternatives, option: timestamp ? 'timestampformat' : 'dateformat' });
  }
  if (!checks.length) return [];
  const selects = checks.flatMap((check, index) =>
    [check.format, ...check.alternatives].flatMap((format, f) => {
      const parsed = `try_strptime(${sqlIdentifier(check.column)}, ${sqlString(format)})`;
      return [
        `count(*) FILTER (WHERE ${sqlIdentifier(check.column)} IS NOT NULL AND ${parsed} IS NULL) AS "bad_${index}_${f}"`,
        `min(${parsed})::VARCHAR AS "min_${index}_${f}"`,
        `max(${parsed})::VARCHAR AS "max_${index}_${f}"`,
      ];
    }),
  );
  const text = explicitReadCsv(source, file, sniffed, true);
  const reader = await connection.runAndReadAll(
    `SELECT count(*) AS "rows", ${selects.join(', ')} FROM (SELECT * FROM ${text} LIMIT ${DATE_CHECK_ROWS}) AS quarry_dates`,
  );
  const row = reader.getRowObjectsJS()[0]!;
  const rows = Number(row.rows);
  const warnings: string[] = [];
  checks.forEach((check, index) => {
    const range = (f: number) => `${String(row[`min_${index}_${f}`]).slice(0, 10)} … ${String(row[`max_${index}_${f}`]).slice(0, 10)}`;
    const fitting = check.alternatives.map((format, i) => ({ format, f: i + 1 })).filter(({ f }) => Number(row[`bad_${index}_${f}`]) === 0);
    if (!fitting.length || row[`min_${index}_0`] === null) return;
    warnings.push(
      `warning: ${JSON.stringify(check.column)}: every value${rows === DATE_CHECK_ROWS ? ` of the first ${rows} rows` : ''} also reads as ` +
        `${fitting.map(({ format, f }) => `${format} (${range(f)})`).join(' or ')}; DuckDB chose ${check.format} (${range(0)}). ` +
        `If that is wrong, set options: {${check.option}: '${fitting[0]!.format}'} on this view`,
    );
  });
  return warnings;
}

/** The orders in which the world writes day, month and year. */
const DATE_ORDERS = [
  ['y', 'm', 'd'],
  ['d', 'm', 'y'],
  ['m', 'd', 'y'],
];

/** The format with its day, month and year in the other orders the world uses (only for a format with all three). */
export function reorderedDates(format: string): string[] {
  const fields: string[] = format.match(/%[dmyY]/g) ?? [];
  const year = fields.find((field) => field.toLowerCase() === '%y');
  if (fields.length !== 3 || !fields.includes('%d') || !fields.includes('%m') || !year) return [];
  const results = new Set<string>();
  for (const order of DATE_ORDERS) {
    let i = 0;
    const candidate = format.replace(/%[dmyY]/g, () => (order[i++] === 'y' ? year : `%${order[i - 1]}`));
    if (candidate !== format) results.add(candidate);
  }
  return [...results];
}
