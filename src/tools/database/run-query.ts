import { ToolError } from '../core/types.js';
import { queryInTurn } from './connections.js';
import { connectionErrorText } from './connection-errors.js';
import { ExportRefused } from './csv.js';
import { scrubSecrets } from './secrets.js';
import { checkReadOnlyStatement, ReadOnlyViolation } from './sql/statement-check.js';
import { checkNoWayOut } from './sql/way-out-check.js';
import type { DatabaseConfig, Engine, QueryResult } from './types.js';

/**
 * One statement on a configured database, for the database tools and for the tools that run a
 * query of their own (the chart tool's data, the knowledge check of verified queries): the same
 * statement check, the engine's read-only layer, the turn on the connection and the same error
 * wording. The one module of the database tool's folder that other tools call to run SQL
 * (test/core/import-cycles.test.ts: tools do not import one another's tool modules).
 */

/**
 * The statement as the driver will run it: checked in read-only mode; otherwise checked to make the
 * server reach nowhere outside the database (sql/way-out-check.ts) and trimmed of trailing semicolons.
 */
export function statementToRun(sql: string, engine: Engine, readOnly: boolean): string {
  if (readOnly) return checkReadOnlyStatement(sql, engine).sql;
  checkNoWayOut(sql, engine);
  return sql.trim().replace(/;+\s*$/, '');
}

/**
 * Runs `sql` (checked first when read-only) in its turn on the database and returns up to `limit`
 * rows; every failure is a ToolError as the database tools word it, naming `operation`.
 */
export async function runQuery(
  config: DatabaseConfig,
  sql: string,
  limit: number,
  readOnly: boolean,
  signal: AbortSignal,
  operation: string,
): Promise<QueryResult> {
  try {
    return await queryInTurn(config, statementToRun(sql, config.engine, readOnly), limit, readOnly, signal);
  } catch (error) {
    throw toToolError(error, config, signal, operation);
  }
}

/** Every failure becomes a model-readable error without passwords (driver text included). */
export function toToolError(error: unknown, config: DatabaseConfig, signal: AbortSignal, operation: string): ToolError {
  if (error instanceof ToolError) return new ToolError(scrubSecrets(error.message, config), error.kind, error.metadata);
  if (error instanceof ExportRefused) return new ToolError(`refused: ${error.message}`, 'exists');
  if (error instanceof ReadOnlyViolation) return new ToolError(error.message, 'read_only_violation');
  if (signal.aborted) return new ToolError(`cancelled: the ${config.engine} ${operation} was stopped`, 'cancelled');
  const message = connectionErrorText(error) ?? (error instanceof Error ? error.message : String(error));
  return new ToolError(`${config.engine} error (${config.alias}): ${scrubSecrets(message, config)}`, 'database_error');
}
