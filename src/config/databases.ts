import { existsSync, realpathSync, statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { ConfigError } from '../errors.js';
import { parseConfigText, type ConfigDocument } from './config-file.js';
import type { FileOptionValue } from './duckdb-options.js';
import { duckdbDraft, duckdbYamlDraft, isDuckdbTarget, renameSingleView } from './duckdb.js';
import { describeSsh, parseSshBlock, type SshConfig } from './ssh.js';
import { interpolateEnv, isMapping, readYamlText } from './yaml.js';

/**
 * Where databases come from (docs/guide/databases.md): `--db [ALIAS=]TARGET` flags, a YAML file (`--databases`
 * or `QUARRY_DB_CONFIG`), the `databases:` key of config.yaml, and environment variables. Every
 * mistake is a ConfigError that says what to fix; passwords never appear in one.
 */

export const ENGINES = ['sqlite', 'postgres', 'mysql', 'oracle', 'vertica', 'duckdb', 'clickhouse'] as const;
export type Engine = (typeof ENGINES)[number];

/** A configured database (docs/guide/databases.md). The password is kept apart so it can be scrubbed everywhere. */
export interface DatabaseConfig {
  alias: string;
  engine: Engine;
  /** sqlite, duckdb: the database file (absolute). */
  path?: string;
  /** duckdb: views over files, view name -> absolute file path or glob (CSV, Parquet, JSON). */
  files?: Record<string, string>;
  /** duckdb: view name -> DuckDB reader options of that view (src/config/duckdb-options.ts). */
  fileOptions?: Record<string, Record<string, FileOptionValue>>;
  host?: string;
  port?: number;
  database?: string;
  user?: string;
  password?: string;
  /** oracle: an Easy Connect string or TNS alias (host:port/service). */
  dsn?: string;
  /** Server engines: reached through this SSH server (docs/guide/databases.md "SSH tunnels"); host and port are as seen from it. */
  ssh?: SshConfig;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  /** Where it was configured, for `quarry db list` and error messages. */
  source: string;
}

export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;
export const DEFAULT_STATEMENT_TIMEOUT_SECONDS = 120;
const DEFAULT_PORTS: Partial<Record<Engine, number>> = { postgres: 5432, mysql: 3306, vertica: 5433, oracle: 1521, clickhouse: 8123 };
const ALIAS_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]*$/;
const URL_SCHEMES: Record<string, Engine> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  mysql: 'mysql',
  mariadb: 'mysql',
  oracle: 'oracle',
  vertica: 'vertica',
  clickhouse: 'clickhouse',
};
const YAML_TYPES: Record<string, Engine> = { ...URL_SCHEMES, sqlite: 'sqlite', sqlite3: 'sqlite', duckdb: 'duckdb' };
const YAML_KEYS = [
  'type',
  'url',
  'path',
  'host',
  'port',
  'database',
  'user',
  'password',
  'dsn',
  'connect_timeout',
  'statement_timeout',
  'files',
  'ssh',
] as const;

