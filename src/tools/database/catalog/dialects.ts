import type { Engine } from '../types.js';

/**
 * What the schema operations (docs/guide/databases.md "Knowing the data") need to say in each engine's SQL: how to
 * quote a name, find a substring, cut rows, and where the catalogue keeps tables, columns, comments,
 * row estimates and foreign keys. Every statement here is quarry's own and uses `?` placeholders
 * for whatever the model chose (patterns, names), never string splicing; names are spliced only
 * after the catalogue has confirmed them, and then quoted.
 */

/** Schemas that hold the engine's own catalogue, left out of search and list_tables. */
const MYSQL_SYSTEM = `('mysql', 'information_schema', 'performance_schema', 'sys')`;
const ORACLE_SYSTEM =
  `('SYS', 'SYSTEM', 'XDB', 'MDSYS', 'CTXSYS', 'ORDSYS', 'OUTLN', 'DBSNMP', 'APPQOSSYS', 'WMSYS', 'OJVMSYS', 'LBACSYS', ` +
  `'GSMADMIN_INTERNAL', 'DVSYS', 'AUDSYS', 'OLAPSYS', 'ORDDATA')`;

export interface Dialect {
  /** A quoted identifier. */
  quote(name: string): string;
  /** SQL true when `needle` (already lower case) occurs in `haystack`, compared in lower case. */
  contains(haystack: string, needle: string): string;
  /** SQL true when `haystack` in lower case starts with `needle`. */
  startsWith(haystack: string, needle: string): string;
  /** The statement cut to its first `rows` rows. */
  limit(sql: string, rows: number): string;
  /** The catalogue as rows (kind, schema_name, table_name, column_name, data_type, comment): tables, views and columns. */
  objects: string;
  /** Tables and views as rows (schema_name, table_name, kind, est_rows, comment); est_rows null where unknown. */
  tables(withStatistics: boolean): string;
  /** Text of an expression, for min, max and distinct counts of types that have no order of their own. */
  asText(expression: string): string;
  /** An expression's length in characters. */
  length(expression: string): string;
  /** An expression as a double-precision number. */
  asDouble(expression: string): string;
  /** Random order, for picking sample rows among a small sampled set. */
  random: string;
  /**
   * The sample standard deviation of a double-precision expression, by the engine's own (numerically
   * stable) aggregate; null where the engine has none (SQLite), and profile.ts centres on the mean.
   */
  stddev: ((expression: string) => string) | null;
}

const standardQuote = (name: string) => `"${name.replace(/"/g, '""')}"`;
const limitClause = (sql: string, rows: number) => `${sql}\nLIMIT ${rows}`;

const sqlite: Dialect = {
  quote: standardQuote,
  contains: (haystack, needle) => `instr(lower(${haystack}), ${needle}) > 0`,
  startsWith: (haystack, needle) => `instr(lower(${haystack}), ${needle}) = 1`,
  limit: limitClause,
  objects: `SELECT CASE t.type WHEN 'view' THEN 'view' ELSE 'table' END AS kind, t.schema AS schema_name, t.name AS table_name,
      NULL AS column_name, NULL AS data_type, NULL AS comment_text
    FROM pragma_table_list AS t WHERE t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND t.type IN ('table', 'view')
    UNION ALL
    SELECT 'column', t.schema, t.name, c.name, c.type, NULL
    FROM pragma_table_list AS t JOIN pragma_table_info(t.name, t.schema) AS c
    WHERE t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND t.type IN ('table', 'view')`,
  // sqlite_stat1 (written by ANALYZE) starts each table's stat with its row count; without it, no estimate.
  tables: (withStatistics) =>
    `SELECT t.schema AS schema_name, t.name AS table_name, t.type AS kind,
      ${withStatistics ? `(SELECT MAX(CAST(s.stat AS INTEGER)) FROM sqlite_stat1 AS s WHERE s.tbl = t.name AND t.schema = 'main')` : 'NULL'} AS est_rows, ` +
    `NULL AS comment_text
    FROM pragma_table_list AS t WHERE t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND t.type IN ('table', 'view', 'virtual')`,
  asText: (expression) => `CAST(${expression} AS TEXT)`,
  length: (expression) => `length(${expression})`,
  asDouble: (expression) => `CAST(${expression} AS REAL)`,
  random: 'random()',
  stddev: null,
};

