import { ConfigError } from '../errors.js';

/**
 * DuckDB reader options of a `files:` view (docs/guide/duckdb-files.md): YAML
 * `VIEW: {path: FILE_OR_GLOB, options: {...}}`, where the options are DuckDB's own read_csv,
 * read_json and read_parquet named parameters, under DuckDB's names. Only parameters that shape how
 * a file is read are accepted: the ones that make DuckDB write tables of rejected rows
 * (store_rejects, rejects_table, rejects_scan, rejects_limit) or take keys (encryption_config) are not.
 */

/** A value as YAML gives it; rendered as a DuckDB literal by duckdbOptionSql. */
export type FileOptionValue = string | number | boolean | FileOptionValue[] | { [key: string]: FileOptionValue };

const HIVE = ['hive_partitioning', 'hive_types', 'hive_types_autocast', 'union_by_name', 'filename'];

export const DUCKDB_READER_OPTIONS: Readonly<Record<string, readonly string[]>> = {
  read_csv: [
    'all_varchar',
    'allow_quoted_nulls',
    'auto_detect',
    'auto_type_candidates',
    'buffer_size',
    'column_names',
    'column_types',
    'columns',
    'comment',
    'compression',
    'dateformat',
    'decimal_separator',
    'delim',
    'dtypes',
    'encoding',
    'escape',
    'files_to_sniff',
    'force_not_null',
    'header',
    'ignore_errors',
    'max_line_size',
    'maximum_line_size',
    'names',
    'new_line',
    'normalize_names',
    'null_padding',
    'nullstr',
    'parallel',
    'quote',
    'sample_size',
    'sep',
    'skip',
    'strict_mode',
    'thousands',
    'timestampformat',
    'types',
    ...HIVE,
  ].sort(),
  read_json: [
    'auto_detect',
    'columns',
    'compression',
    'convert_strings_to_integers',
    'date_format',
    'dateformat',
    'field_appearance_threshold',
    'format',
    'ignore_errors',
    'map_inference_threshold',
    'maximum_depth',
    'maximum_object_size',
    'maximum_sample_files',
    'records',
    'sample_size',
    'timestamp_format',
    'timestampformat',
    ...HIVE,
  ].sort(),
  read_parquet: ['binary_as_string', 'can_have_nan', 'compression', 'file_row_number', ...HIVE].sort(),
};

/** Checks a view's `options` mapping against its reader's parameters; a one-line ConfigError names what is wrong. */
export function checkFileOptions(raw: unknown, reader: string, where: string): Record<string, FileOptionValue> {
  const allowed = DUCKDB_READER_OPTIONS[reader] ?? [];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new ConfigError(`${where} must be a mapping of ${reader} option to value, e.g. options: {dateformat: '%d/%m/%Y'}`);
  const options: Record<string, FileOptionValue> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const name = key.toLowerCase();
    if (!allowed.includes(name)) throw new ConfigError(`${where}: unknown ${reader} option "${key}"; allowed: ${allowed.join(', ')}`);
    options[name] = checkedValue(value, `${where}.${key}`);
  }
  return options;
}

function checkedValue(value: unknown, where: string): FileOptionValue {
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (Array.isArray(value)) return value.map((item, index) => checkedValue(item, `${where}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, checkedValue(item, `${where}.${key}`)]));
  }
  throw new ConfigError(`${where} must be a string, number, boolean, list or mapping (got ${value === null ? 'null' : typeof value})`);
}

/** The option as DuckDB named-parameter SQL: `name=literal`, mappings as STRUCT literals, lists as LIST literals. */
export function duckdbOptionSql(name: string, value: FileOptionValue): string {
  return `${name}=${literal(value)}`;
}

function literal(value: FileOptionValue): string {
  if (typeof value === 'string') return `'${value.replaceAll("'", "''")}'`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  return `{${Object.entries(value)
    .map(([key, item]) => `'${key.replaceAll("'", "''")}': ${literal(item)}`)
    .join(', ')}}`;
}
