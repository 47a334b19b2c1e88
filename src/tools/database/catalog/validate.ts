import { success, ToolError, type ToolResult } from '../../core/types.js';
import { checkDuckdbFileAccess } from '../sql/duckdb-check.js';
import { checkReadOnlyStatement, ReadOnlyViolation } from '../sql/statement-check.js';
import type { DatabaseConfig, DatabaseDriver, Engine, QueryGuard, RunOptions } from '../types.js';
import { estimateRows, GUARDED_ENGINES, type RowEstimate } from './explain.js';
import { withNameSuggestions } from './names.js';

/**
 * validate {sql} (docs/guide/databases.md "Knowing the data"): checks a statement without running it, in one
 * answer: the read-only statement check's verdict, the engine's own parse and name resolution
 * (an EXPLAIN without ANALYZE, which also gives the query guard its estimate; SQLite prepares
 * EXPLAIN QUERY PLAN; Oracle, whose EXPLAIN PLAN writes PLAN_TABLE, parses the statement as
 * `SELECT * FROM (…) WHERE 1 = 0`), unknown names with suggestions (names.ts) and what the query
 * guard would decide. A statement found wrong is an error result that says every check made.
 */

const TITLES: Record<Engine, string> = {
  sqlite: 'SQLite',
  postgres: 'PostgreSQL',
  mysql: 'MySQL/MariaDB',
  oracle: 'Oracle',
  vertica: 'Vertica',
  duckdb: 'DuckDB',
  clickhouse: 'ClickHouse',
};

