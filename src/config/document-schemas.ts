import type { ErrorObject, ValidateFunction } from 'ajv';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ConfigError } from '../errors.js';
import { packageRoot } from './home.js';
import { PRECOMPILED_DOCUMENT_VALIDATORS } from './precompiled-schemas.js';

/**
 * The published JSON Schemas of quarry's own files (schemas/*.schema.json, shipped in the
 * package so that editors complete and check the files): every loader checks a document's
 * structure (types, unknown keys, allowed values) against its schema here, before its own checks
 * of meaning (paths exist, regular expressions compile, ...). A mismatch is one line naming the
 * file, the key path and what is allowed.
 */

export const DOCUMENT_SCHEMAS = [
  'config',
  'profile',
  'knowledge-rules',
  'knowledge-glossary',
  'knowledge-metrics',
  'knowledge-query',
  'knowledge-note',
  'eval-suite',
] as const;
export type DocumentSchemaName = (typeof DOCUMENT_SCHEMAS)[number];

/**
 * Ajv's options for documents: no coercion and no defaults, so a document is checked as written;
 * verbose, so that an error carries the schema around it (the allowed keys, the description).
 */
export const DOCUMENT_AJV_OPTIONS = { allErrors: false, strict: false, validateSchema: false, verbose: true } as const;

type Schema = Record<string, unknown>;
type ErrorKind = new (message: string) => Error;

const loaded = new Map<DocumentSchemaName, ValidateFunction>();

export function schemaFile(name: DocumentSchemaName): string {
  return join(packageRoot(), 'schemas', `${name}.schema.json`);
}

/** The schema and its validator: compiled by the build (scripts/postbuild.mjs) when the file is unchanged, else by Ajv now. */
function validatorOf(name: DocumentSchemaName): ValidateFunction {
  let validate = loaded.get(name);
  if (!validate) {
    let schema: Schema;
    try {
      schema = JSON.parse(readFileSync(schemaFile(name), 'utf8')) as Schema;
    } catch (error) {
      // The package ships schemas/ (package.json "files"); without it quarry is not installed whole.
      throw new Error(`cannot read ${schemaFile(name)} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); reinstall quarry`);
    }
    validate = PRECOMPILED_DOCUMENT_VALIDATORS[JSON.stringify(schema)];
    if (!validate) {
      // Synchronous, since profiles and config files are read synchronously; ajv is CommonJS.
      const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
      validate = new Ajv(DOCUMENT_AJV_OPTIONS).compile(schema);
    }
    loaded.set(name, validate);
  }
  return validate;
}

/** Key path segments as the user reads them: `databases.shop.ssh`, `jump[0]`. */
export function keyPath(segments: readonly string[]): string {
  return segments.reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

function describeValue(value: unknown): string {
  const text = value === undefined ? 'nothing' : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

function valueAt(document: unknown, segments: readonly string[]): unknown {
  let node = document;
  for (const part of segments) node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

/**
 * The error worth showing when an anyOf's branches fail differently: the deepest in the document,
 * and at one depth a key that is unknown or missing (the mapping branch was meant) over a wrong
 * type or value; combinators say nothing themselves.
 */
function mostSpecific(errors: readonly ErrorObject[]): ErrorObject | undefined {
  const useful = errors.filter((error) => !['anyOf', 'oneOf', 'allOf', 'if'].includes(error.keyword));
  const rank = (error: ErrorObject) =>
    (error.instancePath === '' ? 0 : error.instancePath.split('/').length) * 2 + (['additionalProperties', 'required'].includes(error.keyword) ? 1 : 0);
  return useful.reduce<ErrorObject | undefined>((best, error) => (best === undefined || rank(error) > rank(best) ? error : best), undefined);
}

/** One line for an Ajv error: where, the key path, what is wrong and what is allowed. */
export function describeSchemaError(error: ErrorObject, document: unknown, where: string, pathName = keyPath): string {
  const segments = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const parent = (error.parentSchema ?? {}) as Schema;
  const at = (extra?: string) => {
    const path = pathName(extra === undefined ? segments : [...segments, extra]);
    return path ? `"${path}"` : 'the document';
  };
  const within = segments.length ? `: ${pathName(segments)}` : '';
  const got = `, got ${describeValue(valueAt(document, segments))}`;
  switch (error.keyword) {
    case 'additionalProperties': {
      const key = (error.params as { additionalProperty: string }).additionalProperty;
      const allowed = Object.keys((parent.properties as Schema | undefined) ?? {});
      return `${where}${within}: unknown key "${key}"; allowed keys: ${allowed.join(', ')}`;
    }
    case 'required':
      return `${where}${within}: missing required key "${(error.params as { missingProperty: string }).missingProperty}"`;
    case 'enum':
    case 'const': {
      const values =
        error.keyword === 'enum' ? (error.params as { allowedValues: unknown[] }).allowedValues : [(error.params as { allowedValue: unknown }).allowedValue];
      const shown = values.filter((value) => value !== null).map((value) => (typeof value === 'string' ? value : JSON.stringify(value)));
      return `${where}: ${at()} is ${describeValue(valueAt(document, segments))}; allowed values: ${shown.join(', ')}`;
    }
    case 'type': {
      const types = String((error.params as { type: string | string[] }).type)
        .split(',')
        .filter((type) => type !== 'null');
      const items = (parent.items as Schema | undefined)?.type;
      const list = items === 'string' ? 'a list of strings' : Array.isArray(items) && items.includes('string') ? 'a list of text' : 'a list';
      const names = types.map(
        (type) => ({ object: 'a mapping', array: list, integer: 'a whole number', number: 'a number', string: 'text', boolean: 'true or false' })[type] ?? type,
      );
      // The key's description says what it holds (e.g. a command's program and arguments).
      const about = typeof parent.description === 'string' ? ` (${parent.description.replace(/\.$/, '')})` : '';
      return `${where}: ${at()} must be ${names.join(' or ')}${got}${about}`;
    }
    case 'propertyNames': {
      const name = (error.params as { propertyName: string }).propertyName;
      return `${where}${within}: the key "${name}" is not allowed (${String(parent.description ?? 'see the schema')})`;
    }
    default:
      return `${where}: ${at()} ${error.message ?? 'is invalid'}${got}`;
  }
}

/**
 * Checks a parsed document against schemas/NAME.schema.json; a mismatch is a `Kind` error (a
 * ConfigError by default) whose message starts with `where` (the file). `pathName` renders the
 * key path (eval suites name their questions by number).
 */
export function checkDocument(
  name: DocumentSchemaName,
  document: unknown,
  where: string,
  Kind: ErrorKind = ConfigError,
  pathName?: (segments: readonly string[]) => string,
): void {
  const validate = validatorOf(name);
  if (validate(document)) return;
  const error = mostSpecific(validate.errors ?? []);
  throw new Kind(error ? describeSchemaError(error, document, where, pathName) : `${where}: does not match schemas/${name}.schema.json`);
}
