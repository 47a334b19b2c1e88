import { MAX_TOOL_OUTPUT_BYTES } from '../../core/sanitize.js';
import { ToolError } from '../../core/types.js';
import { formatTable } from '../format.js';
import type { CellValue, DatabaseDriver, Engine, RunOptions } from '../types.js';

/**
 * explain and the query guard (docs/guide/databases.md "Knowing the data"). explain shows the engine's plan for a
 * statement that passed the read-only check, never running it (EXPLAIN without ANALYZE). The
 * guard reads the plan's row estimates before `query` and `export_query` on the engines that
 * estimate cheaply and without writing (PostgreSQL, MySQL/MariaDB, Vertica).
 */

const EXPLAIN_PREFIX: Record<Engine, string> = {
  sqlite: 'EXPLAIN QUERY PLAN ',
  postgres: 'EXPLAIN ',
  mysql: 'EXPLAIN ',
  oracle: "EXPLAIN PLAN SET STATEMENT_ID = 'quarry' FOR ",
  vertica: 'EXPLAIN ',
  duckdb: 'EXPLAIN ',
  clickhouse: 'EXPLAIN ',
};

export const ORACLE_EXPLAIN_READ_ONLY =
  "explain is not available on Oracle in read-only mode: Oracle's EXPLAIN PLAN writes the plan into PLAN_TABLE, which a read-only transaction refuses; " +
  'check row counts with COUNT(*) on a sample or ask a DBA for the plan';

