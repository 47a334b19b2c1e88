import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { quarryHome } from '../../../config/home.js';
import type { DatabaseConfig, DatabaseDriver, Engine, RunOptions } from '../types.js';
import { DIALECTS } from '../catalog/dialects.js';
import { DEFAULT_MAX_DISTINCT } from './limits.js';

/**
 * The value index (docs/guide/databases.md "Knowing the data"): per text column, its distinct values with their
 * counts, up to a cardinality limit, kept outside the database in one SQLite file per database
 * under $QUARRY_HOME/cache/values/, named by a hash of the database's identity (engine, file or
 * server, database, user; never the password). It records a fingerprint of the catalogue (every
 * table's columns and types): when the catalogue changes the index no longer answers. Lookups go
 * through an index on the lower-cased value, so an exact or prefix lookup costs a B-tree search
 * whatever the number of values.
 */

export { DEFAULT_MAX_DISTINCT } from './limits.js';
const FORMAT = '1';

/** The database's identity: what makes two configurations the same database (no password). */
export function databaseIdentity(config: DatabaseConfig): string {
  return JSON.stringify([
    config.engine,
    config.path ?? null,
    config.files ?? null,
    config.host ?? null,
    config.port ?? null,
    config.database ?? null,
    config.user ?? null,
    config.dsn ?? null,
  ]);
}

export function indexPath(config: DatabaseConfig, env: NodeJS.ProcessEnv = process.env): string {
  const key = createHash('sha256').update(databaseIdentity(config)).digest('hex').slice(0, 32);
  return join(quarryHome(env), 'cache', 'values', `${config.alias.replace(/[^A-Za-z0-9_.-]/g, '_')}-${key}.sqlite`);
}

/** A hash of every table's columns and types (one catalogue statement): the index is valid while it stays the same. */
export async function catalogueFingerprint(engine: Engine, driver: DatabaseDriver, options: RunOptions): Promise<string> {
  const rows = await driver.catalog(
    `SELECT kind, schema_name, table_name, column_name, data_type FROM (${DIALECTS[engine].objects}) o ORDER BY schema_name, table_name, kind, column_name`,
    [],
    options,
  );
  const hash = createHash('sha256');
  for (const row of rows) hash.update(`${JSON.stringify(row.map((value) => (value === null || value === undefined ? null : String(value))))}\n`);
  return hash.digest('hex');
}

export interface IndexedColumn {
  id: number;
  schema: string | null;
  table: string;
  column: string;
  type: string;
  rows: number;
  /** Distinct values, or null when there were more than the limit (then none are kept). */
  distinct: number | null;
}

export interface IndexMeta {
  fingerprint: string;
  builtAt: string;
  maxDistinct: number;
  tablePattern: string;
}

const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE columns (id INTEGER PRIMARY KEY, schema_name TEXT, table_name TEXT NOT NULL, column_name TEXT NOT NULL, data_type TEXT NOT NULL,
  row_count INTEGER NOT NULL, distinct_count INTEGER);
