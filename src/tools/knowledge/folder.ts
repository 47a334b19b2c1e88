import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { checkDocument, keyPath } from '../../config/document-schemas.js';
import { checkKnownKeys, isMapping, parseYamlDocument } from '../../config/yaml.js';
import { ConfigError } from '../../errors.js';
import { nodeCrypto } from '../../node-crypto.js';
import type { KnowledgeIndex } from './rank.js';

/**
 * A team's knowledge folder (docs/guide/knowledge.md): plain files a person writes, reviews and
 * commits, read whole at the start of every run. Every key is known: a malformed file or an
 * unknown key is one line naming the file and the key (a ConfigError, exit 2).
 *
 *   rules.yaml      a list of {rule, tables?, database?}
 *   glossary.yaml   TERM: {definition, synonyms?, sql?, tables?}
 *   metrics.yaml    NAME: {description, database?, table, sql, filters?, time_column?, dimensions?}
 *   queries/ID.yaml {question, sql, database?, verified_by, verified_at, expect?: {rows, digest}}
 *   notes/*.md      Markdown, optional front matter {tables, database}
 */

export const DEFAULT_KNOWLEDGE_DIR = join('.quarry', 'knowledge');

export interface KnowledgeRule {
  id: string;
  rule: string;
  tables: string[];
  database?: string;
}

export interface GlossaryTerm {
  id: string;
  definition: string;
  synonyms: string[];
  sql?: string;
  tables: string[];
}

export interface Metric {
  id: string;
  description: string;
  database?: string;
  table: string;
  sql: string;
  filters: string[];
  time_column?: string;
  dimensions: string[];
}

export interface Expectation {
  rows: number;
  digest: string;
}

export interface VerifiedQuery {
  id: string;
  question: string;
  sql: string;
  database?: string;
  verified_by: string;
  verified_at: string;
  expect?: Expectation;
  /** The file it came from. */
  file: string;
}

export interface Note {
  id: string;
  text: string;
  tables: string[];
  database?: string;
  file: string;
}

export interface Knowledge {
  dir: string;
  rules: KnowledgeRule[];
  terms: GlossaryTerm[];
  metrics: Metric[];
  queries: VerifiedQuery[];
  notes: Note[];
  /** sha256 over every file read (relative name and bytes, in name order): what eval reports record. */
  hash: string;
  /** Its search index, when loaded through the cache (cache.ts); else the tool builds it on first use. */
  index?: KnowledgeIndex;
}

export const RULE_KEYS = ['rule', 'tables', 'database'] as const;
export const TERM_KEYS = ['definition', 'synonyms', 'sql', 'tables'] as const;
export const METRIC_KEYS = ['description', 'database', 'table', 'sql', 'filters', 'time_column', 'dimensions'] as const;
export const QUERY_KEYS = ['question', 'sql', 'database', 'verified_by', 'verified_at', 'expect'] as const;
const EXPECT_KEYS = ['rows', 'digest'] as const;
const NOTE_KEYS = ['tables', 'database'] as const;
/** A verified query's id, the base name of its file. */
export const QUERY_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function fail(where: string, message: string): never {
  throw new ConfigError(`${where}: ${message}`);
}

function text(value: unknown, where: string, key: string, required: boolean): string | undefined {
  if (value === undefined || value === null) {
    if (required) fail(where, `missing required key "${key}"`);
    return undefined;
  }
  // A date or number written without quotes is still the text the person wrote.
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value !== 'string') fail(where, `"${key}" must be text`);
  if (required && value.trim() === '') fail(where, `"${key}" is empty`);
  return value;
}

function required(value: unknown, where: string, key: string): string {
  return text(value, where, key, true)!;
}

