import { writeFileSync, renameSync, rmSync, readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { nodeCrypto } from '../../node-crypto.js';
import { runQuery, toToolError } from '../database/run-query.js';
import type { CellValue, DatabaseConfig } from '../database/types.js';
import { type Expectation, type Knowledge, type Metric, metricSql, type VerifiedQuery } from './folder.js';

/**
 * Verified queries and metrics checked against the data like code (docs/guide/knowledge.md):
 * each runs read-only (the statement check, then the engine's read-only transaction) and its
 * result is compared with the `expect` recorded when a person verified it.
 */

/** Rows read to compute a digest; a result with more is "changed" rather than digested in part. */
export const CHECK_MAX_ROWS = 100_000;

export type CheckStatus = 'ok' | 'changed' | 'failed';

export interface CheckResult {
  kind: 'query' | 'metric';
  id: string;
  database?: string;
  status: CheckStatus;
  /** What was recorded (queries with expect). */
  expected?: Expectation;
  /** What the statement gives now (when it ran). */
  actual?: Expectation;
  /** The engine's error, or why it could not run. */
  error?: string;
  /** A query without `expect` yet: it ran, nothing to compare. */
  unrecorded?: boolean;
}

function cellText(value: CellValue): string {
  if (value === null || value === undefined) return '\\N';
  if (value instanceof Date) return value.toISOString();
  if (Buffer.isBuffer(value)) return `x${value.toString('hex')}`;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The digest of a result: sha256 over its column names and its rows in sorted order (row order aside, every value counts). */
export function resultDigest(columns: readonly string[], rows: readonly CellValue[][]): string {
  const lines = rows.map((row) => row.map(cellText).join('\u001f')).sort();
  const hash = nodeCrypto().createHash('sha256');
  hash.update(columns.join('\u001f'));
  for (const line of lines) hash.update(`\u001e${line}`);
  return `sha256:${hash.digest('hex').slice(0, 32)}`;
}

/** Runs one statement read-only and returns what `expect` records of it. */
export async function measure(config: DatabaseConfig, sql: string, signal: AbortSignal = new AbortController().signal): Promise<Expectation> {
  try {
    const result = await runQuery(config, sql, CHECK_MAX_ROWS, true, signal, 'query');
    if (result.more) throw new Error(`more than ${CHECK_MAX_ROWS} rows: a verified query should return a result a person can check (aggregate it)`);
    return { rows: result.rows.length, digest: resultDigest(result.columns, result.rows) };
  } catch (error) {
    throw new Error(toToolError(error, config, signal, 'query').message);
  }
}

/**
 * The database an entry runs on: the one `--db` named for the check, else the entry's alias,
 * else the only one configured.
 */
export function databaseFor(configs: readonly DatabaseConfig[], alias: string | undefined, override: DatabaseConfig | undefined): DatabaseConfig {
  if (override) return override;
  if (alias !== undefined) {
    const config = configs.find((candidate) => candidate.alias === alias);
    if (config) return config;
    if (configs.length === 1) return configs[0]!;
    throw new Error(`no database "${alias}" is configured${configs.length ? ` (configured: ${configs.map((candidate) => candidate.alias).join(', ')})` : ''}`);
  }
  if (configs.length === 1) return configs[0]!;
  if (configs.length === 0) throw new Error('no database is configured: pass --db');
  throw new Error(`it names no database and several are configured (${configs.map((candidate) => candidate.alias).join(', ')}): add "database:" to it`);
}

async function checkQuery(query: VerifiedQuery, configs: readonly DatabaseConfig[], override: DatabaseConfig | undefined): Promise<CheckResult> {
  const base = { kind: 'query' as const, id: query.id, ...(query.expect ? { expected: query.expect } : {}) };
  let config: DatabaseConfig;
  try {
    config = databaseFor(configs, query.database, override);
  } catch (error) {
    return { ...base, status: 'failed', error: (error as Error).message };
  }
  try {
    const actual = await measure(config, query.sql);
    const same = !query.expect || (query.expect.rows === actual.rows && query.expect.digest === actual.digest);
    return { ...base, database: config.alias, status: same ? 'ok' : 'changed', actual, ...(query.expect ? {} : { unrecorded: true }) };
  } catch (error) {
    return { ...base, database: config.alias, status: 'failed', error: (error as Error).message };
  }
}

async function checkMetric(metric: Metric, configs: readonly DatabaseConfig[], override: DatabaseConfig | undefined): Promise<CheckResult> {
  const base = { kind: 'metric' as const, id: metric.id };
  try {
    const config = databaseFor(configs, metric.database, override);
    try {
      return { ...base, database: config.alias, status: 'ok', actual: await measure(config, metricSql(metric)) };
    } catch (error) {
      return { ...base, database: config.alias, status: 'failed', error: (error as Error).message };
    }
  } catch (error) {
    return { ...base, status: 'failed', error: (error as Error).message };
  }
}

/** Every verified query, then every metric, in the folder's order. */
export async function checkKnowledge(knowledge: Knowledge, configs: readonly DatabaseConfig[], override?: DatabaseConfig): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const query of knowledge.queries) results.push(await checkQuery(query, configs, override));
  for (const metric of knowledge.metrics) results.push(await checkMetric(metric, configs, override));
  return results;
}

/** Writes a file whole or not at all: a temporary file beside it, then a rename. */
export function writeAtomically(path: string, text: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, text, { flag: 'wx' });
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** Records `expect` in a verified query's file, keeping its other text and comments. */
export function recordExpectation(query: VerifiedQuery, expect: Expectation): void {
  const document = parseDocument(readFileSync(query.file, 'utf8'));
  document.set('expect', document.createNode({ rows: expect.rows, digest: expect.digest }));
  writeAtomically(query.file, document.toString({ lineWidth: 0 }));
}

export function describeResult(result: CheckResult): string {
  const name = `${result.kind} ${result.id}${result.database ? ` (${result.database})` : ''}`;
  switch (result.status) {
    case 'ok':
      if (result.unrecorded) return `ok       ${name}: ${result.actual!.rows} rows; no expect recorded yet (--update records it)`;
      return `ok       ${name}${result.actual ? `: ${result.actual.rows} rows` : ''}`;
    case 'changed': {
      const expected = result.expected!;
      const actual = result.actual!;
      const what = expected.rows !== actual.rows ? `rows ${expected.rows} -> ${actual.rows}` : `same ${actual.rows} rows, different values`;
      return `changed  ${name}: ${what} (digest ${expected.digest} -> ${actual.digest})`;
    }
    case 'failed':
      return `failed   ${name}: ${result.error}`;
  }
}