const postgres: Dialect = {
  quote: standardQuote,
  contains: (haystack, needle) => `strpos(lower(${haystack}), ${needle}) > 0`,
  startsWith: (haystack, needle) => `strpos(lower(${haystack}), ${needle}) = 1`,
  limit: limitClause,
  objects: `SELECT CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END AS kind, n.nspname::text AS schema_name, c.relname::text AS table_name,
      NULL::text AS column_name, NULL::text AS data_type, d.description AS comment_text
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'
    UNION ALL
    SELECT 'column', n.nspname::text, c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), d.description
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = a.attnum
    WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'`,
  // reltuples is the planner's estimate (-1: never analysed or vacuumed).
  tables: () =>
    `SELECT n.nspname::text AS schema_name, c.relname::text AS table_name,
      CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign ` +
    `table' END AS kind,
      CASE WHEN c.relkind IN ('r', 'p', 'm') AND c.reltuples >= 0 THEN c.reltuples::bigint END AS est_rows, d.description AS comment_text
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_description d ON d.objoid = c.oid AND d.classoid = 'pg_class'::regclass AND d.objsubid = 0
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'`,
  asText: (expression) => `(${expression})::text`,
  length: (expression) => `length((${expression})::text)`,
  asDouble: (expression) => `(${expression})::double precision`,
  random: 'random()',
  stddev: (expression) => `STDDEV_SAMP(${expression})`,
};

const mysql: Dialect = {
  quote: (name) => `\`${name.replace(/`/g, '``')}\``,
  contains: (haystack, needle) => `LOCATE(${needle}, LOWER(${haystack})) > 0`,
  startsWith: (haystack, needle) => `LOCATE(${needle}, LOWER(${haystack})) = 1`,
  limit: limitClause,
  objects: `SELECT CASE WHEN table_type = 'VIEW' THEN 'view' ELSE 'table' END AS kind, table_schema AS schema_name, table_name AS table_name,
      NULL AS column_name, NULL AS data_type, NULLIF(table_comment, '') AS comment_text
    FROM information_schema.tables WHERE table_schema NOT IN ${MYSQL_SYSTEM}
    UNION ALL
    SELECT 'column', table_schema, table_name, column_name, column_type, NULLIF(column_comment, '')
    FROM information_schema.columns WHERE table_schema NOT IN ${MYSQL_SYSTEM}`,
  // TABLE_ROWS is InnoDB's estimate (exact for MyISAM); views have none.
  tables: () => `SELECT table_schema AS schema_name, table_name AS table_name,
      CASE table_type WHEN 'BASE TABLE' THEN 'table' ELSE LOWER(table_type) END AS kind,
      table_rows AS est_rows, NULLIF(table_comment, '') AS comment_text
    FROM information_schema.tables WHERE table_schema NOT IN ${MYSQL_SYSTEM}`,
  asText: (expression) => `CAST(${expression} AS CHAR)`,
  length: (expression) => `CHAR_LENGTH(${expression})`,
  asDouble: (expression) => `(${expression}) + 0E0`,
  random: 'RAND()',
  stddev: (expression) => `STDDEV_SAMP(${expression})`,
};