function textList(value: unknown, where: string, key: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' && typeof item !== 'number')) fail(where, `"${key}" must be a list of text`);
  return value.map(String);
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function mapping(value: unknown, where: string, keys: readonly string[]): Record<string, unknown> {
  if (!isMapping(value)) fail(where, `expected a mapping with keys ${keys.join(', ')}`);
  checkKnownKeys(value, where, keys);
  return value;
}

export function parseRules(source: string, file: string): KnowledgeRule[] {
  const document = parseYamlDocument(source, file) ?? [];
  if (!Array.isArray(document)) fail(file, 'expected a list of {rule, tables?, database?}');
  checkDocument('knowledge-rules', document, file, ConfigError, ([index, ...rest]) => keyPath([`rule ${Number(index) + 1}`, ...rest]));
  return document.map((item, index) => {
    const where = `${file}: rule ${index + 1}`;
    const entry = mapping(item, where, RULE_KEYS);
    return {
      id: String(index + 1),
      rule: required(entry.rule, where, 'rule'),
      tables: textList(entry.tables, where, 'tables'),
      ...optional('database', text(entry.database, where, 'database', false)),
    };
  });
}

export function parseGlossary(source: string, file: string): GlossaryTerm[] {
  const document = parseYamlDocument(source, file) ?? {};
  if (!isMapping(document)) fail(file, 'expected a mapping TERM: {definition, synonyms?, sql?, tables?}');
  checkDocument('knowledge-glossary', document, file);
  return Object.entries(document).map(([term, value]) => {
    const where = `${file}: ${term}`;
    const entry = mapping(value, where, TERM_KEYS);
    return {
      id: term,
      definition: required(entry.definition, where, 'definition'),
      synonyms: textList(entry.synonyms, where, 'synonyms'),
      ...optional('sql', text(entry.sql, where, 'sql', false)),
      tables: textList(entry.tables, where, 'tables'),
    };
  });
}

export function parseMetrics(source: string, file: string): Metric[] {
  const document = parseYamlDocument(source, file) ?? {};
  if (!isMapping(document)) fail(file, 'expected a mapping NAME: {description, table, sql, ...}');
  checkDocument('knowledge-metrics', document, file);
  return Object.entries(document).map(([name, value]) => {
    const where = `${file}: ${name}`;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) fail(where, 'a metric name is letters, digits and _ (it becomes a column name)');
    const entry = mapping(value, where, METRIC_KEYS);
    return {
      id: name,
      description: required(entry.description, where, 'description'),
      ...optional('database', text(entry.database, where, 'database', false)),
      table: required(entry.table, where, 'table'),
      sql: required(entry.sql, where, 'sql'),
      filters: textList(entry.filters, where, 'filters'),
      ...optional('time_column', text(entry.time_column, where, 'time_column', false)),
      dimensions: textList(entry.dimensions, where, 'dimensions'),
    };
  });
}

export function parseQuery(source: string, file: string): VerifiedQuery {
  const id = basename(file).replace(/\.ya?ml$/, '');
  if (!QUERY_ID.test(id)) fail(file, 'a query id (the file name) is letters, digits, _, . and -');
  const entry = mapping(parseYamlDocument(source, file) ?? {}, file, QUERY_KEYS);
  checkDocument('knowledge-query', entry, file);
  let expect: Expectation | undefined;
  if (entry.expect !== undefined && entry.expect !== null) {
    const raw = mapping(entry.expect, `${file}: expect`, EXPECT_KEYS);
    if (!Number.isInteger(raw.rows) || (raw.rows as number) < 0) fail(`${file}: expect`, '"rows" must be a whole number');
    expect = { rows: raw.rows as number, digest: required(raw.digest, `${file}: expect`, 'digest') };
  }
  return {
    id,
    question: required(entry.question, file, 'question'),
    sql: required(entry.sql, file, 'sql'),
    ...optional('database', text(entry.database, file, 'database', false)),
    verified_by: required(entry.verified_by, file, 'verified_by'),
    verified_at: required(entry.verified_at, file, 'verified_at'),
    ...(expect ? { expect } : {}),
    file,
  };
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

export function parseNote(source: string, file: string): Note {
  const id = basename(file, '.md');
  const match = FRONT_MATTER.exec(source);
  if (!match) return { id, text: source.trim(), tables: [], file };
  const entry = mapping(parseYamlDocument(match[1]!, `${file}: front matter`) ?? {}, `${file}: front matter`, NOTE_KEYS);
  checkDocument('knowledge-note', entry, `${file}: front matter`);
  return {
    id,
    text: source.slice(match[0].length).trim(),
    tables: textList(entry.tables, `${file}: front matter`, 'tables'),
    ...optional('database', text(entry.database, `${file}: front matter`, 'database', false)),
    file,
  };
}

/** Files of a subfolder with one of the extensions, in name order (none when it does not exist). */
function filesIn(dir: string, extensions: readonly string[]): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => extensions.some((extension) => name.endsWith(extension)) && !name.startsWith('.'))
    .sort()
    .map((name) => join(dir, name));
}

