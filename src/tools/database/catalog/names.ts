import { ToolError } from '../../core/types.js';
import { tokenize } from '../sql/lexer.js';
import type { DatabaseDriver, Engine, RunOptions } from '../types.js';
import { DIALECTS } from './dialects.js';

/**
 * Name suggestions (docs/guide/databases.md "Knowing the data"): when an engine rejects a statement for a table,
 * column, schema or function that does not exist, or describe, sample or profile is given a table
 * that does not exist, the error names at most three names from the catalogue that look like what
 * was meant. `suggestNames` is the pure ranking any operation can call; `unknownNameIn` reads an
 * engine's error; `withNameSuggestions` does both and reads the catalogue (one bounded statement).
 */

export type NameKind = 'table' | 'column' | 'schema' | 'function';

/** What exists, as the catalogue reads it. Schemas are null where the engine has none worth naming. */
export interface NameCatalog {
  tables: readonly { schema: string | null; name: string }[];
  columns: readonly { schema: string | null; table: string; name: string }[];
  schemas: readonly string[];
  functions: readonly string[];
  /** The schema unqualified names resolve to (shown without it, and preferred at equal distance). */
  defaultSchema?: string | null;
}

export interface SuggestContext {
  /** Tables the statement names (as written, any case): their columns come first for a column. */
  tables?: readonly string[];
  /** The qualifier written before a column (`c` of `c.custmer_name`): a table name or an alias in `aliases`. */
  qualifier?: string | null;
  /** Aliases of the statement (lower case) and the table each stands for. */
  aliases?: ReadonlyMap<string, string>;
  /** How a name is written in the engine's SQL (PostgreSQL's "InvoiceLine"); as it is by default. */
  spell?: (name: string) => string;
}

/**
 * A name as the engine's SQL must write it: PostgreSQL and Vertica fold unquoted names to lower
 * case and Oracle to upper case, so another case needs double quotes there; SQLite, MySQL/MariaDB
 * and DuckDB take a plain name in any case.
 */