export interface DatabaseConfigSources {
  /** `--db` values, in order. */
  dbFlags?: readonly string[];
  /** `--databases FILE`; falls back to env QUARRY_DB_CONFIG. */
  databasesFile?: string;
  /** config.yaml as read by readConfigFile (src/config/config-file.ts): its `databases:` key, if any. */
  config?: ConfigDocument;
  /**
   * For `db list`, which never shows passwords: a password's `${VAR}` that is not set is left
   * unresolved instead of being an error.
   */
  passwordsOptional?: boolean;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export type Draft = Omit<DatabaseConfig, 'alias' | 'connectTimeoutMs' | 'statementTimeoutMs'> & {
  alias?: string;
  connectTimeoutSeconds?: number;
  statementTimeoutSeconds?: number;
};

export function loadDatabaseConfigs(sources: DatabaseConfigSources): DatabaseConfig[] {
  const drafts: Draft[] = [];
  for (const flag of sources.dbFlags ?? []) drafts.push(parseDbFlag(flag, sources.cwd));
  const options = { required: true, passwordsOptional: sources.passwordsOptional ?? false };
  const file = sources.databasesFile ?? sources.env.QUARRY_DB_CONFIG;
  if (file) {
    const path = resolve(sources.cwd, file);
    const text = readYamlText(path, sources.databasesFile ? '--databases' : 'QUARRY_DB_CONFIG') ?? '';
    drafts.push(...parseDatabasesYaml(text, path, sources.env, options));
  }
  if (sources.config) drafts.push(...databasesOf(sources.config, sources.env, { ...options, required: false }));
  drafts.push(...databasesFromEnv(sources.env, sources.cwd));
  return finish(drafts);
}

/**
 * What makes two entries the same database: the same SQLite file, or the same engine, server,
 * port, database and user. Given twice (say SQLITE_DB and --db), it is one database.
 */
function identity(draft: Draft): string {
  if (draft.engine === 'sqlite') {
    try {
      return `sqlite\0${realpathSync(draft.path ?? '')}`;
    } catch {
      return `sqlite\0${draft.path}`;
    }
  }
  const port = draft.port ?? DEFAULT_PORTS[draft.engine];
  return [draft.engine, draft.dsn ?? '', (draft.host ?? '').toLowerCase(), port, draft.database ?? '', draft.user ?? ''].join('\0');
}

/**
 * Aliases: an explicit one (`--db ALIAS=`, a YAML key) is the user's and must be unique: two
 * different databases under one explicit alias are an error naming both sources. A derived one
 * (file or database name) that is taken gets the engine appended (`shop` and `shop_mysql`), so
 * POSTGRES_* and MYSQL_* naming the same database both work. The same database under the same
 * alias from several sources is listed once, with every source named; under two aliases it is
 * listed twice (the user named it so).
 */
function finish(drafts: Draft[]): DatabaseConfig[] {
  const merged: Draft[] = [];
  const byKey = new Map<string, Draft>();
  for (const draft of drafts) {
    // One database under one name, however many sources give it.
    const key = `${identity(draft)}\0${draft.alias ?? defaultAlias(draft)}`;
    const earlier = byKey.get(key);
    if (!earlier) {
      const copy = { ...draft };
      byKey.set(key, copy);
      merged.push(copy);
      continue;
    }
    earlier.alias ??= draft.alias;
    earlier.source = `${earlier.source} and ${draft.source}`;
    earlier.password ??= draft.password;
    earlier.connectTimeoutSeconds ??= draft.connectTimeoutSeconds;
    earlier.statementTimeoutSeconds ??= draft.statementTimeoutSeconds;
  }
  const seen = new Map<string, Draft>();
  for (const draft of merged) {
    if (draft.alias === undefined) continue;
    if (!ALIAS_PATTERN.test(draft.alias)) {
      throw new ConfigError(`invalid database alias "${draft.alias}" (${draft.source}): use letters, digits, "_", "-" or ".", starting with a letter`);
    }
    const earlier = seen.get(draft.alias);
    if (earlier) {
      throw new ConfigError(
        `database alias "${draft.alias}" names two different databases (${describeDraft(earlier)} from ${earlier.source}, and ${describeDraft(draft)} from ` +
          `${draft.source}); give one of them another name with --db ALIAS=TARGET`,
      );
    }
    seen.set(draft.alias, draft);
  }
  return merged.map((draft) => {
    let alias = draft.alias;
    if (alias === undefined) {
      const base = defaultAlias(draft);
      alias = base;
      for (let n = 1; seen.has(alias); n++) alias = n === 1 ? `${base}_${draft.engine}` : `${base}_${draft.engine}_${n}`;
      seen.set(alias, draft);
    }
    const { connectTimeoutSeconds, statementTimeoutSeconds, alias: _alias, ...rest } = draft;
    return {
      ...rest,
      alias,
      connectTimeoutMs: (connectTimeoutSeconds ?? DEFAULT_CONNECT_TIMEOUT_SECONDS) * 1000,
      statementTimeoutMs: (statementTimeoutSeconds ?? DEFAULT_STATEMENT_TIMEOUT_SECONDS) * 1000,
    };
  });
}

function describeDraft(draft: Draft): string {
  return describeDatabase({ ...draft, alias: '', connectTimeoutMs: 0, statementTimeoutMs: 0 });
}

/** The file's name without extension, or the database name, made into a valid alias. */
function defaultAlias(draft: Draft): string {
  const raw =
    draft.engine === 'duckdb'
      ? draft.path
        ? basename(draft.path, extname(draft.path))
        : (Object.keys(draft.files ?? {})[0] ?? 'duckdb')
      : draft.engine === 'sqlite'
        ? basename(draft.path ?? 'sqlite', extname(draft.path ?? ''))
        : (draft.database ?? draft.dsn?.split('/').pop() ?? draft.engine);
  const cleaned = raw.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z]/.test(cleaned) ? cleaned : `db_${cleaned}`;
}