const oracle: Dialect = {
  quote: standardQuote,
  contains: (haystack, needle) => `INSTR(LOWER(${haystack}), ${needle}) > 0`,
  startsWith: (haystack, needle) => `INSTR(LOWER(${haystack}), ${needle}) = 1`,
  limit: (sql, rows) => `${sql}\nFETCH FIRST ${rows} ROWS ONLY`,
  objects: `SELECT CASE o.object_type WHEN 'TABLE' THEN 'table' ELSE 'view' END AS kind, o.owner AS schema_name, o.object_name AS table_name,
      CAST(NULL AS VARCHAR2(128)) AS column_name, CAST(NULL AS VARCHAR2(128)) AS data_type, tc.comments AS comment_text
    FROM all_objects o LEFT JOIN all_tab_comments tc ON tc.owner = o.owner AND tc.table_name = o.object_name
    WHERE o.object_type IN ('TABLE', 'VIEW', 'MATERIALIZED VIEW') AND o.owner NOT IN ${ORACLE_SYSTEM}
    UNION ALL
    SELECT 'column', c.owner, c.table_name, c.column_name, c.data_type, cc.comments
    FROM all_tab_columns c LEFT JOIN all_col_comments cc ON cc.owner = c.owner AND cc.table_name = c.table_name AND cc.column_name = c.column_name
    WHERE c.owner NOT IN ${ORACLE_SYSTEM}`,
  // NUM_ROWS is from the last statistics gathering.
  tables: () => `SELECT o.owner AS schema_name, o.object_name AS table_name, LOWER(o.object_type) AS kind, t.num_rows AS est_rows, tc.comments AS comment_text
    FROM all_objects o LEFT JOIN all_tables t ON t.owner = o.owner AND t.table_name = o.object_name
    LEFT JOIN all_tab_comments tc ON tc.owner = o.owner AND tc.table_name = o.object_name
    WHERE o.object_type IN ('TABLE', 'VIEW', 'MATERIALIZED VIEW') AND o.owner NOT IN ${ORACLE_SYSTEM}`,
  asText: (expression) => `TO_CHAR(${expression})`,
  length: (expression) => `LENGTH(${expression})`,
  asDouble: (expression) => `TO_BINARY_DOUBLE(${expression})`,
  random: 'DBMS_RANDOM.VALUE',
  stddev: (expression) => `STDDEV_SAMP(${expression})`,
};

const vertica: Dialect = {
  quote: standardQuote,
  contains: (haystack, needle) => `INSTR(LOWER(${haystack}), ${needle}) > 0`,
  startsWith: (haystack, needle) => `INSTR(LOWER(${haystack}), ${needle}) = 1`,
  limit: limitClause,
  objects:
    `SELECT 'table' AS kind, t.table_schema AS schema_name, t.table_name AS table_name, NULL::varchar AS column_name, NULL::varchar AS data_type, ` +
    `cm.comment AS comment_text
    FROM v_catalog.tables t LEFT JOIN v_catalog.comments cm ON cm.object_type = 'TABLE' AND cm.object_schema = t.table_schema AND cm.object_name = t.table_name
    UNION ALL
    SELECT 'view', v.table_schema, v.table_name, NULL, NULL, cm.comment
    FROM v_catalog.views v LEFT JOIN v_catalog.comments cm ON cm.object_type = 'VIEW' AND cm.object_schema = v.table_schema AND cm.object_name = v.table_name
    UNION ALL
    SELECT 'column', c.table_schema, c.table_name, c.column_name, c.data_type, NULL FROM v_catalog.columns c
    UNION ALL
    SELECT 'column', c.table_schema, c.table_name, c.column_name, c.data_type, NULL FROM v_catalog.view_columns c`,
  // Vertica keeps no cheap per-table row estimate in its catalogue (counts live per projection and node).
  tables: () => `SELECT t.table_schema AS schema_name, t.table_name AS table_name, 'table' AS kind, NULL::int AS est_rows, cm.comment AS comment_text
    FROM v_catalog.tables t LEFT JOIN v_catalog.comments cm ON cm.object_type = 'TABLE' AND cm.object_schema = t.table_schema AND cm.object_name = t.table_name
    UNION ALL
    SELECT v.table_schema, v.table_name, 'view', NULL, cm.comment
    FROM v_catalog.views v LEFT JOIN v_catalog.comments cm ON cm.object_type = 'VIEW' AND cm.object_schema = v.table_schema AND cm.object_name = v.table_name`,
  asText: (expression) => `(${expression})::varchar`,
  length: (expression) => `LENGTH((${expression})::varchar)`,
  asDouble: (expression) => `(${expression})::float`,
  random: 'RANDOM()',
  stddev: (expression) => `STDDEV_SAMP(${expression})`,
};

const DUCKDB_SCHEMA = `CASE WHEN database_name = current_database() THEN schema_name ELSE database_name || '.' || schema_name END`;