function refuseNestedExplain(sql: string): void {
  if (/^\s*(\(\s*)*EXPLAIN\b/i.test(sql))
    throw new ToolError('explain: pass the statement itself, without EXPLAIN (quarry adds it; ANALYZE is never used, so nothing runs)', 'invalid_arguments');
}

/** The plan as text: the engine's own lines, or a table for engines that answer with columns. */
export async function explainStatement(engine: Engine, driver: DatabaseDriver, sql: string, options: RunOptions): Promise<string> {
  refuseNestedExplain(sql);
  if (engine === 'oracle') {
    if (options.readOnly) throw new ToolError(`refused: ${ORACLE_EXPLAIN_READ_ONLY}`, 'read_only_violation');
    await driver.query(`${EXPLAIN_PREFIX.oracle}${sql}`, 0, options);
    const rows = await driver.catalog(`SELECT plan_table_output FROM TABLE(DBMS_XPLAN.DISPLAY(NULL, 'quarry'))`, [], options);
    return bounded(rows.map((row) => String(row[0] ?? '')).join('\n'));
  }
  const result = await driver.query(`${EXPLAIN_PREFIX[engine]}${sql}`, PLAN_ROWS, options);
  // A plan longer than PLAN_ROWS rows says so (it was cut silently at 1,000 lines).
  const more = result.more
    ? `\n(plan cut at its first ${PLAN_ROWS.toLocaleString('en-US')} rows: explain a smaller part of the statement to see the rest)`
    : '';
  if (engine === 'sqlite') return bounded(sqlitePlanTree(result.rows)) + more;
  if (result.columns.length === 1 || engine === 'duckdb') {
    const text = result.rows.map((row) => row.map((value) => String(value ?? '')).join('\n')).join('\n');
    return bounded(`${engine === 'duckdb' ? text.replace(/^physical_plan\n/, '') : text}`) + more;
  }
  return formatTable(result.columns, result.rows).text + more;
}

const PLAN_ROWS = 1000;

/** SQLite's EXPLAIN QUERY PLAN rows (id, parent, notused, detail) as an indented tree. */
function sqlitePlanTree(rows: CellValue[][]): string {
  const depth = new Map<string, number>();
  const lines = ['QUERY PLAN'];
  for (const [id, parent, , detail] of rows) {
    const level = (depth.get(String(parent)) ?? 0) + 1;
    depth.set(String(id), level);
    lines.push(`${'  '.repeat(level - 1)}└─ ${String(detail)}`);
  }
  return lines.join('\n');
}

function bounded(text: string): string {
  const budget = MAX_TOOL_OUTPUT_BYTES - 512;
  if (Buffer.byteLength(text, 'utf8') <= budget) return text;
  const cut = Buffer.from(text, 'utf8')
    .subarray(0, budget)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return `${cut.slice(0, cut.lastIndexOf('\n'))}\n(plan cut at ${Math.round(budget / 1024)} KiB: explain a smaller part of the statement to see the rest)`;
}

export interface RowEstimate {
  rows: number;
  /** The table whose scan the estimate belongs to, when the plan names one. */
  table: string | null;
}

/** Engines whose plans give the guard a row estimate without running or writing anything. */
export const GUARDED_ENGINES: readonly Engine[] = ['postgres', 'mysql', 'vertica'];

/**
 * The largest number of rows the plan expects one table access to read, and its table. PostgreSQL:
 * each scan node's Plan Rows, and for a sequential scan the table's own estimate (a filter makes Plan Rows
 * small while every row is still read); MySQL/MariaDB: the rows each table access examines;
 * Vertica: the rows of each storage access.
 */
/** PostgreSQL plan nodes that read all of their input before returning a row. */
const BLOCKING = new Set(['Sort', 'Aggregate', 'Hash', 'WindowAgg', 'SetOp', 'Materialize']);

export async function estimateRows(engine: Engine, driver: DatabaseDriver, sql: string, options: RunOptions): Promise<RowEstimate | null> {
  let best: RowEstimate | null = null;
  const consider = (rows: number, table: string | null) => {
    if (Number.isFinite(rows) && (!best || rows > best.rows)) best = { rows: Math.round(rows), table };
  };
  switch (engine) {
    case 'postgres': {
      // VERBOSE: only then does each scan name its schema (a bare name may be another table, or none, on the search path).
      const [[plan] = []] = await driver.catalog(`EXPLAIN (FORMAT JSON, VERBOSE) ${sql}`, [], options);
      const parsed = typeof plan === 'string' ? JSON.parse(plan) : plan;
      const seqScans: [string, string, string][] = [];
      const relations = new Map<string, [string, string]>();
      const joins: PgJoin[] = [];
      // The share of each scan that runs: under a Limit, the Limit's cost over its input's (PostgreSQL's own
      // assumption), so SELECT * FROM big LIMIT 10 is not judged by every row of big; below a node that
      // reads all its input before its first row (a sort, an aggregate, a hash), the scan is whole again.
      const shares = new Map<string, number>();
      const walk = (node: Record<string, unknown>, share = 1) => {
        const schema = typeof node.Schema === 'string' ? node.Schema : '';
        const relation = typeof node['Relation Name'] === 'string' ? `${schema && schema !== 'public' ? `${schema}.` : ''}${node['Relation Name']}` : null;
        // Only table accesses: a join's own estimate is not rows read, and on tables never
        // analysed it can be wildly high (a 200,000-row export estimated at a billion).
        if (relation) consider(Number(node['Plan Rows']) * share, relation);
        if (relation) relations.set(relation, [schema, String(node['Relation Name'])]);
        if (JOINS.has(String(node['Node Type']))) joins.push({ node, share });
        if (node['Node Type'] === 'Seq Scan' && relation) {
          seqScans.push([relation, schema, String(node['Relation Name'])]);
          shares.set(relation, Math.max(shares.get(relation) ?? 0, share));
        }
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) {
          const part = node['Node Type'] === 'Limit' ? Math.min(1, Number(node['Total Cost']) / Number(child['Total Cost'])) : 1;
          walk(child, BLOCKING.has(String(node['Node Type'])) ? 1 : share * (Number.isFinite(part) ? part : 1));
        }
      };
      for (const entry of Array.isArray(parsed) ? parsed : [parsed]) if (entry?.Plan) walk(entry.Plan);
      if (seqScans.length) {
        // pg sends each array as text[]; the schema-qualified name finds the very table scanned.
        const rows = await driver.catalog(
          `SELECT s.shown, c.reltuples::bigint FROM unnest(?::text[], ?::text[], ?::text[]) AS s(shown, nsp, rel) JOIN pg_class c ON c.oid = ` +
            `to_regclass(format('%I.%I', s.nsp, s.rel)) WHERE c.reltuples >= 0`,
          [seqScans.map((scan) => scan[0]), seqScans.map((scan) => scan[1]), seqScans.map((scan) => scan[2])],
          options,
        );
        for (const [name, count] of rows) consider(Number(count) * (shares.get(String(name)) ?? 1), String(name));
      }
      if (joins.length) {
        const names = [...relations.keys()];
        const rows = await driver.catalog(
          `SELECT s.shown, pg_stat_get_last_analyze_time(c.oid) IS NOT NULL OR pg_stat_get_last_autoanalyze_time(c.oid) IS NOT NULL FROM ` +
            `unnest(?::text[], ?::text[], ?::text[]) AS s(shown, nsp, rel) JOIN pg_class c ON c.oid = to_regclass(format('%I.%I', s.nsp, s.rel))`,
          [names, names.map((name) => relations.get(name)![0]), names.map((name) => relations.get(name)![1])],
          options,
        );
        const analysed = new Set(rows.filter((row) => row[1] === true).map((row) => String(row[0])));
        for (const join of joins) {
          const estimate = pgJoinEstimate(join.node, analysed);
          if (estimate) consider(estimate.rows * join.share, estimate.what);
        }
      }
      return best;
    }
    case 'mysql': {
      const [[plan] = []] = await driver.catalog(`EXPLAIN FORMAT=JSON ${sql}`, [], options);
      const walk = (node: unknown) => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (!node || typeof node !== 'object') return;
        const record = node as Record<string, unknown>;
        if (typeof record.table_name === 'string') consider(Number(record.rows_examined_per_scan ?? record.rows ?? NaN), record.table_name);
        // A join's output: the product of each table's rows per scan and filtered share (InnoDB
        // keeps statistics always, so these are estimates, not guesses); a cross join is the full product.
        if (Array.isArray(record.nested_loop)) {
          const tables = (record.nested_loop as unknown[]).map(firstMysqlTable).filter((table) => table !== null);
          if (tables.length > 1) {
            const rows = tables.reduce(
              (product, table) => product * Number(table.rows_examined_per_scan ?? table.rows ?? 1) * (Number(table.filtered ?? 100) / 100),
              1,
            );
            consider(rows, `the join of ${tables.map((table) => String(table.table_name)).join(', ')}`);
          }
        }
        for (const value of Object.values(record)) walk(value);
      };
      const parsed = JSON.parse(String(plan)) as unknown;
      walk(parsed);
      return mysqlLimitShare(sql, parsed, best);
    }
    case 'vertica': {
      const rows = await driver.catalog(`EXPLAIN ${sql}`, [], options);
      const text = rows.map((row) => String(row[0] ?? '')).join('\n');
      for (const match of text.matchAll(/STORAGE ACCESS for (\S+) \[Cost: [^,\]]+, Rows: ([\d.]+)([KMBT]?)/g)) {
        const scale = { '': 1, K: 1e3, M: 1e6, B: 1e9, T: 1e12 }[match[3] as '' | 'K' | 'M' | 'B' | 'T'];
        consider(Number(match[2]) * scale, match[1]!);
      }
      return best;
    }
    default:
      return null;
  }
}

