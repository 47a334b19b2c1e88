import type { ValidateFunction } from 'ajv';

/**
 * Validators of the published schemas (schemas/*.schema.json), compiled ahead of time: the build
 * (scripts/postbuild.mjs) replaces this module's compiled output with Ajv's standalone code for
 * each schema, keyed by the schema's JSON, so that reading a profile or config.yaml neither loads
 * Ajv nor compiles a schema. Here (and so in tests run from the sources) it is empty, and
 * document-schemas.ts compiles a schema when first used, with the same options.
 */
export const PRECOMPILED_DOCUMENT_VALIDATORS: Record<string, ValidateFunction> = {};
