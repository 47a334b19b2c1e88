import type { ValidateFunction } from 'ajv';

/**
 * Validators of the built-in tools' argument schemas, compiled ahead of time: the build
 * (scripts/postbuild.mjs) replaces this module's compiled output with Ajv's standalone code for
 * each schema, keyed by the schema's JSON, because compiling one schema at start-up cost about
 * 10-20 ms of every `quarry tool` call. Here (and so in tests run from the sources) it is empty,
 * and validate.ts compiles schemas when first used, with the same options.
 */
export const PRECOMPILED_VALIDATORS: Record<string, ValidateFunction> = {};