/** `[ALIAS=]TARGET`: a URL (postgres://, mysql://, oracle://, vertica://), `sqlite:PATH` or a SQLite file path. */
export function parseDbFlag(flag: string, cwd: string): Draft {
  const equals = flag.indexOf('=');
  const maybeAlias = equals > 0 ? flag.slice(0, equals) : '';
  const hasAlias = maybeAlias !== '' && ALIAS_PATTERN.test(maybeAlias);
  const target = hasAlias ? flag.slice(equals + 1) : flag;
  const prefix = hasAlias ? `--db ${maybeAlias}=` : '--db ';
  if (!target) throw new ConfigError(`${prefix}: missing target after "="; expected ALIAS=URL or ALIAS=PATH`);
  const draft = parseTarget(target, cwd, (shown) => `${prefix}${shown}`);
  return hasAlias ? { ...renameSingleView(draft, maybeAlias), alias: maybeAlias } : draft;
}

/**
 * `where` turns the target as it may be shown (a URL with its password replaced by ***) into
 * the source named in messages and `db list`.
 */
function parseTarget(target: string, cwd: string, where: string | ((shown: string) => string)): Draft {
  const sourceFor = (shown: string) => (typeof where === 'string' ? where : where(shown));
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(target)?.[1]?.toLowerCase();
  if (isDuckdbTarget(target)) return duckdbDraft(target, cwd, sourceFor(target));
  if (target.toLowerCase().startsWith('sqlite:')) {
    const rest = target.slice('sqlite:'.length);
    // sqlite:///abs/path and sqlite://rel/path as well as sqlite:path
    const path = rest.startsWith('//') ? rest.slice(2) : rest;
    return sqliteDraft(path, cwd, sourceFor(target));
  }
  if (scheme) {
    const engine = URL_SCHEMES[scheme];
    if (!engine) {
      throw new ConfigError(
        `${sourceFor(redactUrl(target))}: unsupported database URL scheme "${scheme}://"; use postgres://, mysql://, oracle://, vertica://, clickhouse://, sqlite:PATH or ` +
          `the path of a SQLite file`,
      );
    }
    return urlDraft(target, engine, sourceFor);
  }
  return sqliteDraft(target, cwd, sourceFor(target));
}
function sqliteDraft(path: string, cwd: string, source: string): Draft {
  if (!path) throw new ConfigError(`${source}: missing SQLite file path`);
  const absolute = resolve(cwd, path);
  if (!existsSync(absolute)) throw new ConfigError(`${source}: no such SQLite database file: ${absolute}`);
  if (!statSync(absolute).isFile()) throw new ConfigError(`${source}: not a file: ${absolute}`);
  return { engine: 'sqlite', path: absolute, source };
}