export function spellerFor(engine: Engine): (name: string) => string {
  const plain = engine === 'postgres' || engine === 'vertica' ? /^[a-z_][a-z0-9_$]*$/ : engine === 'oracle' ? /^[A-Z][A-Z0-9_$#]*$/ : null;
  if (!plain) return (name) => name;
  return (name) => (plain.test(name) ? name : `"${name.replace(/"/g, '""')}"`);
}

export const MAX_SUGGESTIONS = 3;

/** Optimal string alignment distance (Damerau-Levenshtein with adjacent transpositions). */
export function damerauDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      row.push(best);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/** The name in lower case without separators, so customer_name, CustomerName and "customer name" are one. */
function squash(name: string): string {
  return name.toLowerCase().replace(/[_\s-]/g, '');
}

/** An English singular of the last word: categories -> category, boxes -> box, orders -> order. */
function singular(word: string): string {
  if (/ies$/.test(word) && word.length > 4) return `${word.slice(0, -3)}y`;
  if (/(ss|x|ch|sh|zz)es$/.test(word)) return word.slice(0, -2);
  if (/[^s]s$/.test(word) && word.length > 3) return word.slice(0, -1);
  return word;
}

/** How far the candidate is from what was written: lower is closer, null when not alike. */
export function nameDistance(wanted: string, candidate: string): number | null {
  if (wanted === candidate) return null;
  if (wanted.toLowerCase() === candidate.toLowerCase()) return 0;
  const a = squash(wanted);
  const b = squash(candidate);
  if (!a || !b) return null;
  if (a === b) return 0.5;
  const sa = singular(a);
  const sb = singular(b);
  if (sa === sb) return 0.7;
  const typo = Math.min(damerauDistance(a, b), damerauDistance(sa, sb) + 0.3);
  const allowed = a.length <= 3 ? 1 : a.length <= 7 ? 2 : 3;
  if (typo <= allowed) return 1 + typo / Math.max(a.length, b.length);
  // One a prefix of the other or a word of it (name vs customer_name), for names long enough to mean something.
  if (Math.min(sa.length, sb.length) >= 4 && (sb.startsWith(sa) || sa.startsWith(sb) || sb.endsWith(sa) || sa.endsWith(sb)))
    return 3 + Math.abs(a.length - b.length) / 100;
  return null;
}

interface Candidate {
  shown: string;
  distance: number;
  /** 0: a column of the table the qualifier names; 1: of a table the statement names; 2: elsewhere. */
  tier: number;
}

function pick(candidates: Candidate[]): string[] {
  const seen = new Set<string>();
  return candidates
    .sort((x, y) => x.tier - y.tier || x.distance - y.distance || x.shown.localeCompare(y.shown))
    .filter((candidate) => !seen.has(candidate.shown) && seen.add(candidate.shown))
    .slice(0, MAX_SUGGESTIONS)
    .map((candidate) => candidate.shown);
}

/**
 * At most three existing names like `name`, best first: another case, snake_case against
 * CamelCase, singular against plural, a typo (Damerau distance), a prefix or suffix. A column is
 * shown as table.column; the columns of the table its qualifier names, then of the statement's
 * tables, come before any other table's. `name` may be qualified (schema.table, alias.column).
 */
export function suggestNames(kind: NameKind, name: string, catalog: NameCatalog, context: SuggestContext = {}): string[] {
  const dot = name.lastIndexOf('.');
  const bare = dot > 0 ? name.slice(dot + 1) : name;
  // MySQL qualifies an unknown table with the current database itself: that is no schema written.
  const qualifier = dot > 0 ? name.slice(0, dot) : null;
  const written = qualifier && qualifier.toLowerCase() !== catalog.defaultSchema?.toLowerCase() ? qualifier : null;
  const several = new Set(catalog.tables.map((table) => table.schema)).size > 1;
  const home = catalog.defaultSchema ?? null;
  const spell = context.spell ?? ((text: string) => text);
  const tableShown = (schema: string | null, table: string) => (several && schema && schema !== home ? `${spell(schema)}.${spell(table)}` : spell(table));
  // At equal distance, a name in the default schema first.
  const away = (schema: string | null) => (several && schema !== home ? 0.05 : 0);
  switch (kind) {
    case 'table': {
      const candidates: Candidate[] = [];
      for (const table of catalog.tables) {
        const distance = nameDistance(bare, table.name);
        // A wrong schema with the right table name is a suggestion too.
        if (distance === null && !(written && table.name === bare && table.schema?.toLowerCase() !== written.toLowerCase())) continue;
        const inSchema = !written || table.schema?.toLowerCase() === written.toLowerCase() ? 0 : 1;
        // Qualified as written, the schema is shown (mian.customers: main.customers).
        const shown = written && table.schema ? `${spell(table.schema)}.${spell(table.name)}` : tableShown(table.schema, table.name);
        candidates.push({ shown, distance: (distance ?? 0.2) + away(table.schema), tier: inSchema });
      }
      return pick(candidates);
    }
    case 'column': {
      const qualifier = context.qualifier ?? written;
      const qualified = qualifier ? (context.aliases?.get(qualifier.toLowerCase()) ?? qualifier).toLowerCase() : null;
      const own = new Set((context.tables ?? []).map((table) => table.toLowerCase()));
      for (const table of context.aliases?.values() ?? []) own.add(table.toLowerCase());
      const candidates: Candidate[] = [];
      for (const column of catalog.columns) {
        const table = column.table.toLowerCase();
        const distance = nameDistance(bare, column.name);
        // The right column of another table than the qualifier says (o.customer_name when it is c's).
        if (distance === null && !(qualified && column.name === bare && table !== qualified)) continue;
        // The qualifier's table is the one in the default schema (a same-named table elsewhere comes after).
        const tier = qualified && table === qualified && !away(column.schema) ? 0 : own.has(table) || table === qualified ? 1 : 2;
        candidates.push({ shown: `${tableShown(column.schema, column.table)}.${spell(column.name)}`, distance: (distance ?? 0.2) + away(column.schema), tier });
      }
      // A table the qualifier names that has a column like it: only its columns.
      if (candidates.some((candidate) => candidate.tier === 0)) return pick(candidates.filter((candidate) => candidate.tier === 0));
      // The statement's own tables have one: another table's column only where it is closer (a
      // same-named column of a table elsewhere, another database's on a shared server, is noise).
      const inStatement = candidates.filter((candidate) => candidate.tier === 1);
      if (inStatement.length === 0) return pick(candidates);
      const closest = Math.min(...inStatement.map((candidate) => candidate.distance));
      return pick(candidates.filter((candidate) => candidate.tier === 1 || candidate.distance < closest));
    }
    case 'schema':
      return pick(candidatesFrom(bare, catalog.schemas)).map(spell);
    case 'function':
      return pick(candidatesFrom(bare, catalog.functions));
  }
}

function candidatesFrom(name: string, names: readonly string[]): Candidate[] {
  const candidates: Candidate[] = [];
  for (const candidate of names) {
    const distance = nameDistance(name, candidate);
    if (distance !== null) candidates.push({ shown: candidate, distance, tier: 0 });
  }
  return candidates;
}

/** What an engine said does not exist. */
export interface UnknownName {
  kind: NameKind;
  /** As the engine quoted it (may be qualified); null where the engine does not say (ORA-00942). */
  name: string | null;
}

const unquote = (name: string) => name.replace(/^["`'[]|["`'\]]$/g, '');

/** A message pattern and what its groups say does not exist. */
type Rule = [RegExp, (match: RegExpExecArray) => UnknownName];

function firstMatch(message: string, rules: readonly Rule[]): UnknownName | null {
  for (const [pattern, build] of rules) {
    const match = pattern.exec(message);
    if (match) return build(match);
  }
  return null;
}

const SQLITE_RULES: Rule[] = [[/no such (column|table|function): (\S+)/, (m) => ({ kind: m[1] as NameKind, name: m[2]! })]];

const ORACLE_RULES: Rule[] = [
  [/ORA-00904: (?:"?([^":]+)"?\.)?"?([^":]+)"?: invalid identifier/, (m) => ({ kind: 'column', name: m[1] ? `${m[1]}.${m[2]}` : m[2]! })],
  [/ORA-00942/, () => ({ kind: 'table', name: null })],
  [/ORA-01918: user '([^']+)' does not exist/, (m) => ({ kind: 'schema', name: m[1]! })],
];

/** ClickHouse names the unknown identifier in its message (codes 47 UNKNOWN_IDENTIFIER, 60 UNKNOWN_TABLE, 81 UNKNOWN_DATABASE, 46 UNKNOWN_FUNCTION). */
const CLICKHOUSE_RULES: Rule[] = [
  [/Missing columns: '([^']+)'/, (m) => ({ kind: 'column', name: m[1]! })],
  [/Unknown (?:expression )?identifier[: ]+[`']?([^`'\s]+)/i, (m) => ({ kind: 'column', name: m[1]! })],
  [/Table (\S+) doesn't exist/, (m) => ({ kind: 'table', name: unquote(m[1]!).split('.').pop()! })],
  [/Database (\S+) doesn't exist/, (m) => ({ kind: 'schema', name: unquote(m[1]!) })],
  [/Unknown (?:aggregate )?function (\S+?)[.,:\s]/i, (m) => ({ kind: 'function', name: unquote(m[1]!) })],
];

const DUCKDB_RULES: Rule[] = [
  [/Referenced column "([^"]+)" not found/, (m) => ({ kind: 'column', name: m[1]! })],
  [/(?:Values list|Table) "([^"]+)" does not have a column named "([^"]+)"/, (m) => ({ kind: 'column', name: `${m[1]}.${m[2]}` })],
  [/Table with name (\S+) does not exist/, (m) => ({ kind: 'table', name: unquote(m[1]!) })],
  [/Referenced table "([^"]+)" not found/, (m) => ({ kind: 'table', name: m[1]! })],
  [/Schema with name (\S+) does not exist/, (m) => ({ kind: 'schema', name: unquote(m[1]!) })],
  [/(?:Scalar|Table|Aggregate) Function with name (\S+) does not exist/, (m) => ({ kind: 'function', name: unquote(m[1]!) })],
];