CREATE TABLE vals (column_id INTEGER NOT NULL, value TEXT NOT NULL, lvalue TEXT NOT NULL, n INTEGER NOT NULL);
`;

/** An index being written: a temporary file renamed into place when complete, so a reader never sees half of one. */
export class IndexWriter {
  private readonly db: Database.Database;
  private readonly temporary: string;
  private readonly insertColumn: Database.Statement;
  private readonly insertValue: Database.Statement;

  constructor(
    private readonly path: string,
    meta: IndexMeta,
  ) {
    mkdirSync(join(path, '..'), { recursive: true });
    this.temporary = `${path}.${process.pid}.building`;
    rmSync(this.temporary, { force: true });
    this.db = new Database(this.temporary);
    this.db.pragma('journal_mode = OFF');
    this.db.pragma('synchronous = OFF');
    this.db.exec(SCHEMA);
    const setMeta = this.db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
    setMeta.run('format', FORMAT);
    setMeta.run('fingerprint', meta.fingerprint);
    setMeta.run('built_at', meta.builtAt);
    setMeta.run('max_distinct', String(meta.maxDistinct));
    setMeta.run('table_pattern', meta.tablePattern);
    this.insertColumn = this.db.prepare(
      'INSERT INTO columns (schema_name, table_name, column_name, data_type, row_count, distinct_count) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.insertValue = this.db.prepare('INSERT INTO vals (column_id, value, lvalue, n) VALUES (?, ?, ?, ?)');
  }

  /** One column: its values with counts, or null when it had more distinct values than the limit. */
  addColumn(column: Omit<IndexedColumn, 'id' | 'distinct'>, values: Map<string, number> | null): void {
    this.db.transaction(() => {
      const id = Number(
        this.insertColumn.run(column.schema, column.table, column.column, column.type, column.rows, values ? values.size : null).lastInsertRowid,
      );
      if (values) for (const [value, n] of values) this.insertValue.run(id, value, value.toLowerCase(), n);
    })();
  }

  commit(): void {
    this.db.exec('CREATE INDEX vals_lvalue ON vals (lvalue); CREATE INDEX vals_column ON vals (column_id)');
    this.db.close();
    renameSync(this.temporary, this.path);
  }

  discard(): void {
    if (this.db.open) this.db.close();
    rmSync(this.temporary, { force: true });
  }
}

/** An index opened for lookups (read-only). */
export class IndexReader {
  readonly meta: IndexMeta;
  private readonly columnsById = new Map<number, IndexedColumn>();
  private readonly byName = new Map<string, IndexedColumn>();

  private constructor(private readonly db: Database.Database) {
    const meta = new Map((db.prepare('SELECT key, value FROM meta').raw(true).all() as [string, string][]).map(([k, v]) => [k, v]));
    this.meta = {
      fingerprint: meta.get('fingerprint') ?? '',
      builtAt: meta.get('built_at') ?? '',
      maxDistinct: Number(meta.get('max_distinct') ?? DEFAULT_MAX_DISTINCT),
      tablePattern: meta.get('table_pattern') ?? '%',
    };
    for (const row of db.prepare('SELECT id, schema_name, table_name, column_name, data_type, row_count, distinct_count FROM columns').raw(true).all() as [
      number,
      string | null,
      string,
      string,
      string,
      number,
      number | null,
    ][]) {
      const column: IndexedColumn = { id: row[0], schema: row[1], table: row[2], column: row[3], type: row[4], rows: row[5], distinct: row[6] };
      this.columnsById.set(column.id, column);
      this.byName.set(columnKey(column.schema, column.table, column.column), column);
    }
  }

  /** The index at the path when it is one of this format; null when there is none (or it cannot be read). */
  static open(path: string): IndexReader | null {
    if (!existsSync(path)) return null;
    try {
      const db = new Database(path, { readonly: true, fileMustExist: true });
      const format = db.prepare(`SELECT value FROM meta WHERE key = 'format'`).pluck(true).get();
      if (format !== FORMAT) {
        db.close();
        return null;
      }
      return new IndexReader(db);
    } catch {
      return null;
    }
  }

  column(schema: string | null, table: string, column: string): IndexedColumn | undefined {
    return this.byName.get(columnKey(schema, table, column));
  }

  /** Values of the given columns whose lower-cased form equals `lower`, or starts with it (prefix), or all of them (contains, fuzzy: filtered by the caller). */
  values(columnIds: readonly number[], lower: string, how: 'equal' | 'prefix' | 'all'): Array<[number, string, number]> {
    if (columnIds.length === 0) return [];
    const ids = `(${columnIds.join(',')})`;
    if (how === 'equal')
      return this.db.prepare(`SELECT column_id, value, n FROM vals WHERE lvalue = ? AND column_id IN ${ids}`).raw(true).all(lower) as [
        number,
        string,
        number,
      ][];
    if (how === 'prefix')
      return this.db
        .prepare(`SELECT column_id, value, n FROM vals WHERE lvalue >= ? AND lvalue < ? AND column_id IN ${ids}`)
        .raw(true)
        .all(lower, `${lower}\u{10ffff}`) as [number, string, number][];
    return this.db.prepare(`SELECT column_id, value, n FROM vals WHERE column_id IN ${ids}`).raw(true).all() as [number, string, number][];
  }

  close(): void {
    this.db.close();
  }
}

export function columnKey(schema: string | null, table: string, column: string): string {
  return JSON.stringify([schema, table, column]);
}
