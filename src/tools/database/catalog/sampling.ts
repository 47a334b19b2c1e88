import type { DatabaseDriver, Engine, RunOptions, TableDescription } from '../types.js';
import { DIALECTS } from './dialects.js';

/**
 * How each engine picks rows without reading the whole table (docs/guide/databases.md "Knowing the data"):
 * - PostgreSQL: TABLESAMPLE SYSTEM (whole pages, chosen at random), sized from pg_class.reltuples;
 * - Oracle: SAMPLE BLOCK, sized from ALL_TABLES.NUM_ROWS; Vertica: TABLESAMPLE;
 * - SQLite (rowid tables) and MySQL/MariaDB (a one-column integer primary key): random points
 *   of the key range, each found through the key's index (`key >= point ORDER BY key LIMIT 1`),
 *   or for profiles a few random ranges of the key;
 * - DuckDB: USING SAMPLE (reservoir), which reads its input once;
 * - small tables (up to 10,000 rows): random order over the whole table; views and tables with
 *   nothing to sample by: their first rows, and the output says so.
 */

/** Tables up to this many rows are read whole (random order for `sample`, every row for `profile`). */
export const SMALL_TABLE_ROWS = 10_000;

export interface TableTarget {
  description: TableDescription;
  /** The table's name as SQL: quoted, schema-qualified. */
  sql: string;
  /** Estimated rows (the engine's statistics, or the key range), or null when unknown. */
  estimate: number | null;
  /** How the estimate was made, for the output. */
  estimateSource: string;
  /** The integer column to sample by (SQLite rowid, or a one-column integer primary key), if any. */
  key: string | null;
  isView: boolean;
}

export function quoteTable(engine: Engine, description: TableDescription): string {
  const { quote } = DIALECTS[engine];
  const name = quote(description.name);
  if (!description.schema) return name;
  // DuckDB names tables of other databases "database.schema".
  const schemaParts = engine === 'duckdb' ? description.schema.split('.') : [description.schema];
  return `${schemaParts.map(quote).join('.')}.${name}`;
}

function asNumber(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const number = Number(value);
  return Number.isFinite(number) ? number : null;
}

/** Where the table stands: its size estimate and what it can be sampled by. */
export async function targetFor(engine: Engine, driver: DatabaseDriver, description: TableDescription, options: RunOptions): Promise<TableTarget> {
  const sql = quoteTable(engine, description);
  const pk = description.primaryKey.length === 1 ? description.columns.find((column) => column.name === description.primaryKey[0]) : undefined;
  const integerKey = pk && /int/i.test(pk.type) ? pk.name : null;
  const one = async (statement: string, params: unknown[]) => (await driver.catalog(statement, params, options))[0] ?? [];
  switch (engine) {
    case 'postgres': {
      const [estimate, kind] = await one(
        `SELECT CASE WHEN reltuples >= 0 THEN reltuples::bigint ELSE pg_relation_size(oid) / 100 END, relkind::text FROM pg_class WHERE oid = to_regclass(?)`,
        [sql],
      );
      const isView = kind === 'v' || kind === 'f';
      return { description, sql, estimate: isView ? null : asNumber(estimate), estimateSource: 'pg_class.reltuples', key: null, isView };
    }
    case 'mysql': {
      const [estimate, type] = await one(`SELECT table_rows, table_type FROM information_schema.tables WHERE table_schema = ? AND table_name = ?`, [
        description.schema,
        description.name,
      ]);
      return {
        description,
        sql,
        estimate: asNumber(estimate),
        estimateSource: 'information_schema.TABLES.TABLE_ROWS',
        key: integerKey,
        isView: type === 'VIEW',
      };
    }
    case 'oracle': {
      const [estimate, type] = await one(
        `SELECT t.num_rows, o.object_type FROM all_objects o LEFT JOIN all_tables t ON t.owner = o.owner AND t.table_name = o.object_name WHERE o.owner = ? ` +
          `AND o.object_name = ? AND o.object_type IN ('TABLE', 'VIEW', 'MATERIALIZED VIEW')`,
        [description.schema, description.name],
      );
      return { description, sql, estimate: asNumber(estimate), estimateSource: 'ALL_TABLES.NUM_ROWS', key: null, isView: type === 'VIEW' };
    }
    case 'sqlite': {
      const [type, withoutRowid] = await one(`SELECT type, wr FROM pragma_table_list WHERE schema = ? AND name = ?`, [description.schema, description.name]);
      if (type === 'table' && Number(withoutRowid) === 0) {
        // The ends of the rowid b-tree: two page reads, whatever the table's size (keyEnds).
        const [low, high] = await one(keyEnds('rowid', sql), []);
        const range = asNumber(low) === null ? 0 : Number(high) - Number(low) + 1;
        return { description, sql, estimate: range, estimateSource: 'the rowid range', key: 'rowid', isView: false };
      }
      return { description, sql, estimate: null, estimateSource: 'unknown', key: null, isView: type === 'view' };
    }
    case 'vertica': {
      const [type] = await one(`SELECT 'view' FROM v_catalog.views WHERE table_schema = ? AND table_name = ?`, [description.schema, description.name]);
      if (type === 'view') return { description, sql, estimate: null, estimateSource: 'unknown', key: null, isView: true };
      const [count] = await one(`SELECT COUNT(*) FROM ${sql}`, []);
      return { description, sql, estimate: asNumber(count), estimateSource: 'COUNT(*)', key: null, isView: false };
    }
    case 'clickhouse': {
      const [engineName] = await one(`SELECT engine FROM system.tables WHERE database = ? AND name = ?`, [description.schema, description.name]);
      if (/View$/.test(String(engineName ?? ''))) return { description, sql, estimate: null, estimateSource: 'unknown', key: null, isView: true };
      // count() of a MergeTree table is read from its parts' metadata, not from its rows.
      const [count] = await one(`SELECT count() FROM ${sql}`, []);
      return { description, sql, estimate: asNumber(count), estimateSource: 'count()', key: null, isView: false };
    }
    case 'duckdb': {
      const [count] = await one(`SELECT COUNT(*) FROM ${sql}`, []);
      return { description, sql, estimate: asNumber(count), estimateSource: 'COUNT(*)', key: null, isView: false };
    }
  }
}