const JOINS = new Set(['Nested Loop', 'Hash Join', 'Merge Join']);

interface PgJoin {
  node: Record<string, unknown>;
  share: number;
}

type PgNode = Record<string, unknown>;

function pgChildren(node: PgNode): PgNode[] {
  return (node.Plans as PgNode[] | undefined) ?? [];
}

/** The tables a plan node reads, as the walk names them. */
function pgRelations(node: PgNode): string[] {
  const own =
    typeof node['Relation Name'] === 'string'
      ? [`${typeof node.Schema === 'string' && node.Schema !== 'public' ? `${node.Schema}.` : ''}${node['Relation Name']}`]
      : [];
  return [...own, ...pgChildren(node).flatMap(pgRelations)];
}

/** Whether any node of a subtree has one of these keys (a filter, an index condition). */
function pgHasAny(node: PgNode, keys: readonly string[]): boolean {
  return keys.some((key) => key in node) || pgChildren(node).some((child) => pgHasAny(child, keys));
}

/**
 * The rows a join outputs, when the estimate can be trusted. With every table under it analysed,
 * the planner's own estimate. A cartesian product (a nested loop with no join condition, its
 * inner side not looked up by the outer row) outputs the product of its sides whatever the
 * statistics: each side counts with its estimate when its tables are analysed or it reads them
 * whole (a table's size is known without statistics), else as 1 (a filter on a never-analysed
 * table is a guess, which refused a 200,000-row cross join at a billion).
 */
