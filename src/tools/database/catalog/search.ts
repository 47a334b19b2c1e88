import { ToolError } from '../../core/types.js';
import { formatTable } from '../format.js';
import type { CellValue, DatabaseDriver, Engine, RunOptions, TableDescription } from '../types.js';
import { DIALECTS } from './dialects.js';
import { tablePatternSuggestions } from './names.js';

/**
 * search, list_tables and the catalogue half of describe (docs/guide/databases.md "Knowing the data"). Each reads
 * the catalogue in one statement (two for SQLite's list_tables, which first checks whether
 * ANALYZE left statistics), bounded in the statement itself, so a schema of 20,000 tables costs
 * what one catalogue query costs.
 */

export const SEARCH_OBJECTS = ['table', 'column', 'any'] as const;
export type SearchObject = (typeof SEARCH_OBJECTS)[number];
export const SEARCH_LIMIT = 100;
export const LIST_TABLES_LIMIT = 200;

function count(value: number): string {
  return value.toLocaleString('en-US');
}

function matchCount(matches: number): string {
  return `${count(matches)} ${matches === 1 ? 'match' : 'matches'}`;
}

function total(rows: readonly CellValue[][], index: number): number {
  return rows.length ? Number(rows[0]![index]) : 0;
}

/** Tables, views and columns whose name or comment contains the pattern, best matches first. */
export async function searchCatalog(
  engine: Engine,
  driver: DatabaseDriver,
  pattern: string,
  object: SearchObject,
  options: RunOptions,
): Promise<{ text: string; matches: number }> {
  const needle = pattern.trim().toLowerCase();
  if (!needle) throw new ToolError('operation search needs a non-empty "pattern" (part of a table, column or comment text)', 'invalid_arguments');
  if (needle.includes('\0')) throw new ToolError('search: the pattern contains a NUL character', 'invalid_arguments');
  const dialect = DIALECTS[engine];
  const name = 'COALESCE(o.column_name, o.table_name)';
  const kinds = object === 'table' ? `o.kind IN ('table', 'view') AND ` : object === 'column' ? `o.kind = 'column' AND ` : '';
  const sql = dialect.limit(
    `SELECT kind, schema_name, table_name, column_name, data_type, comment_text, COUNT(*) OVER () AS matches FROM (
  SELECT o.kind, o.schema_name, o.table_name, o.column_name, o.data_type, o.comment_text,
    CASE WHEN LOWER(${name}) = ? THEN 0 WHEN ${dialect.startsWith(name, '?')} THEN 1 WHEN ${dialect.contains(name, '?')} THEN 2 ELSE 3 END AS quarry_rank
  FROM (${dialect.objects}) o
  WHERE ${kinds}(${dialect.contains(name, '?')} OR ${dialect.contains('o.comment_text', '?')})
) m
ORDER BY quarry_rank, schema_name, table_name, kind DESC, column_name`,
    SEARCH_LIMIT,
  );
  const rows = await driver.catalog(sql, [needle, needle, needle, needle, needle], options);
  const matches = total(rows, 6);
  if (matches === 0)
    return {
      text:
        `No ${object === 'any' ? 'table, view or column' : object === 'table' ? 'table or view' : 'column'} name or comment contains ` +
        `${JSON.stringify(pattern)}.`,
      matches,
    };
  const table = formatTable(
    ['kind', 'schema', 'table', 'column', 'type', 'comment'],
    rows.map((row) => row.slice(0, 6).map((value) => value ?? '')),
  );
  const shown = table.rows;
  const head =
    shown < matches
      ? `(${matchCount(matches)} for ${JSON.stringify(pattern)}, best first; showing ${count(shown)}: ${count(matches - shown)} more; narrow the pattern or ` +
        `pass object: "table" or "column")`
      : `(${matchCount(matches)} for ${JSON.stringify(pattern)}, best first: exact names, then names starting with it, then names containing it, then ` +
        `comments)`;
  return { text: `${head}\n${table.text}`, matches };
}

