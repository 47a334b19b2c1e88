import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { checkDocument, keyPath } from '../config/document-schemas.js';
import { UsageError } from '../errors.js';
import { parseCsvRecords } from '../tools/database/csv.js';
import type { CompareRule } from './compare.js';

/**
 * Question suites for `quarry eval` (docs/guide/eval.md): BIRD / BIRD Mini-Dev JSON, Spider
 * JSON, and quarry's own YAML for a team's questions. All become one shape, EvalQuestion.
 * A malformed suite is a usage error naming the entry and the field.
 */

export type SuiteFormat = 'bird' | 'spider' | 'quarry';

/** What a question's answer is checked against. */
export type Expected = { kind: 'sql'; sql: string } | { kind: 'rows'; rows: unknown[][] } | { kind: 'csv'; rows: string[][] };

export interface EvalQuestion {
  /** Unique within the suite: BIRD's question_id, Spider's position, or the YAML id. */
  id: string;
  question: string;
  /** BIRD's external knowledge, given to the model with the question. */
  evidence?: string;
  /** BIRD/Spider: the database id (DIR/<db_id>/<db_id>.sqlite); YAML: a configured alias. */
  database: string;
  expected: Expected;
  /** BIRD's difficulty, or the YAML tags: the report's groups. */
  difficulty?: string;
  tags: string[];
  /** quarry YAML only: the per-question comparison (order_matters) and float tolerance. */
  orderMatters?: boolean;
  tolerance?: number;
  /** The answers ask_user gets, in order (docs/guide/eval.md); after them, or without them, no one can be asked. */
  clarifications?: string[];
}

export interface Suite {
  path: string;
  format: SuiteFormat;
  /** The rule the suite's own scoring uses (BIRD/Spider: set; quarry YAML: multiset or ordered per question). */
  defaultRule: CompareRule;
  questions: EvalQuestion[];
  /** sha256 of the file, so two reports can tell whether they ran the same suite. */
  sha256: string;
}

function fail(path: string, where: string, message: string): never {
  throw new UsageError(`suite ${path}: ${where}: ${message}`);
}

function entryName(index: number, raw: Record<string, unknown>, idKey: string): string {
  const id = raw[idKey];
  return id === undefined || id === null ? `entry ${index + 1}` : `entry ${index + 1} (${idKey} ${String(id)})`;
}

/**
 * A BIRD/Spider db_id names DIR/<db_id>/<db_id>.sqlite and becomes a database alias: a plain
 * name only, so that "../x" cannot open a database outside --db-dir and "=" or ":" cannot turn
 * the alias into another target.
 */
function requireDbId(path: string, where: string, raw: Record<string, unknown>): string {
  const id = requireString(path, where, raw, 'db_id');
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(id) || id.includes('..')) {
    fail(path, where, `field "db_id" must be a plain name (letters, digits, _ . -), got ${JSON.stringify(id)}`);
  }
  return id;
}

function requireString(path: string, where: string, raw: Record<string, unknown>, key: string): string {
  const value = raw[key];
  if (value === undefined || value === null) fail(path, where, `missing field "${key}"`);
  if (typeof value !== 'string' || value.trim() === '') fail(path, where, `field "${key}" must be a non-empty string`);
  return value;
}

function optionalString(path: string, where: string, raw: Record<string, unknown>, key: string): string | undefined {
  const value = raw[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') fail(path, where, `field "${key}" must be a string`);
  return value;
}

function asRecord(path: string, where: string, value: unknown): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) fail(path, where, "expected an object with the question's fields");
  return value as Record<string, unknown>;
}

/** Which JSON format: BIRD entries carry "SQL", Spider entries "query". */
function detectJsonFormat(path: string, entries: unknown[]): SuiteFormat {
  const first = asRecord(path, 'entry 1', entries[0]);
  if ('SQL' in first || 'question_id' in first || 'evidence' in first) return 'bird';
  if ('query' in first) return 'spider';
  fail(path, 'entry 1', 'neither a BIRD entry (question_id, db_id, question, evidence, SQL) nor a Spider entry (db_id, question, query)');
}