const duckdb: Dialect = {
  quote: standardQuote,
  contains: (haystack, needle) => `strpos(lower(${haystack}), ${needle}) > 0`,
  startsWith: (haystack, needle) => `strpos(lower(${haystack}), ${needle}) = 1`,
  limit: limitClause,
  objects:
    `SELECT 'table' AS kind, ${DUCKDB_SCHEMA} AS schema_name, table_name, NULL::VARCHAR AS column_name, NULL::VARCHAR AS data_type, comment AS ` +
    `comment_text FROM duckdb_tables() WHERE NOT internal
    UNION ALL SELECT 'view', ${DUCKDB_SCHEMA}, view_name, NULL, NULL, comment FROM duckdb_views() WHERE NOT internal
    UNION ALL SELECT 'column', ${DUCKDB_SCHEMA}, table_name, column_name, data_type, comment FROM duckdb_columns() WHERE NOT internal`,
  // estimated_size is DuckDB's own row estimate for a table; views over files have none.
  tables: () =>
    `SELECT ${DUCKDB_SCHEMA} AS schema_name, table_name, 'table' AS kind, estimated_size AS est_rows, comment AS comment_text FROM duckdb_tables() ` +
    `WHERE NOT internal
    UNION ALL SELECT ${DUCKDB_SCHEMA}, view_name, 'view', NULL, comment FROM duckdb_views() WHERE NOT internal`,
  asText: (expression) => `CAST(${expression} AS VARCHAR)`,
  length: (expression) => `length(CAST(${expression} AS VARCHAR))`,
  asDouble: (expression) => `CAST(${expression} AS DOUBLE)`,
  random: 'random()',
  stddev: (expression) => `STDDEV_SAMP(${expression})`,
};

/**
 * ClickHouse (18.16 and newer): system.tables has no row count or comment column before 20.x, so
 * row estimates come from the active parts of MergeTree tables (system.parts); old servers join
 * only with USING and ANY/ALL.
 */
const CLICKHOUSE_SYSTEM = `('system', 'INFORMATION_SCHEMA', 'information_schema')`;
const clickhouse: Dialect = {
  quote: (name) => `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``,
  contains: (haystack, needle) => `positionCaseInsensitiveUTF8(${haystack}, ${needle}) > 0`,
  startsWith: (haystack, needle) => `positionCaseInsensitiveUTF8(${haystack}, ${needle}) = 1`,
  limit: limitClause,
  objects: `SELECT if(engine LIKE '%View', 'view', 'table') AS kind, database AS schema_name, name AS table_name,
      CAST(NULL AS Nullable(String)) AS column_name, CAST(NULL AS Nullable(String)) AS data_type, CAST(NULL AS Nullable(String)) AS comment_text FROM system.tables WHERE database NOT IN ${CLICKHOUSE_SYSTEM}
    UNION ALL
    SELECT 'column', database, table, toNullable(name), toNullable(type), if(comment = '', NULL, toNullable(comment)) FROM system.columns WHERE database NOT IN ${CLICKHOUSE_SYSTEM}`,
  tables: () => `SELECT database AS schema_name, table AS table_name, if(engine LIKE '%View', 'view', 'table') AS kind,
      if(engine LIKE '%MergeTree', est_rows, NULL) AS est_rows, NULL AS comment_text
    FROM (SELECT database, name AS table, engine FROM system.tables WHERE database NOT IN ${CLICKHOUSE_SYSTEM})
    ANY LEFT JOIN (SELECT database, table, sum(rows) AS est_rows FROM system.parts WHERE active GROUP BY database, table) USING (database, table)`,
  asText: (expression) => `toString(${expression})`,
  length: (expression) => `lengthUTF8(toString(${expression}))`,
  asDouble: (expression) => `toFloat64(${expression})`,
  random: 'rand()',
  stddev: (expression) => `stddevSamp(${expression})`,
};
/**
 * ORDER BY for `SELECT value, COUNT(*) ... GROUP BY value`: the most frequent first, then by value.
 * ClickHouse before 22.x reads `ORDER BY 2` as ordering by the constant 2 (no positions), so there the expressions are named.
 */
export function byCountThenValue(engine: Engine, value: string): string {
  return engine === 'clickhouse' ? `ORDER BY count() DESC, ${value}` : 'ORDER BY 2 DESC, 1';
}

export const DIALECTS: Record<Engine, Dialect> = { sqlite, postgres, mysql, oracle, vertica, duckdb, clickhouse };
