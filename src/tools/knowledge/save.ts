import { existsSync, linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { UsageError } from '../../errors.js';
import type { DatabaseConfig } from '../database/types.js';
import { measure } from './check.js';
import { QUERY_ID } from './folder.js';

/**
 * Saving a verified query (docs/guide/knowledge.md): only a person does it, through
 * `quarry knowledge add` or the REPL's `/verify` after answering y. The SQL runs read-only first
 * and its result is recorded as `expect`; the file is created whole, never over another.
 */

export interface NewVerifiedQuery {
  question: string;
  sql: string;
  config: DatabaseConfig;
  /** Written as `database:` (the alias the check finds it by); left out when undefined. */
  database?: string;
  id?: string;
  verifiedBy?: string;
}

/** An id from the question's words: lower case, _ between, at most 60 characters. */
export function idFromQuestion(question: string): string {
  const slug = question
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60)
    .replace(/_+$/, '');
  return slug || 'query';
}

export function defaultVerifier(env: NodeJS.ProcessEnv = process.env): string {
  try {
    return env.QUARRY_USER || env.USER || userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** Measures the query and writes queries/ID.yaml; returns the file written. */
export async function saveVerifiedQuery(dir: string, entry: NewVerifiedQuery): Promise<{ file: string; id: string; rows: number }> {
  if (!entry.question.trim()) throw new UsageError('the question is empty');
  if (!entry.sql.trim()) throw new UsageError('the SQL is empty');
  const id = entry.id ?? idFromQuestion(entry.question);
  if (!QUERY_ID.test(id)) throw new UsageError(`--id ${id}: an id is letters, digits, _, . and - (it is the file name)`);
  const folder = join(dir, 'queries');
  const file = join(folder, `${id}.yaml`);
  if (existsSync(file) || existsSync(join(folder, `${id}.yml`))) throw new UsageError(`${file} already exists: choose another --id (nothing was written)`);
  // Before anything is written: SQL that does not run read-only is never saved.
  let expect;
  try {
    expect = await measure(entry.config, entry.sql);
  } catch (error) {
    throw new UsageError(`the SQL did not run read-only on ${entry.config.alias}, nothing was saved: ${(error as Error).message}`);
  }
  const document = {
    question: entry.question.trim(),
    sql: `${entry.sql.trim()}\n`,
    ...(entry.database ? { database: entry.database } : {}),
    verified_by: entry.verifiedBy ?? defaultVerifier(),
    verified_at: new Date().toISOString().slice(0, 10),
    expect,
  };
  mkdirSync(folder, { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, stringify(document, { lineWidth: 0 }), { flag: 'wx' });
    // link fails when the name appeared meanwhile: another file is never replaced.
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new UsageError(`${file} already exists: choose another --id (nothing was written)`);
    throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
  return { file, id, rows: expect.rows };
}
