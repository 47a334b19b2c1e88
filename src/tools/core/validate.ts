import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { PRECOMPILED_VALIDATORS } from './precompiled-validators.js';
import type { ToolParameters } from './types.js';

/**
 * Argument validation against a tool's JSON schema. Obvious scalar mistakes are coerced
 * ("5" → 5, "true" → true, 5 → "5"); `null` for an optional field means "not given"; anything
 * else is an error that names the field, written for the model to fix its call.
 */

// validateSchema: false skips checking each schema against the JSON Schema meta-schema, whose
// own compilation cost about 40 ms on every start; tool schemas are ours or an MCP server's,
// and a server's `$schema` (say draft 2020-12, which this Ajv class does not load) is then ignored.
export const AJV_OPTIONS = { allErrors: true, coerceTypes: true, useDefaults: true, strict: false, validateSchema: false } as const;
let ajv: Promise<Ajv> | undefined;

/** Ajv itself loads only for schemas that were not compiled ahead of time (databases, MCP servers). */
async function loadAjv(): Promise<Ajv> {
  // ajv is CommonJS: bundled, its exports may arrive under `default`.
  const loaded = (await import('ajv')) as typeof import('ajv') & { default?: typeof import('ajv') };
  const AjvClass = loaded.Ajv ?? loaded.default!.Ajv;
  return new AjvClass(AJV_OPTIONS);
}
const compiled = new WeakMap<ToolParameters, ValidateFunction>();

/** The schema a tool's parameters are checked against (also the key of its precompiled validator). */
export function fullSchema(schema: ToolParameters): Record<string, unknown> {
  return { additionalProperties: false, ...schema };
}

async function validatorFor(schema: ToolParameters): Promise<ValidateFunction> {
  let validate = compiled.get(schema);
  if (!validate) {
    const full = fullSchema(schema);
    validate = PRECOMPILED_VALIDATORS[JSON.stringify(full)];
    if (!validate) {
      ajv ??= loadAjv();
      validate = (await ajv).compile(full);
    }
    compiled.set(schema, validate);
  }
  return validate;
}

export type ValidationOutcome = { ok: true; args: Record<string, unknown> } | { ok: false; message: string };

function fieldName(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return path ? `${path}.${missing}` : missing;
  }
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return path ? `${path}.${extra}` : extra;
  }
  return path || '(arguments)';
}

function describe(error: ErrorObject, schema: ToolParameters): string {
  const field = fieldName(error);
  switch (error.keyword) {
    case 'required':
      return `missing required field "${field}"`;
    case 'additionalProperties':
      return `unknown field "${field}"; allowed fields: ${Object.keys(schema.properties).join(', ')}`;
    case 'enum':
      return `field "${field}" must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'type':
      return `field "${field}" must be ${(error.params as { type: string }).type}`;
    default:
      return `field "${field}" ${error.message ?? 'is invalid'}`;
  }
}

function formatValue(args: Record<string, unknown>, error: ErrorObject): string {
  if (error.keyword === 'required' || error.keyword === 'additionalProperties') return '';
  const key = error.instancePath.split('/')[1];
  if (key === undefined || !(key in args)) return '';
  const text = JSON.stringify(args[key]) ?? String(args[key]);
  return ` (got ${text.length > 60 ? `${text.slice(0, 57)}...` : text})`;
}

export async function validateArguments(schema: ToolParameters, input: unknown): Promise<ValidationOutcome> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { ok: false, message: `arguments must be a JSON object with fields: ${Object.keys(schema.properties).join(', ')}` };
  }
  const required = new Set(schema.required ?? []);
  // Models often send null for optional fields they mean to leave out.
  const args: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === null && required.has(key)) return { ok: false, message: `invalid arguments: field "${key}" is required and must not be null` };
    if (value === null && key in schema.properties) continue;
    args[key] = value;
  }
  const validate = await validatorFor(schema);
  const original = structuredClone(args);
  if (validate(args)) return { ok: true, args };
  const errors = (validate.errors ?? []).filter((e) => e.keyword !== 'if');
  const messages = [...new Set(errors.map((e) => describe(e, schema) + formatValue(original, e)))];
  return { ok: false, message: `invalid arguments: ${messages.join('; ')}` };
}