/** Random integers in [low, high], sorted and distinct. */
function randomPoints(low: number, high: number, count: number): number[] {
  const points = new Set<number>();
  const span = high - low + 1;
  for (let tries = 0; points.size < Math.min(count, span) && tries < count * 10; tries++) points.add(low + Math.floor(Math.random() * span));
  return [...points].sort((a, b) => a - b);
}

/**
 * The lowest and highest key, each in its own subquery: SQLite reads one end of the b-tree for a
 * lone `min()` or `max()`, but `SELECT min(k), max(k)` in one statement scans the whole table.
 * (For the engines that sample by key, SQLite and MySQL/MariaDB, a FROM-less SELECT is valid.)
 */
function keyEnds(key: string, table: string): string {
  return `SELECT (SELECT MIN(${key}) FROM ${table}), (SELECT MAX(${key}) FROM ${table})`;
}

async function keyRange(driver: DatabaseDriver, target: TableTarget, options: RunOptions): Promise<[number, number] | null> {
  const key = target.key === 'rowid' ? 'rowid' : DIALECTS[driver.engine].quote(target.key!);
  const [low, high] = (await driver.catalog(keyEnds(key, target.sql), [], options))[0] ?? [];
  const from = asNumber(low);
  const to = asNumber(high);
  return from === null || to === null ? null : [from, to];
}

export interface SampleQuery {
  sql: string;
  params: unknown[];
  /** How the rows were chosen, for the output. */
  method: string;
  sampled: boolean;
}

/** A statement returning about `rows` representative rows of the table without reading all of it. */
export async function sampleRowsQuery(driver: DatabaseDriver, target: TableTarget, rows: number, options: RunOptions): Promise<SampleQuery> {
  const engine = driver.engine;
  const dialect = DIALECTS[engine];
  const estimate = target.estimate;
  if (target.isView)
    return {
      sql: dialect.limit(`SELECT * FROM ${target.sql}`, rows),
      params: [],
      method: 'the first rows of the view (a view is not sampled: it may be costly to compute whole)',
      sampled: false,
    };
  if (engine === 'duckdb')
    return { sql: `SELECT * FROM ${target.sql} USING SAMPLE ${rows} ROWS`, params: [], method: 'DuckDB reservoir sampling (USING SAMPLE)', sampled: true };
  if (estimate !== null && estimate <= SMALL_TABLE_ROWS) {
    return {
      sql: dialect.limit(`SELECT * FROM ${target.sql} ORDER BY ${dialect.random}`, rows),
      params: [],
      method: `random rows of the whole table (about ${estimate.toLocaleString('en-US')} rows)`,
      sampled: false,
    };
  }
  const percent = estimate ? Math.min(99, Math.max(0.0001, (100 * Math.max(rows * 50, 2000)) / estimate)) : 1;
  const pct = Number(percent.toPrecision(3));
  switch (engine) {
    case 'postgres':
      return {
        sql: dialect.limit(`SELECT * FROM ${target.sql} TABLESAMPLE SYSTEM (${pct}) ORDER BY random()`, rows),
        params: [],
        method: `TABLESAMPLE SYSTEM (${pct}%) of about ${format(estimate)} rows`,
        sampled: true,
      };
    case 'oracle':
      return {
        sql: dialect.limit(`SELECT * FROM ${target.sql} SAMPLE BLOCK (${pct}) ORDER BY DBMS_RANDOM.VALUE`, rows),
        params: [],
        method: `SAMPLE BLOCK (${pct}%) of about ${format(estimate)} rows`,
        sampled: true,
      };
    case 'vertica':
      return {
        sql: dialect.limit(`SELECT * FROM ${target.sql} TABLESAMPLE (${pct}) ORDER BY RANDOM()`, rows),
        params: [],
        method: `TABLESAMPLE (${pct}%) of ${format(estimate)} rows`,
        sampled: true,
      };
    default: {
      const range = target.key ? await keyRange(driver, target, options) : null;
      if (!range)
        return {
          sql: dialect.limit(`SELECT * FROM ${target.sql}`, rows),
          params: [],
          method: 'the first rows (no integer primary key to sample by, so not a random sample)',
          sampled: false,
        };
      const key = target.key === 'rowid' ? 'rowid' : dialect.quote(target.key!);
      const points = randomPoints(range[0], range[1], rows);
      const probe = `SELECT * FROM ${target.sql} WHERE ${key} >= ? ORDER BY ${key} LIMIT 1`;
      // SQLite takes ORDER BY and LIMIT in a compound's members only inside a subquery; MySQL in parentheses.
      const member = engine === 'sqlite' ? `SELECT * FROM (${probe})` : `(${probe})`;
      return {
        sql: points.map(() => member).join('\nUNION\n'),
        params: points,
        method: `${points.length} random points of ${key === 'rowid' ? 'the rowid' : `the primary key ${target.key}`} range, each found through its index`,
        sampled: true,
      };
    }
  }
}

