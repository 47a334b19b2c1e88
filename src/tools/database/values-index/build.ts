import Database from 'better-sqlite3';
import type { DatabaseConfig, DatabaseDriver, RunOptions } from '../types.js';
import { valueToText } from '../values.js';
import { DIALECTS } from '../catalog/dialects.js';
import { byTable, candidateColumns, qualifiedTable, shownTable, type CandidateColumn } from '../catalog/find-values.js';
import { catalogueFingerprint, DEFAULT_MAX_DISTINCT, indexPath, IndexWriter } from './store.js';

/**
 * `quarry db index` (docs/guide/databases.md "Knowing the data"): reads every text column of the tables that match
 * the pattern and writes its distinct values with counts into the value index (store.ts). SQLite
 * files are read in one pass per table through a read-only connection of their own, counting the
 * values here (a GROUP BY would sort the whole table once per column); the servers and DuckDB
 * count with one GROUP BY per column, cut at the limit plus one. A column with more distinct values
 * than the limit keeps none: find_values scans it in the database.
 */

export interface BuildOptions {
  tablePattern?: string;
  maxDistinct?: number;
  /** Called before each table, and once at the end with done = total. */
  onProgress?: (done: number, total: number, table: string) => void;
}

export interface BuildSummary {
  path: string;
  tables: number;
  columns: number;
  /** Columns with more distinct values than the limit (no values kept). */
  overLimit: number;
  values: number;
  rows: number;
  /** Tables that could not be read (permissions): not indexed, so find_values scans them (and says it cannot). */
  skipped: { table: string; reason: string }[];
  seconds: number;
}

function text(value: unknown): string | null {
  if (value === null || value === undefined || Buffer.isBuffer(value)) return null;
  return typeof value === 'string' ? value : valueToText(value as never);
}

/**
 * One pass over a SQLite table: per column a map of values to counts. A column that goes over the
 * limit is dropped and the pass starts again without it, so columns of unique values cost only the
 * rows read until they overflow (the limit plus one distinct values), not a read of every row.
 */
function countSqliteTable(path: string, columns: readonly CandidateColumn[], maxDistinct: number): { rows: number; maps: (Map<string, number> | null)[] } {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const quote = DIALECTS.sqlite.quote;
    const first = columns[0]!;
    const from = qualifiedTable('sqlite', first.schema, first.table);
    const maps: (Map<string, number> | null)[] = columns.map(() => null);
    let live = columns.map((_, index) => index);
    for (;;) {
      for (const index of live) maps[index] = new Map();
      const list = live.length ? live.map((index) => quote(columns[index]!.column)).join(', ') : '1';
      let rows = 0;
      let overflowed = -1;
      const current = live.map((index) => maps[index]!);
      for (const row of db.prepare(`SELECT ${list} FROM ${from}`).raw(true).iterate() as Iterable<unknown[]>) {
        rows++;
        for (let i = 0; i < current.length; i++) {
          const value = row[i];
          if (value === null) continue;
          const key = typeof value === 'string' ? value : text(value);
          if (key === null) continue;
          const map = current[i]!;
          map.set(key, (map.get(key) ?? 0) + 1);
          if (map.size > maxDistinct) overflowed = i;
        }
        if (overflowed >= 0) break;
      }
      if (overflowed < 0) return { rows, maps };
      maps[live[overflowed]!] = null;
      live = live.filter((_, i) => i !== overflowed);
    }
  } finally {
    db.close();
  }
}

/** Through the driver (inside its read-only transaction): COUNT(*), then one GROUP BY per column cut at the limit plus one. */
async function countServerTable(
  config: DatabaseConfig,
  driver: DatabaseDriver,
  columns: readonly CandidateColumn[],
  maxDistinct: number,
  options: RunOptions,
): Promise<{ rows: number; maps: (Map<string, number> | null)[] }> {
  const dialect = DIALECTS[config.engine];
  const first = columns[0]!;
  const from = qualifiedTable(config.engine, first.schema, first.table);
  const [[total] = []] = await driver.catalog(`SELECT COUNT(*) FROM ${from}`, [], options);
  const maps: (Map<string, number> | null)[] = [];
  for (const column of columns) {
    const quoted = dialect.quote(column.column);
    const found = await driver.catalog(
      dialect.limit(`SELECT ${quoted}, COUNT(*) FROM ${from} WHERE ${quoted} IS NOT NULL GROUP BY ${quoted}`, maxDistinct + 1),
      [],
      options,
    );
    if (found.length > maxDistinct) {
      maps.push(null);
      continue;
    }
    const map = new Map<string, number>();
    for (const [value, count] of found) {
      const key = text(value);
      if (key !== null) map.set(key, (map.get(key) ?? 0) + Number(count));
    }
    maps.push(map);
  }
  return { rows: Number(total ?? 0), maps };
}

export async function buildValueIndex(config: DatabaseConfig, driver: DatabaseDriver, options: RunOptions, build: BuildOptions = {}): Promise<BuildSummary> {
  const started = Date.now();
  const maxDistinct = build.maxDistinct ?? DEFAULT_MAX_DISTINCT;
  const tablePattern = build.tablePattern ?? '%';
  const input = { engine: config.engine, driver, options, budgetSeconds: 0 };
  const fingerprint = await catalogueFingerprint(config.engine, driver, options);
  // Text columns only: a prefix request admits exactly those.
  const tables = byTable(await candidateColumns(input, { value: '', match: 'prefix', tablePattern, limit: 0 }));
  const path = indexPath(config);
  const writer = new IndexWriter(path, { fingerprint, builtAt: new Date().toISOString(), maxDistinct, tablePattern });
  const summary: BuildSummary = { path, tables: tables.length, columns: 0, overLimit: 0, values: 0, rows: 0, skipped: [], seconds: 0 };
  try {
    for (const [index, columns] of tables.entries()) {
      const first = columns[0]!;
      build.onProgress?.(index, tables.length, shownTable(first.schema, first.table));
      let counted;
      try {
        counted =
          config.engine === 'sqlite' && config.path
            ? countSqliteTable(config.path, columns, maxDistinct)
            : await countServerTable(config, driver, columns, maxDistinct, options);
      } catch (error) {
        // A lost connection or a cancel fails the build; a table that cannot be read is named and left out.
        await new Promise((resolve) => setImmediate(resolve));
        if (options.signal.aborted || driver.connectionLost?.()) throw error;
        summary.skipped.push({
          table: shownTable(first.schema, first.table),
          reason: (error instanceof Error ? error.message : String(error)).split('\n')[0]!,
        });
        continue;
      }
      summary.rows += counted.rows;
      columns.forEach((column, i) => {
        const map = counted.maps[i] ?? null;
        writer.addColumn({ schema: column.schema, table: column.table, column: column.column, type: column.type, rows: counted.rows }, map);
        summary.columns++;
        if (map) summary.values += map.size;
        else summary.overLimit++;
      });
    }
    writer.commit();
  } catch (error) {
    writer.discard();
    throw error;
  }
  build.onProgress?.(tables.length, tables.length, '');
  summary.seconds = (Date.now() - started) / 1000;
  return summary;
}