/** Percent-decoding of one URL part; a malformed escape is a usage error naming the part. */
function decodePart(text: string, part: string, source: string, engine: Engine): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ConfigError(
      `${source}: the URL's ${part} has a malformed %-escape; write a "%" as %25 (expected e.g. ${engine}://user:password@host:port/database)`,
    );
  }
}

/**
 * A server URL, parsed once with the WHATWG URL parser: the connection settings and the text
 * shown in messages (the same URL with its password replaced) both come from that one parse,
 * so a password holding a space or "@" is never shown, in whole or in part.
 */
function urlDraft(target: string, engine: Engine, sourceFor: (shown: string) => string): Draft {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new ConfigError(
      `${sourceFor(`${target.slice(0, target.indexOf('://') + 3)}...`)}: not a valid URL; expected e.g. ${engine}://user:password@host:port/database`,
    );
  }
  const shown = new URL(url.href);
  if (shown.password) shown.password = '***';
  const source = sourceFor(shown.href);
  const database = decodePart(url.pathname.replace(/^\//, ''), 'database name', source, engine);
  const draft: Draft = { engine, source, host: decodePart(url.hostname, 'host', source, engine) || 'localhost' };
  if (url.port) draft.port = Number(url.port);
  if (url.username) draft.user = decodePart(url.username, 'user name', source, engine);
  if (url.password) draft.password = decodePart(url.password, 'password', source, engine);
  if (engine === 'oracle') {
    draft.dsn = `${draft.host}:${draft.port ?? DEFAULT_PORTS.oracle}${database ? `/${database}` : ''}`;
    if (database) draft.database = database;
  } else if (database) {
    draft.database = database;
  }
  for (const [key, value] of url.searchParams) {
    if (key === 'connect_timeout') draft.connectTimeoutSeconds = parseSeconds(value, `${source}: connect_timeout`);
    else if (key === 'statement_timeout') draft.statementTimeoutSeconds = parseSeconds(value, `${source}: statement_timeout`);
    else throw new ConfigError(`${source}: unknown URL parameter "${key}"; supported: connect_timeout, statement_timeout (seconds)`);
  }
  return draft;
}

function parseSeconds(value: unknown, where: string): number {
  const seconds = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  if (!Number.isFinite(seconds) || seconds <= 0) throw new ConfigError(`${where} must be a positive number of seconds (got ${JSON.stringify(value)})`);
  return seconds;
}

interface DatabasesYamlOptions {
  required: boolean;
  passwordsOptional?: boolean;
}

export function parseDatabasesYaml(text: string, file: string, env: NodeJS.ProcessEnv, options: DatabasesYamlOptions): Draft[] {
  return databasesOf(parseConfigText(text, file), env, options);
}

/** The `databases:` of a config file already read; `required` for a `--databases` file, which exists for them. */
function databasesOf(config: ConfigDocument, env: NodeJS.ProcessEnv, options: DatabasesYamlOptions): Draft[] {
  const { file, settings } = config;
  const databases = settings.databases;
  if (databases === undefined || databases === null) {
    if (options.required) throw new ConfigError(`${file}: no "databases:" key; expected databases: {alias: {type, ...}}`);
    return [];
  }
  if (!isMapping(databases)) throw new ConfigError(`${file}: "databases" must be a mapping of alias to settings`);
  return Object.entries(databases).map(([alias, raw]) => yamlEntry(alias, raw, file, env, options.passwordsOptional ?? false));
}

function yamlEntry(alias: string, raw: unknown, file: string, env: NodeJS.ProcessEnv, passwordsOptional: boolean): Draft {
  const where = `${file}: databases.${alias}`;
  if (!isMapping(raw)) throw new ConfigError(`${where} must be a mapping with type and connection settings`);
  const values: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!(YAML_KEYS as readonly string[]).includes(key)) throw new ConfigError(`${where}: unknown key "${key}"; allowed keys: ${YAML_KEYS.join(', ')}`);
    if (typeof value === 'string') {
      // db list shows no password, so it does not need the password's variables to be set.
      if (key === 'password' && passwordsOptional && /\$\{/.test(value)) continue;
      values[key] = interpolateEnv(value, env, `${where}.${key}`);
    } else if (typeof value === 'number') values[key] = value;
    else if (key === 'files' || key === 'ssh') continue;
    else if (value !== null && value !== undefined) throw new ConfigError(`${where}.${key} must be a string or a number`);
  }
  const source = `${file} (databases.${alias})`;
  let draft: Draft;
  if (values.url !== undefined) {
    draft = parseTarget(String(values.url), dirOf(file), source);
  } else {
    const typeName = String(values.type ?? '').toLowerCase();
    const engine = YAML_TYPES[typeName];
    if (!engine) throw new ConfigError(`${where}.type must be one of ${ENGINES.join(', ')} (got ${JSON.stringify(values.type ?? null)})`);
    if (engine === 'duckdb') {
      draft = duckdbYamlDraft(values.path === undefined ? undefined : String(values.path), raw.files, dirOf(file), where, source, env);
    } else if (engine === 'sqlite') {
      if (values.path === undefined) throw new ConfigError(`${where}: a sqlite database needs "path"`);
      draft = sqliteDraft(String(values.path), dirOf(file), source);
    } else {
      draft = serverDraft(engine, values, where, source);
    }
  }
  if (values.connect_timeout !== undefined) draft.connectTimeoutSeconds = parseSeconds(values.connect_timeout, `${where}.connect_timeout`);
  if (values.statement_timeout !== undefined) draft.statementTimeoutSeconds = parseSeconds(values.statement_timeout, `${where}.statement_timeout`);
  if (raw.ssh !== undefined && raw.ssh !== null) {
    if (draft.engine === 'sqlite' || draft.engine === 'duckdb')
      throw new ConfigError(`${where}.ssh: a ${draft.engine} database is a local file; ssh: is for server engines`);
    draft.ssh = parseSshBlock(raw.ssh, `${where}.ssh`, dirOf(file), env);
  }
  return { ...draft, alias };
}