const TOP_FILES = ['rules.yaml', 'glossary.yaml', 'metrics.yaml'];

/** Reads and checks the whole folder. */
export function loadKnowledge(dir: string): Knowledge {
  const stats = statSync(dir, { throwIfNoEntry: false });
  if (!stats) throw new ConfigError(`knowledge folder ${dir}: not found`);
  if (!stats.isDirectory()) throw new ConfigError(`knowledge folder ${dir}: not a folder`);
  const hash = nodeCrypto().createHash('sha256');
  const read = (file: string): string => {
    const bytes = readFileSync(file);
    hash.update(`${relative(dir, file)}\0${bytes.length}\0`);
    hash.update(bytes);
    return bytes.toString('utf8');
  };
  const present = (name: string) => existsSync(join(dir, name));
  for (const name of ['rules.yml', 'glossary.yml', 'metrics.yml']) {
    if (present(name)) throw new ConfigError(`${join(dir, name)}: the knowledge folder reads ${name.replace('.yml', '.yaml')}; rename the file`);
  }
  const [rulesFile, glossaryFile, metricsFile] = TOP_FILES.map((name) => join(dir, name)) as [string, string, string];
  const rules = present('rules.yaml') ? parseRules(read(rulesFile), rulesFile) : [];
  const terms = present('glossary.yaml') ? parseGlossary(read(glossaryFile), glossaryFile) : [];
  const metrics = present('metrics.yaml') ? parseMetrics(read(metricsFile), metricsFile) : [];
  const queries = filesIn(join(dir, 'queries'), ['.yaml', '.yml']).map((file) => parseQuery(read(file), file));
  const seen = new Map<string, string>();
  for (const query of queries) {
    const other = seen.get(query.id);
    if (other) throw new ConfigError(`${query.file}: query id "${query.id}" is also ${other}`);
    seen.set(query.id, query.file);
  }
  const notes = filesIn(join(dir, 'notes'), ['.md']).map((file) => parseNote(read(file), file));
  return { dir, rules, terms, metrics, queries, notes, hash: hash.digest('hex') };
}

export interface KnowledgeLocation {
  /** `--knowledge DIR` (must exist). */
  flag?: string | undefined;
  /** config.yaml `knowledge:` (relative to the config file's folder; must exist). */
  configured?: { value: unknown; file: string } | undefined;
  /** The working directory: `.quarry/knowledge/` under it is used when it exists. */
  workingDir: string;
  cwd: string;
  /** For commands that write the folder (add, import): a named folder that does not exist yet is created by them. */
  mayCreate?: boolean;
}

/** The folder a command uses, or undefined when none is named and the default does not exist. */
export function knowledgeDir(location: KnowledgeLocation): string | undefined {
  if (location.flag !== undefined) {
    const dir = resolve(location.cwd, location.flag);
    if (!existsSync(dir) && !location.mayCreate) throw new ConfigError(`--knowledge ${location.flag}: folder not found`);
    return dir;
  }
  const configured = location.configured;
  if (configured && configured.value !== undefined && configured.value !== null) {
    if (typeof configured.value !== 'string' || configured.value.trim() === '') throw new ConfigError(`${configured.file}: "knowledge" must be a folder path`);
    const dir = resolve(join(configured.file, '..'), configured.value);
    if (!existsSync(dir) && !location.mayCreate) throw new ConfigError(`${configured.file}: knowledge: folder not found: ${dir}`);
    return dir;
  }
  const fallback = join(location.workingDir, DEFAULT_KNOWLEDGE_DIR);
  return existsSync(fallback) ? fallback : undefined;
}

/** A metric as the SQL it stands for: its aggregate over its table, with its filters. */
export function metricSql(metric: Metric, groupBy: readonly string[] = []): string {
  const select = [...groupBy, `${metric.sql} AS ${metric.id}`].join(', ');
  const where = metric.filters.length ? `\nWHERE ${metric.filters.map((filter) => `(${filter})`).join('\n  AND ')}` : '';
  const group = groupBy.length ? `\nGROUP BY ${groupBy.join(', ')}` : '';
  return `SELECT ${select}\nFROM ${metric.table}${where}${group}`;
}
