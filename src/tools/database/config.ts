import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, interpolateEnv } from '../../config.js';
import { ENGINES, type DatabaseConfig, type Engine } from './types.js';
import { duckdbDraft, duckdbYamlDraft, isDuckdbTarget, renameSingleView } from './duckdb-config.js';

export { ConfigError };

/**
 * Where databases come from (SPEC §6): `--db [ALIAS=]TARGET` flags, a YAML file (`--databases`
 * or `QUARRY_DB_CONFIG`), the `databases:` key of `$QUARRY_HOME/config.yaml`, and environment
 * variables. Every mistake is a ConfigError that says what to fix; passwords never appear in one.
 */

export const DEFAULT_CONNECT_TIMEOUT_SECONDS = 10;
export const DEFAULT_STATEMENT_TIMEOUT_SECONDS = 120;
const DEFAULT_PORTS: Partial<Record<Engine, number>> = { postgres: 5432, mysql: 3306, vertica: 5433, oracle: 1521 };
const ALIAS_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]*$/;
const URL_SCHEMES: Record<string, Engine> = {
  postgres: 'postgres', postgresql: 'postgres', mysql: 'mysql', mariadb: 'mysql', oracle: 'oracle', vertica: 'vertica',
};
const YAML_TYPES: Record<string, Engine> = { ...URL_SCHEMES, sqlite: 'sqlite', sqlite3: 'sqlite', duckdb: 'duckdb' };
const YAML_KEYS = ['type', 'url', 'path', 'host', 'port', 'database', 'user', 'password', 'dsn', 'connect_timeout', 'statement_timeout', 'files'] as const;

export interface DatabaseConfigSources {
  /** `--db` values, in order. */
  dbFlags?: readonly string[];
  /** `--databases FILE`; falls back to env QUARRY_DB_CONFIG. */
  databasesFile?: string;
  /** `$QUARRY_HOME/config.yaml`, whose `databases:` key is read when the file exists. */
  configFile?: string;
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
  const file = sources.databasesFile ?? sources.env.QUARRY_DB_CONFIG;
  if (file) {
    const path = resolve(sources.cwd, file);
    if (!existsSync(path)) throw new ConfigError(`database config file not found: ${path}`);
    drafts.push(...parseDatabasesYaml(readFileSync(path, 'utf8'), path, sources.env, { required: true }));
  }
  if (sources.configFile && existsSync(sources.configFile)) {
    drafts.push(...parseDatabasesYaml(readFileSync(sources.configFile, 'utf8'), sources.configFile, sources.env, { required: false }));
  }
  drafts.push(...databasesFromEnv(sources.env, sources.cwd));
  return finish(drafts);
}

function finish(drafts: Draft[]): DatabaseConfig[] {
  const seen = new Map<string, string>();
  return drafts.map((draft) => {
    const alias = draft.alias ?? defaultAlias(draft);
    if (!ALIAS_PATTERN.test(alias)) {
      throw new ConfigError(`invalid database alias "${alias}" (${draft.source}): use letters, digits, "_", "-" or ".", starting with a letter`);
    }
    const earlier = seen.get(alias);
    if (earlier) {
      throw new ConfigError(`database alias "${alias}" is configured twice (${earlier} and ${draft.source}); give one of them another name with --db ALIAS=TARGET`);
    }
    seen.set(alias, draft.source);
    const { connectTimeoutSeconds, statementTimeoutSeconds, alias: _alias, ...rest } = draft;
    return {
      ...rest,
      alias,
      connectTimeoutMs: (connectTimeoutSeconds ?? DEFAULT_CONNECT_TIMEOUT_SECONDS) * 1000,
      statementTimeoutMs: (statementTimeoutSeconds ?? DEFAULT_STATEMENT_TIMEOUT_SECONDS) * 1000,
    };
  });
}

/** The file's name without extension, or the database name, made into a valid alias. */
function defaultAlias(draft: Draft): string {
  const raw = draft.engine === 'duckdb' ? (draft.path ? basename(draft.path, extname(draft.path)) : Object.keys(draft.files ?? {})[0] ?? 'duckdb')
    : draft.engine === 'sqlite' ? basename(draft.path ?? 'sqlite', extname(draft.path ?? '')) : draft.database ?? draft.dsn?.split('/').pop() ?? draft.engine;
  const cleaned = raw.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z]/.test(cleaned) ? cleaned : `db_${cleaned}`;
}

/** `[ALIAS=]TARGET`: a URL (postgres://, mysql://, oracle://, vertica://), `sqlite:PATH` or a SQLite file path. */
export function parseDbFlag(flag: string, cwd: string): Draft {
  const source = `--db ${redactUrl(flag)}`;
  const equals = flag.indexOf('=');
  const maybeAlias = equals > 0 ? flag.slice(0, equals) : '';
  const hasAlias = maybeAlias !== '' && ALIAS_PATTERN.test(maybeAlias);
  const target = hasAlias ? flag.slice(equals + 1) : flag;
  if (!target) throw new ConfigError(`${source}: missing target after "="; expected ALIAS=URL or ALIAS=PATH`);
  const draft = parseTarget(target, cwd, source);
  return hasAlias ? { ...renameSingleView(draft, maybeAlias), alias: maybeAlias } : draft;
}