/** Rows a profile reads at most; bigger tables are sampled down to about this many. */
export const PROFILE_ROWS = 100_000;

export interface ProfileSource {
  /** A FROM item (a parenthesised statement with an alias, or the table name). */
  from: string;
  params: unknown[];
  /** Null when every row is read; otherwise how they were sampled. */
  sampled: string | null;
}

/** The rows a table's profile reads: all of them when small, else a sample of about PROFILE_ROWS. */
export async function profileSource(driver: DatabaseDriver, target: TableTarget, options: RunOptions): Promise<ProfileSource> {
  const engine = driver.engine;
  const dialect = DIALECTS[engine];
  const estimate = target.estimate;
  const whole = { from: target.sql, params: [], sampled: null };
  if (estimate !== null && estimate <= PROFILE_ROWS * 2) return whole;
  const first = (why: string): ProfileSource => ({
    from: `(${dialect.limit(`SELECT * FROM ${target.sql}`, PROFILE_ROWS)}) quarry_rows`,
    params: [],
    sampled: `the first ${format(PROFILE_ROWS)} rows (${why})`,
  });
  if (target.isView) return first('a view is not sampled');
  const pct = estimate ? Number(Math.min(99, Math.max(0.0001, (100 * PROFILE_ROWS) / estimate)).toPrecision(3)) : 1;
  switch (engine) {
    case 'postgres':
      return {
        from: `(SELECT * FROM ${target.sql} TABLESAMPLE SYSTEM (${pct}) REPEATABLE (42)) quarry_rows`,
        params: [],
        sampled: `TABLESAMPLE SYSTEM (${pct}%) of about ${format(estimate)} rows`,
      };
    case 'oracle':
      return {
        from: `(SELECT * FROM ${target.sql} SAMPLE BLOCK (${pct}) SEED (42)) quarry_rows`,
        params: [],
        sampled: `SAMPLE BLOCK (${pct}%) of about ${format(estimate)} rows`,
      };
    case 'vertica':
      return {
        from: `(SELECT * FROM ${target.sql} TABLESAMPLE (${pct})) quarry_rows`,
        params: [],
        sampled: `TABLESAMPLE (${pct}%) of ${format(estimate)} rows`,
      };
    case 'duckdb':
      return {
        from: `(SELECT * FROM ${target.sql} USING SAMPLE ${PROFILE_ROWS} ROWS) quarry_rows`,
        params: [],
        sampled: `DuckDB reservoir sampling of ${format(PROFILE_ROWS)} of ${format(estimate)} rows`,
      };
    default: {
      const range = target.key ? await keyRange(driver, target, options) : null;
      if (!range) return first('no integer primary key to sample by');
      const key = target.key === 'rowid' ? 'rowid' : dialect.quote(target.key!);
      const ranges = 20;
      const width = Math.max(1, Math.floor(((range[1] - range[0] + 1) * PROFILE_ROWS) / (estimate ?? PROFILE_ROWS) / ranges));
      const starts = randomPoints(range[0], Math.max(range[0], range[1] - width), ranges);
      const where = starts.map(() => `${key} BETWEEN ? AND ?`).join(' OR ');
      return {
        from: `(SELECT * FROM ${target.sql} WHERE ${where}) quarry_rows`,
        params: starts.flatMap((start) => [start, start + width - 1]),
        sampled:
          `${starts.length} random ranges of ${key === 'rowid' ? 'the rowid' : `the primary key ${target.key}`} (about ` +
          `${format(starts.length * width)} of ${format(estimate)} rows)`,
      };
    }
  }
}

function format(value: number | null): string {
  return value === null ? 'an unknown number of' : Math.round(value).toLocaleString('en-US');
}
