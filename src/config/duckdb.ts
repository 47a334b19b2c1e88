import { existsSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import type { Draft } from './databases.js';
import { checkFileOptions } from './duckdb-options.js';
import { interpolateEnv, isMapping } from './yaml.js';

/**
 * How a duckdb database is configured (docs/guide/duckdb-files.md):
 * `--db data.duckdb`, `--db sales.csv` / `events.parquet` / `logs.jsonl` (a view named after the
 * file), `--db 'duckdb:exports/*.csv'` (a glob as one view), and YAML `type: duckdb` with `path`
 * and/or `files: {view: path_or_glob}`. Also which DuckDB reader each file type takes and the
 * view name a file or glob gets, shared with the driver; loads no native code.
 */

const READERS: readonly (readonly [RegExp, string])[] = [
  [/\.(csv|tsv)(\.gz|\.zst)?$/i, 'read_csv'],
  [/\.(parquet|pq)$/i, 'read_parquet'],
  [/\.(json|jsonl|ndjson)(\.gz|\.zst)?$/i, 'read_json'],
];

/** File extensions that make a `--db` path a DuckDB database file. */
export const DUCKDB_DATABASE_EXTENSION = /\.(duckdb|ddb)$/i;

/** The DuckDB table function that reads this file or glob, or null when its type is not known. */
export function duckdbReaderFor(path: string): string | null {
  return READERS.find(([pattern]) => pattern.test(path))?.[1] ?? null;
}

export function isDuckdbDataFile(path: string): boolean {
  return duckdbReaderFor(path) !== null;
}

export function isGlob(path: string): boolean {
  return /[*?[{]/.test(path);
}

/** A valid SQL identifier from a file name: `sales-2024.csv` -> `sales_2024`; a glob is named after its folder. */
export function defaultViewName(path: string): string {
  let raw: string;
  if (isGlob(path)) {
    const parts = path.split('/');
    const firstWild = parts.findIndex((part) => isGlob(part));
    raw = parts[firstWild - 1] || 'files';
  } else {
    raw = basename(path).replace(/(\.[A-Za-z0-9]+)+$/, '');
  }
  const cleaned = raw.replace(/[^A-Za-z0-9_]/g, '_');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `t_${cleaned}`;
}

/** The absolute form of a configured path or glob (globs keep their wildcards). */
export function absoluteDataPath(path: string, cwd: string): string {
  return resolve(cwd, path);
}

/** The folder a glob lists (the part before the first wildcard). */
export function globRoot(pattern: string): string {
  const parts = pattern.split('/');
  const firstWild = parts.findIndex((part) => isGlob(part));
  return firstWild < 0 ? dirname(pattern) : parts.slice(0, firstWild).join('/') || '/';
}

const VIEW_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** True for `duckdb:...` and for paths whose extension is a DuckDB database or a CSV, Parquet or JSON file. */
export function isDuckdbTarget(target: string): boolean {
  if (target.toLowerCase().startsWith('duckdb:')) return true;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(target)) return false;
  return DUCKDB_DATABASE_EXTENSION.test(target) || isDuckdbDataFile(target);
}

export function duckdbDraft(target: string, cwd: string, source: string): Draft {
  const prefixed = target.toLowerCase().startsWith('duckdb:');
  let rest = prefixed ? target.slice('duckdb:'.length) : target;
  if (rest.startsWith('//')) rest = rest.slice(2);
  if (!rest)
    throw new ConfigError(`${source}: missing path after "duckdb:"; expected a .duckdb file, a CSV, Parquet or JSON file, or a glob such as 'exports/*.csv'`);
  if (isGlob(rest) || isDuckdbDataFile(rest)) {
    const path = dataPath(rest, cwd, source);
    return { engine: 'duckdb', files: { [defaultViewName(path)]: path }, source };
  }
  return { engine: 'duckdb', path: databasePath(rest, cwd, source), source };
}

export function duckdbYamlDraft(path: string | undefined, files: unknown, dir: string, where: string, source: string, env: NodeJS.ProcessEnv): Draft {
  const draft: Draft = { engine: 'duckdb', source };
  if (path !== undefined) draft.path = databasePath(path, dir, where);
  if (files !== undefined && files !== null) {
    if (typeof files !== 'object' || Array.isArray(files))
      throw new ConfigError(`${where}.files must be a mapping of view name to file path or glob, e.g. files: {sales: data/sales.csv}, or to {path, options}`);
    draft.files = {};
    for (const [view, value] of Object.entries(files as Record<string, unknown>)) {
      if (!VIEW_NAME.test(view))
        throw new ConfigError(`${where}.files: invalid view name "${view}"; use letters, digits and "_", starting with a letter or "_"`);
      const entry = `${where}.files.${view}`;
      // VIEW: FILE_OR_GLOB, or VIEW: {path: FILE_OR_GLOB, options: {DuckDB reader options}}.
      const spec = isMapping(value) ? value : { path: value };
      const unknown = Object.keys(spec).find((key) => key !== 'path' && key !== 'options');
      if (unknown !== undefined) throw new ConfigError(`${entry}: unknown key "${unknown}"; allowed keys: path, options`);
      if (typeof spec.path !== 'string' || spec.path.trim() === '')
        throw new ConfigError(`${entry} must be a file path or glob, or {path: FILE_OR_GLOB, options: {...}}`);
      draft.files[view] = dataPath(interpolateEnv(spec.path, env, entry), dir, entry);
      if (spec.options !== undefined) {
        draft.fileOptions ??= {};
        draft.fileOptions[view] = checkFileOptions(spec.options, duckdbReaderFor(draft.files[view])!, `${entry}.options`);
      }
    }
  }
  if (draft.path === undefined && !Object.keys(draft.files ?? {}).length) {
    throw new ConfigError(`${where}: a duckdb database needs "path" (a DuckDB database file) and/or "files" (view: CSV, Parquet or JSON file or glob)`);
  }
  return draft;
}

function databasePath(path: string, cwd: string, where: string): string {
  const absolute = absoluteDataPath(path, cwd);
  if (!existsSync(absolute)) throw new ConfigError(`${where}: no such DuckDB database file: ${absolute}`);
  if (!statSync(absolute).isFile()) throw new ConfigError(`${where}: not a file: ${absolute}`);
  return absolute;
}

function dataPath(path: string, cwd: string, where: string): string {
  const absolute = absoluteDataPath(path, cwd);
  if (!duckdbReaderFor(absolute)) {
    throw new ConfigError(
      `${where}: ${absolute} is not a CSV, Parquet or JSON file by its extension (.csv, .tsv, .parquet, .json, .jsonl, .ndjson, optionally .gz)`,
    );
  }
  if (isGlob(absolute)) {
    const root = globRoot(absolute);
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new ConfigError(`${where}: the folder of the glob does not exist: ${root}`);
    return absolute;
  }
  if (!existsSync(absolute)) throw new ConfigError(`${where}: no such file: ${absolute}`);
  if (!statSync(absolute).isFile()) throw new ConfigError(`${where}: not a file: ${absolute}`);
  return absolute;
}

/** `--db sales=data/2024.csv`: the one view of a file or glob takes the alias as its name. */
export function renameSingleView(draft: Draft, alias: string): Draft {
  const entries = Object.entries(draft.files ?? {});
  if (draft.engine !== 'duckdb' || draft.path !== undefined || entries.length !== 1) return draft;
  return { ...draft, files: { [defaultViewName(`${alias.replace(/[^A-Za-z0-9_]/g, '_')}.csv`)]: entries[0]![1] } };
}