function serverDraft(engine: Engine, values: Record<string, string | number | undefined>, where: string, source: string): Draft {
  const draft: Draft = { engine, source };
  if (engine === 'oracle') {
    const dsn = values.dsn ?? (values.host !== undefined ? `${values.host}:${values.port ?? DEFAULT_PORTS.oracle}/${values.database ?? ''}` : undefined);
    if (dsn === undefined) throw new ConfigError(`${where}: an oracle database needs "dsn" (host:port/service) or host, port and database`);
    draft.dsn = String(dsn);
  } else {
    draft.host = String(values.host ?? 'localhost');
    if (values.port !== undefined) draft.port = parsePort(values.port, `${where}.port`);
  }
  if (values.database !== undefined) draft.database = String(values.database);
  if (values.user !== undefined) draft.user = String(values.user);
  if (values.password !== undefined) draft.password = String(values.password);
  return draft;
}

function parsePort(value: string | number, where: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new ConfigError(`${where} must be a port number (got ${JSON.stringify(value)})`);
  return port;
}

/**
 * The database name's variable: PREFIX_DATABASE, or the name the official Docker images use
 * (POSTGRES_DB; MYSQL_DATABASE is both). Two different values are an error.
 */
const DATABASE_NAME_VARIABLES: Record<string, string[]> = {
  POSTGRES: ['POSTGRES_DATABASE', 'POSTGRES_DB'],
  MYSQL: ['MYSQL_DATABASE'],
  VERTICA: ['VERTICA_DATABASE', 'VERTICA_DB'],
  CLICKHOUSE: ['CLICKHOUSE_DATABASE', 'CLICKHOUSE_DB'],
};