/** list_tables: the total, then at most 200 tables with row estimates and comments. */
export async function listTables(
  engine: Engine,
  driver: DatabaseDriver,
  pattern: string | undefined,
  options: RunOptions,
): Promise<{ text: string; tables: number }> {
  // SQLite would match up to the NUL and PostgreSQL refuses the byte: one message for all.
  if (pattern?.includes('\0')) throw new ToolError('list_tables: table_pattern contains a NUL character', 'invalid_arguments');
  const dialect = DIALECTS[engine];
  const statistics =
    engine === 'sqlite' ? (await driver.catalog(`SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat1'`, [], options)).length > 0 : true;
  const like = engine === 'vertica' ? 'ILIKE' : 'LIKE';
  const rows = await driver.catalog(
    dialect.limit(
      `SELECT schema_name, table_name, kind, est_rows, comment_text, COUNT(*) OVER () AS tables FROM (${dialect.tables(statistics)}) t WHERE table_name ` +
        `${like} ? ORDER BY schema_name, table_name`,
      LIST_TABLES_LIMIT,
    ),
    [pattern ?? '%'],
    options,
  );
  const tables = total(rows, 5);
  const matching = pattern ? ` ${tables === 1 ? 'matches' : 'match'} ${JSON.stringify(pattern)}` : '';
  if (tables === 0) {
    const suggestions = pattern ? await tablePatternSuggestions(engine, driver, pattern, options) : '';
    return { text: `No tables or views${matching}${suggestions}`.replace(/([^?])$/, '$1.'), tables };
  }
  const shownRows = rows.map(([schema, name, kind, estimate, comment]) => [
    schema,
    name,
    kind,
    estimate === null || estimate === undefined ? '' : `~${count(Number(estimate))}`,
    comment ?? '',
  ]);
  const table = formatTable(['schema', 'name', 'type', 'rows (est.)', 'comment'], shownRows);
  const totalText = `${count(tables)} ${tables === 1 ? 'table or view' : 'tables and views'}${matching}`;
  const note = estimateNote(engine);
  if (table.rows === tables) return { text: `(${totalText}; ${note})\n${table.text}`, tables };
  const next = rows[Math.min(table.rows, rows.length - 1)]?.[1];
  return {
    text:
      `(${totalText}; showing the first ${count(table.rows)}: use operation search {pattern} to find tables by name, column or comment, or ` +
      `table_pattern, e.g. "${tableHint(String(next ?? ''))}"; ${note})\n${table.text}\n(${count(tables - table.rows)} more not shown: narrow with search ` +
      `or table_pattern)`,
    tables,
  };
}

function estimateNote(engine: Engine): string {
  switch (engine) {
    case 'postgres':
      return "row counts are the planner's estimates (pg_class.reltuples; blank until the table is analysed)";
    case 'mysql':
      return 'row counts are estimates (information_schema.TABLES.TABLE_ROWS)';
    case 'oracle':
      return 'row counts are from the last statistics gathering (ALL_TABLES.NUM_ROWS)';
    case 'sqlite':
      return 'row counts are from sqlite_stat1 where ANALYZE has run, blank otherwise';
    case 'vertica':
      return 'Vertica keeps no cheap row estimate: use COUNT(*)';
    case 'clickhouse':
      return 'row counts are those of the active parts of MergeTree tables (system.parts); blank for other table engines';
    case 'duckdb':
      return "row counts are DuckDB's estimates for tables; views over files have none";
  }
}

function tableHint(name: string): string {
  const prefix = name.replace(/[%_\\]/g, '').slice(0, 3);
  return prefix ? `${prefix}%` : 'order%';
}

/** Comments and the foreign keys that point at the table, added to what the driver described. */
export async function addCatalogDetails(engine: Engine, driver: DatabaseDriver, description: TableDescription, options: RunOptions): Promise<TableDescription> {
  const rows = await driver.catalog(detailsSql(engine), detailsParams(engine, description), options);
  const columnComments = new Map<string, string>();
  const referencedBy: string[] = [];
  let comment: string | null = null;
  for (const [kind, name, text] of rows) {
    if (text === null || text === undefined || text === '') continue;
    if (kind === 'table') comment = String(text);
    else if (kind === 'column') columnComments.set(String(name), String(text));
    else referencedBy.push(`${String(name)}: ${String(text)}`);
  }
  return {
    ...description,
    comment,
    columns: description.columns.map((column) => ({ ...column, comment: columnComments.get(column.name) ?? null })),
    referencedBy,
  };
}