/**
 * The unknown name in an engine's error, by its code where the engine gives one (PostgreSQL
 * SQLSTATE, MySQL errno, ORA- numbers), else by its message (SQLite, DuckDB, Vertica).
 */
export function unknownNameIn(engine: Engine, error: unknown): UnknownName | null {
  if (!error || typeof error !== 'object') return null;
  const message = String((error as { message?: unknown }).message ?? '');
  const code = String((error as { code?: unknown }).code ?? '');
  const errno = Number((error as { errno?: unknown }).errno);
  switch (engine) {
    case 'sqlite':
      return firstMatch(message, SQLITE_RULES);
    case 'postgres':
    case 'vertica': {
      const quoted = /"([^"]+)"/.exec(message)?.[1] ?? null;
      if (code === '42703' || /^column (\S+) does not exist/.test(message))
        return { kind: 'column', name: quoted ?? /^column (\S+) does not exist/.exec(message)?.[1] ?? null };
      if (code === '42P01' || code === '42V01' || /^relation "[^"]+" does not exist/i.test(message)) return { kind: 'table', name: quoted };
      if (code === '3F000' || /^schema "[^"]+" does not exist/i.test(message)) return { kind: 'schema', name: quoted };
      if (code === '42883' || /^function [^(]+\(.*\) does not exist/i.test(message))
        return { kind: 'function', name: /function ([^(\s]+)\(/i.exec(message)?.[1]?.replace(/"/g, '') ?? null };
      return null;
    }
    case 'mysql': {
      const quoted = /'([^']+)'/.exec(message)?.[1] ?? null;
      if (errno === 1054 || /^Unknown column '/.test(message)) return { kind: 'column', name: quoted };
      if (errno === 1146 || /^Table '[^']+' doesn't exist/.test(message)) return { kind: 'table', name: quoted };
      if (errno === 1049 || /^Unknown database '/.test(message)) return { kind: 'schema', name: quoted };
      if (errno === 1305 || /^FUNCTION \S+ does not exist/.test(message))
        return { kind: 'function', name: /FUNCTION (\S+) does not exist/.exec(message)?.[1] ?? null };
      return null;
    }
    case 'oracle':
      return firstMatch(message, ORACLE_RULES);
    case 'duckdb':
      return firstMatch(message, DUCKDB_RULES);
    case 'clickhouse':
      return firstMatch(message, CLICKHOUSE_RULES);
  }
}

/** Words after which a name is not a table's alias. */
const NOT_ALIAS = new Set([
  'WHERE',
  'JOIN',
  'INNER',
  'LEFT',
  'RIGHT',
  'FULL',
  'OUTER',
  'CROSS',
  'NATURAL',
  'ON',
  'USING',
  'GROUP',
  'ORDER',
  'HAVING',
  'LIMIT',
  'OFFSET',
  'UNION',
  'EXCEPT',
  'INTERSECT',
  'WINDOW',
  'FETCH',
  'FOR',
  'SET',
  'AS',
  'LATERAL',
  'SELECT',
  'FROM',
  'QUALIFY',
  'RETURNING',
  'VALUES',
  'WITH',
]); // prettier-ignore

/**
 * The catalogue's tables the statement names, and the aliases it gives them (lower case), found
 * with the read-only check's lexer: every word or quoted name equal to a table's name (any case)
 * is one, and a plain word after it that is not a keyword is its alias.
 */
export function tablesInStatement(sql: string, engine: Engine, catalog: NameCatalog): { tables: string[]; aliases: Map<string, string> } {
  let tokens;
  try {
    tokens = tokenize(sql, engine);
  } catch {
    return { tables: [], aliases: new Map() };
  }
  const byName = new Map(catalog.tables.map((table) => [table.name.toLowerCase(), table.name]));
  const tables = new Set<string>();
  const aliases = new Map<string, string>();
  tokens.forEach((token, index) => {
    if (token.kind !== 'word' && token.kind !== 'quoted') return;
    const table = byName.get(token.value.toLowerCase());
    // A name after a dot is a column (t.name) unless the name before the dot is a schema; skip only what follows an alias-like word.
    if (!table || tokens[index + 1]?.value === '.') return;
    tables.add(table);
    let next = tokens[index + 1];
    if (next?.kind === 'word' && next.value === 'AS') next = tokens[index + 2];
    if (next && (next.kind === 'word' || next.kind === 'quoted') && !NOT_ALIAS.has(next.value)) aliases.set(next.value.toLowerCase(), table);
  });
  return { tables: [...tables], aliases };
}

/** Rows of the catalogue read for suggestions: enough for any real schema, bounded for a generated one. */
const CATALOG_ROWS = 100_000;

/** Function names per engine, where the catalogue lists them (MySQL: stored functions only). */
const FUNCTIONS: Partial<Record<Engine, string>> = {
  sqlite: 'SELECT DISTINCT name FROM pragma_function_list',
  postgres: `SELECT DISTINCT proname::text FROM pg_proc WHERE prokind IN ('f', 'a', 'w')`,
  duckdb: 'SELECT DISTINCT function_name FROM duckdb_functions()',
  mysql: `SELECT routine_name FROM information_schema.routines WHERE routine_type = 'FUNCTION'`,
};

/** The schema unqualified names resolve to, as the catalogue's schema_name shows it. */
const DEFAULT_SCHEMA: Record<Engine, string> = {
  sqlite: `SELECT 'main'`,
  postgres: 'SELECT current_schema()::text',
  mysql: 'SELECT DATABASE()',
  duckdb: 'SELECT current_schema()',
  oracle: `SELECT SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA') FROM dual`,
  vertica: 'SELECT CURRENT_SCHEMA()',
  clickhouse: 'SELECT currentDatabase()',
};

const SCHEMAS: Partial<Record<Engine, string>> = {
  postgres: `SELECT nspname::text FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'`,
  mysql: `SELECT schema_name FROM information_schema.schemata`,
  duckdb: 'SELECT DISTINCT schema_name FROM duckdb_schemas()',
  vertica: 'SELECT schema_name FROM v_catalog.schemata',
};

/** The catalogue's names for the kind asked (tables for a table or a column, and columns for a column). */
export async function readNameCatalog(engine: Engine, driver: DatabaseDriver, kind: NameKind, options: RunOptions): Promise<NameCatalog> {
  const dialect = DIALECTS[engine];
  const catalog: {
    tables: NameCatalog['tables'][number][];
    columns: NameCatalog['columns'][number][];
    schemas: string[];
    functions: string[];
    defaultSchema?: string | null;
  } = {
    tables: [],
    columns: [],
    schemas: [],
    functions: [],
  };
  if (kind === 'function') {
    const sql = FUNCTIONS[engine];
    if (sql) catalog.functions = (await driver.catalog(dialect.limit(sql, CATALOG_ROWS), [], options)).map((row) => String(row[0]));
    return catalog;
  }
  if (kind === 'schema') {
    const sql = SCHEMAS[engine];
    if (sql) catalog.schemas = (await driver.catalog(dialect.limit(sql, CATALOG_ROWS), [], options)).map((row) => String(row[0]));
  }
  const [[home] = []] = await driver.catalog(DEFAULT_SCHEMA[engine], [], options);
  catalog.defaultSchema = home === null || home === undefined ? null : String(home);
  const kinds = kind === 'column' ? '' : `WHERE o.kind <> 'column'`;
  const rows = await driver.catalog(
    dialect.limit(`SELECT o.kind, o.schema_name, o.table_name, o.column_name FROM (${dialect.objects}) o ${kinds}`, CATALOG_ROWS),
    [],
    options,
  );
  for (const [objectKind, schema, table, column] of rows) {
    const schemaName = schema === null || schema === undefined ? null : String(schema);
    if (objectKind === 'column') catalog.columns.push({ schema: schemaName, table: String(table), name: String(column) });
    else catalog.tables.push({ schema: schemaName, name: String(table) });
  }
  if (kind === 'schema' && !SCHEMAS[engine]) catalog.schemas = [...new Set(catalog.tables.map((table) => table.schema ?? '').filter(Boolean))];
  return catalog;
}

/** "; did you mean a, b or c?" for a list of names, or ''. */
export function didYouMean(names: readonly string[]): string {
  if (names.length === 0) return '';
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
  return `; did you mean ${list}?`;
}

/**
 * The same error with the engine's hint (PostgreSQL's HINT) and at most three existing names
 * added when it is about a name that does not exist; any other error, or a catalogue that
 * cannot be read, comes back as it was.
 */
export async function withNameSuggestions(
  engine: Engine,
  driver: DatabaseDriver,
  error: unknown,
  sql: string | null,
  options: RunOptions,
  table?: string,
): Promise<unknown> {
  const hint = typeof (error as { hint?: unknown })?.hint === 'string' ? `\nHINT: ${(error as { hint: string }).hint}` : '';
  // describe, sample and profile {table_name}: the driver's "no such table or view".
  const missingTable = table !== undefined && error instanceof ToolError && error.kind === 'not_found';
  const unknown: UnknownName | null = missingTable ? { kind: 'table', name: table } : unknownNameIn(engine, error);
  let suggestion = '';
  if (unknown && !options.signal.aborted) {
    try {
      suggestion = await suggestionText(engine, driver, unknown, sql, options);
    } catch {
      suggestion = '';
    }
  }
  if (!hint && !suggestion) return error;
  return extendMessage(error, suggestion, hint);
}

async function suggestionText(engine: Engine, driver: DatabaseDriver, unknown: UnknownName, sql: string | null, options: RunOptions): Promise<string> {
  const catalog = await readNameCatalog(engine, driver, unknown.kind, options);
  const inStatement = sql ? tablesInStatement(sql, engine, catalog) : { tables: [], aliases: new Map<string, string>() };
  if (unknown.name === null) {
    // ORA-00942 names no table: each name after FROM or JOIN that the catalogue lacks is the unknown one.
    const missing = sql ? tablesAfterFrom(sql, engine).filter((name) => !catalog.tables.some((table) => table.name.toUpperCase() === name.toUpperCase())) : [];
    const found = missing
      .map((name) => ({ name, names: suggestNames('table', name, catalog, { spell: spellerFor(engine) }) }))
      .filter((entry) => entry.names.length);
    return found.map((entry) => `; ${entry.name}:${didYouMean(entry.names).slice(1)}`).join('');
  }
  return didYouMean(suggestNames(unknown.kind, unknown.name, catalog, { ...inStatement, spell: spellerFor(engine) }));
}

/** Names right after FROM, JOIN or a comma in a FROM list (schema-qualified as written). */
function tablesAfterFrom(sql: string, engine: Engine): string[] {
  let tokens;
  try {
    tokens = tokenize(sql, engine);
  } catch {
    return [];
  }
  const names: string[] = [];
  for (let index = 0; index < tokens.length - 1; index++) {
    const token = tokens[index]!;
    if (!(token.kind === 'word' && (token.value === 'FROM' || token.value === 'JOIN'))) continue;
    let next = index + 1;
    while (tokens[next]?.kind === 'word' || tokens[next]?.kind === 'quoted') {
      const name = tokens[next + 1]?.value === '.' && tokens[next + 2] ? tokens[next + 2]! : tokens[next]!;
      names.push(name.value);
      next = name === tokens[next] ? next + 1 : next + 3;
      // Skip an alias, then continue after a comma.
      while (tokens[next] && tokens[next]!.value !== ',' && tokens[next]!.kind !== 'punct' && !NOT_ALIAS.has(tokens[next]!.value)) next++;
      if (tokens[next]?.value !== ',') break;
      next++;
    }
  }
  return names;
}

/**
 * An error with `first` added to the first line of its message (before an engine's LINE 1 and
 * caret) and `last` at its end, keeping its kind (ToolError) or code (driver errors).
 */
export function extendMessage(error: unknown, first: string, last = ''): unknown {
  const message = error instanceof Error ? error.message : String(error);
  const newline = message.indexOf('\n');
  const text = newline < 0 ? `${message}${first}${last}` : `${message.slice(0, newline)}${first}${message.slice(newline)}${last}`;
  if (error instanceof ToolError) return new ToolError(text, error.kind, error.metadata);
  const extended = new Error(text);
  Object.assign(extended, { code: (error as { code?: unknown })?.code, errno: (error as { errno?: unknown })?.errno });
  return extended;
}

/**
 * "; did you mean a, b or c?" for a table_pattern (list_tables, find_values) that matched no
 * table, or ''. A pattern with LIKE wildcards inside is not a misspelt name: only a plain name,
 * or one with a leading or trailing %, is compared with the catalogue's tables.
 */
export async function tablePatternSuggestions(engine: Engine, driver: DatabaseDriver, pattern: string, options: RunOptions): Promise<string> {
  const name = pattern.replace(/^%+|%+$/g, '');
  if (name === '' || /[%_\\]/.test(name)) return '';
  try {
    return didYouMean(suggestNames('table', name, await readNameCatalog(engine, driver, 'table', options)));
  } catch {
    // A catalogue that cannot be read only loses the suggestion.
    return '';
  }
}