/** SQLITE_DB (comma-separated), POSTGRES_*, MYSQL_*, ORACLE_*, VERTICA_*, CLICKHOUSE_*. */
export function databasesFromEnv(env: NodeJS.ProcessEnv, cwd: string): Draft[] {
  const drafts: Draft[] = [];
  for (const path of (env.SQLITE_DB ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    drafts.push(sqliteDraft(path, cwd, 'env SQLITE_DB'));
  }
  for (const [engine, prefix] of [
    ['postgres', 'POSTGRES'],
    ['mysql', 'MYSQL'],
    ['vertica', 'VERTICA'],
    ['clickhouse', 'CLICKHOUSE'],
  ] as const) {
    const nameVariables = (DATABASE_NAME_VARIABLES[prefix] ?? []).filter((name) => env[name]);
    const names = new Set(nameVariables.map((name) => env[name]));
    if (names.size > 1) throw new ConfigError(`${nameVariables.join(' and ')} are both set, to different databases; set one of them`);
    const database = nameVariables.length ? env[nameVariables[0]!] : undefined;
    if (env[`${prefix}_HOST`] === undefined && database === undefined) continue;
    const source = `env ${prefix}_*`;
    const draft: Draft = { engine, source, host: env[`${prefix}_HOST`] || 'localhost' };
    const port = env[`${prefix}_PORT`];
    if (port) draft.port = parsePort(port, `env ${prefix}_PORT`);
    if (database) draft.database = database;
    if (env[`${prefix}_USER`]) draft.user = env[`${prefix}_USER`];
    if (env[`${prefix}_PASSWORD`]) draft.password = env[`${prefix}_PASSWORD`];
    drafts.push(draft);
  }
  if (env.ORACLE_DSN) {
    const draft: Draft = { engine: 'oracle', source: 'env ORACLE_*', dsn: env.ORACLE_DSN };
    if (env.ORACLE_USER) draft.user = env.ORACLE_USER;
    if (env.ORACLE_PASSWORD) draft.password = env.ORACLE_PASSWORD;
    drafts.push(draft);
  } else if (env.ORACLE_USER || env.ORACLE_PASSWORD) {
    throw new ConfigError('ORACLE_USER/ORACLE_PASSWORD are set but ORACLE_DSN is not; set ORACLE_DSN=host:port/service');
  }
  return drafts;
}

/**
 * The same text with the password of any URL in it replaced, for messages. The userinfo runs to
 * the last "@" before the host (as the URL parser reads it), so a password holding "@" or ":" is
 * hidden whole.
 */
export function redactUrl(text: string): string {
  return text.replace(/(\b[A-Za-z][A-Za-z0-9+.-]*:\/\/[^:/@\s]*):[^/\s]*@(?=[^@/\s]*(?:[/\s?#]|$))/g, '$1:***@');
}

/** How a database is shown to users and the model: never with its password. */
export function describeDatabase(config: DatabaseConfig): string {
  if (config.engine === 'sqlite') return `sqlite ${config.path}`;
  if (config.engine === 'duckdb') {
    const views = Object.entries(config.files ?? {}).map(([view, path]) => `${view} = ${path}`);
    return `duckdb ${[config.path, views.length ? `views: ${views.join(', ')}` : ''].filter(Boolean).join('; ')}`;
  }
  const user = config.user ? `${config.user}@` : '';
  if (config.engine === 'oracle') return `oracle ${user}${config.dsn}${config.ssh ? ` (${describeSsh(config.ssh)})` : ''}`;
  const port = config.port ?? DEFAULT_PORTS[config.engine];
  const via = config.ssh ? ` (${describeSsh(config.ssh)})` : '';
  return `${config.engine} ${user}${config.host}:${port}${config.database ? `/${config.database}` : ''}${via}`;
}

export function defaultPort(engine: Engine): number | undefined {
  return DEFAULT_PORTS[engine];
}

function dirOf(file: string): string {
  return join(file, '..');
}