function pgJoinEstimate(node: PgNode, analysed: ReadonlySet<string>): { rows: number; what: string } | null {
  const tables = [...new Set(pgRelations(node))];
  const names = tables.join(', ');
  const [outer, inner] = pgChildren(node);
  if (node['Node Type'] === 'Nested Loop' && outer && inner && !('Join Filter' in node) && !pgHasAny(inner, ['Index Cond', 'Recheck Cond', 'TID Cond'])) {
    const side = (child: PgNode): number =>
      pgRelations(child).every((table) => analysed.has(table)) || !pgHasAny(child, ['Filter', 'Index Cond', 'Recheck Cond']) ? Number(child['Plan Rows']) : 1;
    return { rows: side(outer) * side(inner), what: `the cartesian product of ${names}` };
  }
  if (tables.length > 0 && tables.every((table) => analysed.has(table))) return { rows: Number(node['Plan Rows']), what: `the join of ${names}` };
  return null;
}

/** The first table access inside one step of a MySQL/MariaDB nested loop (MariaDB wraps it in block-nl-join and the like). */
function firstMysqlTable(node: unknown): Record<string, unknown> | null {
  if (!node || typeof node !== 'object') return null;
  const record = node as Record<string, unknown>;
  if (typeof record.table_name === 'string') return record;
  for (const value of Object.values(record)) {
    const found = Array.isArray(value) ? null : firstMysqlTable(value);
    if (found) return found;
  }
  return null;
}

/** A LIMIT at the end of the statement: the rows it needs (offset included), or null. */
const TRAILING_LIMIT = /\bLIMIT\s+(\d+)(?:\s*(?:,|OFFSET)\s*(\d+))?\s*$/i;

/**
 * MySQL/MariaDB: a one-table plan with no sort, temporary table or grouping stops reading once
 * its LIMIT is met, so it reads about LIMIT / filtered share of rows, not the table's estimate
 * (`SELECT * FROM big LIMIT 10` was judged at every row of big). Anything else keeps the full estimate.
 */
function mysqlLimitShare(sql: string, plan: unknown, best: RowEstimate | null): RowEstimate | null {
  const limit = TRAILING_LIMIT.exec(sql.trim().replace(/;+$/, ''));
  if (!best || !limit) return best;
  const text = JSON.stringify(plan);
  const tables = text.match(/"table_name"/g)?.length ?? 0;
  if (tables !== 1 || /filesort|temporary_table|group_by|grouping_operation|duplicates_removal|window_functions/i.test(text)) return best;
  // "LIMIT a, b" is an offset and a count; "LIMIT b OFFSET a" the other way round.
  const needed = limit[2] === undefined ? Number(limit[1]) : Number(limit[1]) + Number(limit[2]);
  const filtered = Number(/"filtered"\s*:\s*([\d.]+)/.exec(text)?.[1] ?? 100);
  const reads = Math.ceil((needed * 100) / Math.max(filtered, 0.01));
  return reads < best.rows ? { rows: reads, table: best.table } : best;
}