function birdQuestions(path: string, entries: unknown[]): EvalQuestion[] {
  return entries.map((value, index) => {
    const raw = asRecord(path, `entry ${index + 1}`, value);
    const where = entryName(index, raw, 'question_id');
    const rawId = raw.question_id;
    if (rawId !== undefined && typeof rawId !== 'number' && typeof rawId !== 'string') fail(path, where, 'field "question_id" must be a number or a string');
    const evidence = optionalString(path, where, raw, 'evidence');
    const difficulty = optionalString(path, where, raw, 'difficulty');
    return {
      id: rawId === undefined ? String(index) : String(rawId),
      question: requireString(path, where, raw, 'question'),
      ...(evidence ? { evidence } : {}),
      database: requireDbId(path, where, raw),
      expected: { kind: 'sql', sql: requireString(path, where, raw, 'SQL') },
      ...(difficulty ? { difficulty } : {}),
      tags: [],
      ...clarificationsOf(path, where, raw),
    };
  });
}

function spiderQuestions(path: string, entries: unknown[]): EvalQuestion[] {
  return entries.map((value, index) => {
    const raw = asRecord(path, `entry ${index + 1}`, value);
    const where = `entry ${index + 1}`;
    const difficulty = optionalString(path, where, raw, 'difficulty') ?? optionalString(path, where, raw, 'hardness');
    return {
      id: String(index),
      question: requireString(path, where, raw, 'question'),
      database: requireDbId(path, where, raw),
      expected: { kind: 'sql', sql: requireString(path, where, raw, 'query') },
      ...(difficulty ? { difficulty } : {}),
      tags: [],
    };
  });
}

/** expected_csv's records (RFC 4180; the CSV reader of the export previews, with a last line that may lack its newline). */
export function parseCsv(text: string): string[][] {
  return parseCsvRecords(/[\r\n]$/.test(text) ? text : `${text}\n`, Number.POSITIVE_INFINITY);
}

const YAML_KEYS = [
  'id',
  'question',
  'evidence',
  'database',
  'expected_sql',
  'expected_rows',
  'expected_csv',
  'order_matters',
  'tolerance',
  'tags',
  'difficulty',
  'clarifications',
];

/** `clarifications:` one answer, or a list of them (given to ask_user in order). */
function clarificationsOf(path: string, where: string, raw: Record<string, unknown>): { clarifications?: string[] } {
  const value = raw.clarifications;
  if (value === undefined || value === null) return {};
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.some((item) => typeof item !== 'string' || item.trim() === ''))
    fail(path, where, 'clarifications must be an answer (a string) or a list of answers');
  return { clarifications: list as string[] };
}

/** A key path in a YAML suite as its errors name it: `question 3: tags[0]`. */
function questionPath(segments: readonly string[]): string {
  const [first, ...rest] = segments[0] === 'questions' ? segments.slice(1) : segments;
  if (first === undefined) return keyPath(segments);
  const inner = keyPath(rest);
  return `question ${Number(first) + 1}${inner ? `: ${inner}` : ''}`;
}