function detailsParams(engine: Engine, description: TableDescription): unknown[] {
  const { schema, name } = description;
  switch (engine) {
    case 'postgres':
      return [`${DIALECTS.postgres.quote(schema ?? 'public')}.${DIALECTS.postgres.quote(name)}`];
    case 'sqlite':
      return [name];
    case 'duckdb':
      return [name, schema];
    case 'clickhouse':
      return [schema, name];
    case 'vertica':
      return [schema, name, schema, name];
    default:
      return [schema, name, schema, name, schema, name];
  }
}

/** Rows (kind: table | column | referenced_by, name, text) for the table. */
function detailsSql(engine: Engine): string {
  switch (engine) {
    case 'postgres':
      return (
        `WITH t AS (SELECT to_regclass(?) AS oid)
        SELECT 'table', NULL::text, d.description FROM t JOIN pg_description d ON d.objoid = t.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
        UNION ALL SELECT 'column', a.attname::text, d.description FROM t JOIN pg_attribute a ON a.attrelid = t.oid
          JOIN pg_description d ON d.objoid = t.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = a.attnum
        UNION ALL SELECT 'referenced_by', c.conrelid::regclass::text || ' (' || c.conname || ')', pg_get_constraintdef(c.oid) FROM t JOIN pg_constraint c ` +
        `ON c.confrelid = t.oid AND c.contype = 'f'`
      );
    case 'mysql':
      return `SELECT 'table', NULL, NULLIF(table_comment, '') FROM information_schema.tables WHERE table_schema = ? AND table_name = ?
        UNION ALL SELECT 'column', column_name, NULLIF(column_comment, '') FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
        UNION ALL SELECT 'referenced_by', CONCAT(table_schema, '.', table_name, ' (', constraint_name, ')'), CONCAT(column_name, ' -> ', referenced_column_name)
          FROM information_schema.key_column_usage WHERE referenced_table_schema = ? AND referenced_table_name = ?`;
    case 'oracle':
      return `SELECT 'table', CAST(NULL AS VARCHAR2(128)), comments FROM all_tab_comments WHERE owner = ? AND table_name = ?
        UNION ALL SELECT 'column', column_name, comments FROM all_col_comments WHERE owner = ? AND table_name = ?
        UNION ALL SELECT 'referenced_by', r.owner || '.' || r.table_name || ' (' || r.constraint_name || ')', 'references ' || p.constraint_name
          FROM all_constraints r JOIN all_constraints p ON p.owner = r.r_owner AND p.constraint_name = r.r_constraint_name
          WHERE p.owner = ? AND p.table_name = ? AND r.constraint_type = 'R'`;
    case 'vertica':
      return `SELECT 'table', NULL::varchar, comment FROM v_catalog.comments WHERE object_type IN ('TABLE', 'VIEW') AND object_schema = ? AND object_name = ?
        UNION ALL SELECT 'referenced_by', table_schema || '.' || table_name || ' (' || constraint_name || ')', column_name || ' -> ' || reference_column_name
          FROM v_catalog.foreign_keys WHERE reference_table_schema = ? AND reference_table_name = ?`;
    case 'sqlite':
      // SQLite keeps no comments; other tables' foreign keys name this table.
      return `SELECT 'referenced_by', t.name, '(' || group_concat(f."from", ', ') || ') -> (' || group_concat(COALESCE(f."to", 'primary key'), ', ') || ')'
        FROM pragma_table_list AS t JOIN pragma_foreign_key_list(t.name, t.schema) AS f
        WHERE t.type = 'table' AND f."table" = ? COLLATE NOCASE GROUP BY t.schema, t.name, f.id`;
    case 'clickhouse':
      // ClickHouse has no foreign keys; comments of columns (a table's comment is 20.x+ and not read here).
      return `SELECT 'column', name, comment FROM system.columns WHERE database = ? AND table = ?`;
    case 'duckdb':
      // describe names a schema "schema" in the current database and "database.schema" elsewhere.
      return (
        `SELECT 'table', NULL, comment FROM (SELECT comment, table_name AS name, database_name, schema_name FROM duckdb_tables()
            UNION ALL SELECT comment, view_name, database_name, schema_name FROM duckdb_views()) x
          WHERE name = $1 AND (schema_name = $2 OR database_name || '.' || schema_name = $2)
        UNION ALL SELECT 'column', column_name, comment FROM duckdb_columns() WHERE table_name = $1 AND (schema_name = $2 OR database_name || '.' || ` +
        `schema_name = $2)
        UNION ALL SELECT 'referenced_by', table_name, constraint_text FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY' AND referenced_table ` +
        `= $1`
      );
  }
}
