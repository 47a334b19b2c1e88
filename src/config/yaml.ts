import { readFileSync, statSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '../errors.js';
import { checkDocument, type DocumentSchemaName } from './document-schemas.js';

/**
 * Reading YAML files whose top level is a mapping with known keys: config.yaml, a `--databases`
 * file and profiles. Every mistake is one line naming the file; `Kind` is the error class the
 * caller reports with (ConfigError by default, ProfileError for profiles).
 */

type ErrorKind = new (message: string) => Error;

export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The text of a YAML file. `flag` names the option or variable the user gave the path with
 * (`--config`, `--databases`, QUARRY_DB_CONFIG): such a file must exist. Without one (the default
 * `$QUARRY_HOME/config.yaml`) a missing file means "nothing configured" and gives undefined.
 * A folder or an unreadable file is an error naming the flag, never a raw EISDIR.
 */
export function readYamlText(path: string, flag: string | undefined): string | undefined {
  const named = flag ? `${flag} ${path}` : path;
  let stats;
  try {
    stats = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !flag) return undefined;
    throw new ConfigError(code === 'ENOENT' ? `${named}: file not found` : `${named}: cannot read it (${code ?? (error as Error).message})`);
  }
  if (stats.isDirectory()) throw new ConfigError(`${named}: is a folder; expected a YAML file`);
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${named}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** The parsed document; invalid YAML is an error naming `where` and the parser's first line. */
export function parseYamlDocument(text: string, where: string, Kind: ErrorKind = ConfigError): unknown {
  try {
    return parseYaml(text);
  } catch (error) {
    throw new Kind(`${where}: invalid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
}

/** An unknown key is an error naming it and the allowed ones, so a typo (`mcp_server:`) is not silently ignored. */
export function checkKnownKeys(mapping: Record<string, unknown>, where: string, allowed: readonly string[], Kind: ErrorKind = ConfigError): void {
  for (const key of Object.keys(mapping)) {
    if (!allowed.includes(key)) throw new Kind(`${where}: unknown key "${key}"; allowed keys: ${allowed.join(', ')}`);
  }
}

export interface MappingRules {
  /** The top-level keys allowed. */
  keys: readonly string[];
  /** What follows `where: ` when the document is not a mapping. */
  notMapping: string;
  Kind?: ErrorKind;
  /** The published schema (schemas/NAME.schema.json) the whole document is checked against, after the top-level keys. */
  schema?: DocumentSchemaName;
}

/**
 * The one reader of a YAML mapping with known keys: parses `text`, requires a mapping at the top
 * level and checks its keys. An empty document gives an empty mapping.
 */
export function readYamlMapping(text: string, where: string, rules: MappingRules): Record<string, unknown> {
  const document = parseYamlDocument(text, where, rules.Kind);
  return checkYamlMapping(document ?? {}, where, rules);
}

/** The checks of readYamlMapping on a document already parsed (the build's parse of the built-in profiles). */
export function checkYamlMapping(document: unknown, where: string, rules: MappingRules): Record<string, unknown> {
  const Kind = rules.Kind ?? ConfigError;
  if (!isMapping(document)) throw new Kind(`${where}: ${rules.notMapping}`);
  checkKnownKeys(document, where, rules.keys, Kind);
  if (rules.schema) checkDocument(rules.schema, document, where, Kind);
  return document;
}

/** Replaces `${VAR}` with the environment's value; an unset variable is an error naming it and where. */
export function interpolateEnv(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(/\$\{([^}]*)\}/g, (_match, name: string) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ConfigError(`${where}: "\${${name}}" is not a valid variable reference`);
    const resolved = env[name];
    if (resolved === undefined) throw new ConfigError(`${where}: environment variable ${name} is not set (referenced as \${${name}})`);
    return resolved;
  });
}