function quarryQuestions(path: string, raw: unknown): EvalQuestion[] {
  const list = Array.isArray(raw) ? raw : (raw as { questions?: unknown } | null)?.questions;
  if (!Array.isArray(list) || list.length === 0) fail(path, 'top level', 'expected a list of questions (or {questions: [...]})');
  checkDocument('eval-suite', raw, `suite ${path}`, UsageError, questionPath);
  const seen = new Set<string>();
  return list.map((value, index) => {
    const entry = asRecord(path, `question ${index + 1}`, value);
    const where = entry.id !== undefined ? `question ${index + 1} (id ${String(entry.id)})` : `question ${index + 1}`;
    for (const key of Object.keys(entry)) if (!YAML_KEYS.includes(key)) fail(path, where, `unknown field "${key}"; allowed: ${YAML_KEYS.join(', ')}`);
    const id = entry.id === undefined ? String(index + 1) : String(entry.id);
    if (seen.has(id)) fail(path, where, `id "${id}" is used twice`);
    seen.add(id);
    const given = ['expected_sql', 'expected_rows', 'expected_csv'].filter((key) => entry[key] !== undefined);
    if (given.length !== 1)
      fail(path, where, `needs exactly one of expected_sql, expected_rows, expected_csv (has ${given.length ? given.join(', ') : 'none'})`);
    let expected: Expected;
    if (entry.expected_sql !== undefined) expected = { kind: 'sql', sql: requireString(path, where, entry, 'expected_sql') };
    else if (entry.expected_rows !== undefined) {
      const rows = entry.expected_rows;
      if (!Array.isArray(rows)) fail(path, where, 'expected_rows must be a list of rows (each a list of values, or a mapping of column: value)');
      expected = {
        kind: 'rows',
        rows: rows.map((row, rowIndex) => {
          if (Array.isArray(row)) return row;
          if (row && typeof row === 'object') return Object.values(row as Record<string, unknown>);
          return fail(path, where, `expected_rows[${rowIndex}] must be a list or a mapping`);
        }),
      };
    } else {
      const text = requireString(path, where, entry, 'expected_csv');
      // Text with a line break is the CSV itself; anything else names a CSV file (relative to the
      // suite), commas included ("a,b.csv"). The first line is the header.
      const csvText = /[\r\n]/.test(text) ? text : readSuiteFile(resolve(dirname(path), text), `${where}: expected_csv`);
      const rows = parseCsv(csvText);
      expected = { kind: 'csv', rows: rows.slice(1) };
    }
    const tolerance = entry.tolerance;
    if (tolerance !== undefined && (typeof tolerance !== 'number' || !(tolerance >= 0))) fail(path, where, 'tolerance must be a number ≥ 0');
    const orderMatters = entry.order_matters;
    if (orderMatters !== undefined && typeof orderMatters !== 'boolean') fail(path, where, 'order_matters must be true or false');
    const tags = entry.tags ?? [];
    if (!Array.isArray(tags) || tags.some((tag) => typeof tag !== 'string')) fail(path, where, 'tags must be a list of strings');
    const evidence = optionalString(path, where, entry, 'evidence');
    const difficulty = optionalString(path, where, entry, 'difficulty');
    return {
      id,
      question: requireString(path, where, entry, 'question'),
      ...(evidence ? { evidence } : {}),
      database: requireString(path, where, entry, 'database'),
      expected,
      ...(difficulty ? { difficulty } : {}),
      tags: tags as string[],
      ...(orderMatters !== undefined ? { orderMatters } : {}),
      ...(tolerance !== undefined ? { tolerance: tolerance as number } : {}),
      ...clarificationsOf(path, where, entry),
    };
  });
}

function readSuiteFile(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'no such file' : err.code === 'EISDIR' ? 'is a directory' : err.message;
    throw new UsageError(`${what} ${path}: ${why}`);
  }
}

export function loadSuite(file: string, cwd: string): Suite {
  const path = resolve(cwd, file);
  const text = readSuiteFile(path, 'suite');
  const sha256 = createHash('sha256').update(text).digest('hex');
  const yaml = ['.yaml', '.yml'].includes(extname(path).toLowerCase());
  let raw: unknown;
  try {
    raw = yaml ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    fail(path, yaml ? 'YAML' : 'JSON', (error as Error).message.split('\n')[0]!);
  }
  let questions: EvalQuestion[];
  let format: SuiteFormat;
  if (yaml) {
    format = 'quarry';
    questions = quarryQuestions(path, raw);
  } else {
    if (!Array.isArray(raw) || raw.length === 0) fail(path, 'top level', 'expected a non-empty JSON list of questions (BIRD or Spider format)');
    format = detectJsonFormat(path, raw);
    questions = format === 'bird' ? birdQuestions(path, raw) : spiderQuestions(path, raw);
  }
  const ids = new Set<string>();
  for (const question of questions) {
    if (ids.has(question.id)) fail(path, `question ${question.id}`, 'the id is used twice');
    ids.add(question.id);
  }
  return { path, format, defaultRule: format === 'quarry' ? 'multiset' : 'set', questions, sha256 };
}