function parseTarget(target: string, cwd: string, source: string): Draft {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(target)?.[1]?.toLowerCase();
  if (isDuckdbTarget(target)) return duckdbDraft(target, cwd, source);
  if (target.toLowerCase().startsWith('sqlite:')) {
    const rest = target.slice('sqlite:'.length);
    // sqlite:///abs/path and sqlite://rel/path as well as sqlite:path
    const path = rest.startsWith('//') ? rest.slice(2) : rest;
    return sqliteDraft(path, cwd, source);
  }
  if (scheme) {
    const engine = URL_SCHEMES[scheme];
    if (!engine) {
      throw new ConfigError(`${source}: unsupported database URL scheme "${scheme}://"; use postgres://, mysql://, oracle://, vertica://, sqlite:PATH or the path of a SQLite file`);
    }
    return urlDraft(target, engine, source);
  }
  return sqliteDraft(target, cwd, source);
}

function sqliteDraft(path: string, cwd: string, source: string): Draft {
  if (!path) throw new ConfigError(`${source}: missing SQLite file path`);
  const absolute = resolve(cwd, path);
  if (!existsSync(absolute)) throw new ConfigError(`${source}: no such SQLite database file: ${absolute}`);
  if (!statSync(absolute).isFile()) throw new ConfigError(`${source}: not a file: ${absolute}`);
  return { engine: 'sqlite', path: absolute, source };
}

function urlDraft(target: string, engine: Engine, source: string): Draft {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new ConfigError(`${source}: not a valid URL; expected e.g. ${engine}://user:password@host:port/database`);
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  const draft: Draft = { engine, source, host: decodeURIComponent(url.hostname) || 'localhost' };
  if (url.port) draft.port = Number(url.port);
  if (url.username) draft.user = decodeURIComponent(url.username);
  if (url.password) draft.password = decodeURIComponent(url.password);
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

export function parseDatabasesYaml(text: string, file: string, env: NodeJS.ProcessEnv, options: { required: boolean }): Draft[] {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`${file}: invalid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  const databases = isRecord(document) ? document.databases : undefined;
  if (databases === undefined || databases === null) {
    if (options.required) throw new ConfigError(`${file}: no "databases:" key; expected databases: {alias: {type, ...}}`);
    return [];
  }
  if (!isRecord(databases)) throw new ConfigError(`${file}: "databases" must be a mapping of alias to settings`);
  return Object.entries(databases).map(([alias, raw]) => yamlEntry(alias, raw, file, env));
}

function yamlEntry(alias: string, raw: unknown, file: string, env: NodeJS.ProcessEnv): Draft {
  const where = `${file}: databases.${alias}`;
  if (!isRecord(raw)) throw new ConfigError(`${where} must be a mapping with type and connection settings`);
  const values: Record<string, string | number> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!(YAML_KEYS as readonly string[]).includes(key)) throw new ConfigError(`${where}: unknown key "${key}"; allowed keys: ${YAML_KEYS.join(', ')}`);
    if (typeof value === 'string') values[key] = interpolateEnv(value, env, `${where}.${key}`);
    else if (typeof value === 'number') values[key] = value;
    else if (key === 'files') continue;
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

/** SQLITE_DB (comma-separated), POSTGRES_*, MYSQL_*, ORACLE_*, VERTICA_*. */
export function databasesFromEnv(env: NodeJS.ProcessEnv, cwd: string): Draft[] {
  const drafts: Draft[] = [];
  for (const path of (env.SQLITE_DB ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
    drafts.push(sqliteDraft(path, cwd, 'env SQLITE_DB'));
  }
  for (const [engine, prefix] of [['postgres', 'POSTGRES'], ['mysql', 'MYSQL'], ['vertica', 'VERTICA']] as const) {
    if (env[`${prefix}_HOST`] === undefined && env[`${prefix}_DATABASE`] === undefined) continue;
    const source = `env ${prefix}_*`;
    const draft: Draft = { engine, source, host: env[`${prefix}_HOST`] || 'localhost' };
    const port = env[`${prefix}_PORT`];
    if (port) draft.port = parsePort(port, `env ${prefix}_PORT`);
    if (env[`${prefix}_DATABASE`]) draft.database = env[`${prefix}_DATABASE`];
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

/** The same URL with any password replaced, for messages. */
export function redactUrl(text: string): string {
  return text.replace(/(:\/\/[^:/@\s]*):[^@\s]*@/g, '$1:***@');
}

/** How a database is shown to users and the model: never with its password. */
export function describeDatabase(config: DatabaseConfig): string {
  if (config.engine === 'sqlite') return `sqlite ${config.path}`;
  if (config.engine === 'duckdb') {
    const views = Object.entries(config.files ?? {}).map(([view, path]) => `${view} = ${path}`);
    return `duckdb ${[config.path, views.length ? `views: ${views.join(', ')}` : ''].filter(Boolean).join('; ')}`;
  }
  const user = config.user ? `${config.user}@` : '';
  if (config.engine === 'oracle') return `oracle ${user}${config.dsn}`;
  const port = config.port ?? DEFAULT_PORTS[config.engine];
  return `${config.engine} ${user}${config.host}:${port}${config.database ? `/${config.database}` : ''}`;
}

export function defaultPort(engine: Engine): number | undefined {
  return DEFAULT_PORTS[engine];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function dirOf(file: string): string {
  return join(file, '..');
}