/** Statements the engine can check without running them (EXPLAIN, or Oracle's wrapped SELECT). */
const EXPLAINABLE = /^\s*(\(\s*)*(SELECT|WITH|VALUES|TABLE|FROM|INSERT|UPDATE|DELETE|MERGE|REPLACE)\b/i;
const SELECTS = /^\s*(\(\s*)*(SELECT|WITH)\b/i;

export interface ValidateInput {
  engine: Engine;
  config: DatabaseConfig;
  driver: DatabaseDriver;
  /** The statement as the model wrote it. */
  sql: string;
  guard: QueryGuard | null;
  options: RunOptions;
}

export async function validateStatement(input: ValidateInput): Promise<ToolResult> {
  const { engine, config, driver, options, guard } = input;
  const title = TITLES[engine];
  const lines: string[] = [];
  let sql: string;
  try {
    if (options.readOnly) {
      sql = checkReadOnlyStatement(input.sql, engine).sql;
      if (engine === 'duckdb') checkDuckdbFileAccess(sql, config);
      lines.push('statement check: passed (one read-only statement)');
    } else {
      sql = input.sql.trim().replace(/;+\s*$/, '');
      lines.push('statement check: not applied (database: mutations, where any statement runs)');
    }
  } catch (error) {
    if (!(error instanceof ReadOnlyViolation || error instanceof ToolError)) throw error;
    throw invalid(
      'the read-only statement check refuses it',
      [`statement check: ${error.message}`, `engine: not asked (the statement would be refused before it reached ${title})`],
      error instanceof ReadOnlyViolation ? 'read_only_violation' : 'refused',
    );
  }
  // SQLite prepares any statement under EXPLAIN QUERY PLAN.
  if (engine !== 'sqlite' && (!EXPLAINABLE.test(sql) || (engine === 'oracle' && !SELECTS.test(sql)))) {
    lines.push(`engine: not checked: ${title} cannot check this kind of statement without running it; only the statement check applies`);
    return success(verdict('valid as far as checked; nothing was run', lines), { valid: true, engineChecked: false });
  }
  let estimate: RowEstimate | null = null;
  try {
    const how = await engineCheck(engine, driver, sql, options, (found) => {
      estimate = found;
    });
    lines.push(`engine: ${title} parsed the statement and resolved every name (${how}; nothing was run)`);
  } catch (error) {
    if (options.signal.aborted || error instanceof ToolError) throw error;
    const explained = await withNameSuggestions(engine, driver, error, sql, options);
    const message = explained instanceof Error ? explained.message : String(explained);
    throw invalid(message, [lines[0]!, `engine: ${title} rejected it (${ENGINE_CHECK[engine]}; nothing was run)`], 'database_error');
  }
  const judged = judge(engine, estimate, guard);
  lines.push(judged.line);
  return success(verdict(judged.refused ? `valid, but ${judged.refused}; nothing was run` : 'valid; nothing was run', lines), {
    valid: true,
    engineChecked: true,
    ...(estimate ? { estimatedRows: (estimate as RowEstimate).rows } : {}),
  });
}

const ENGINE_CHECK: Record<Engine, string> = {
  sqlite: 'prepared as EXPLAIN QUERY PLAN',
  postgres: 'EXPLAIN without ANALYZE',
  mysql: 'EXPLAIN without ANALYZE',
  vertica: 'EXPLAIN',
  duckdb: 'EXPLAIN without ANALYZE',
  oracle: 'parsed as SELECT * FROM (…) WHERE 1 = 0, which returns no rows; EXPLAIN PLAN would write PLAN_TABLE',
  clickhouse: 'parsed and its names resolved as SELECT * FROM (…) LIMIT 0, which reads no rows (older servers have no EXPLAIN)',
};

/** The engine's own check; on the guarded engines the same EXPLAIN gives the row estimate. */
async function engineCheck(
  engine: Engine,
  driver: DatabaseDriver,
  sql: string,
  options: RunOptions,
  onEstimate: (estimate: RowEstimate | null) => void,
): Promise<string> {
  switch (engine) {
    case 'postgres':
    case 'mysql':
    case 'vertica':
      onEstimate(await estimateRows(engine, driver, sql, options));
      break;
    case 'sqlite':
    case 'duckdb':
      await driver.query(`${engine === 'sqlite' ? 'EXPLAIN QUERY PLAN' : 'EXPLAIN'} ${sql}`, 1, options);
      break;
    case 'oracle':
      // The newline ends a trailing -- comment of the statement.
      await driver.query(`SELECT * FROM (${sql}\n) WHERE 1 = 0`, 1, options);
      break;
    case 'clickhouse':
      await driver.query(`SELECT * FROM (${sql}\n) LIMIT 0`, 1, options);
      break;
  }
  return ENGINE_CHECK[engine];
}

function judge(engine: Engine, estimate: RowEstimate | null, guard: QueryGuard | null): { line: string; refused: string | null } {
  if (!GUARDED_ENGINES.includes(engine)) return { line: `query guard: not applied on ${TITLES[engine]} (no cheap row estimate)`, refused: null };
  if (!estimate) return { line: 'query guard: the plan names no table access to estimate', refused: null };
  const rows = `the plan estimates ${estimate.rows.toLocaleString('en-US')} rows read${estimate.table ? ` from ${estimate.table}` : ''}`;
  if (!guard) return { line: `query guard: off in this profile (${rows})`, refused: null };
  const limit = guard.max_estimated_rows.toLocaleString('en-US');
  if (estimate.rows <= guard.max_estimated_rows) return { line: `query guard: ${rows}, within this profile's limit of ${limit}`, refused: null };
  const what = guard.action === 'ask' ? "query and export_query would ask for the user's approval" : 'query and export_query would be refused';
  return { line: `query guard: ${rows}, over this profile's limit of ${limit}: ${what}`, refused: `${what} by the query guard` };
}

function verdict(head: string, lines: string[]): string {
  return `${head}\n${lines.map((line) => `- ${line}`).join('\n')}`;
}

function invalid(reason: string, lines: string[], kind: 'read_only_violation' | 'refused' | 'database_error'): ToolError {
  return new ToolError(verdict(`not valid: ${reason}`, lines), kind, { valid: false });
}
