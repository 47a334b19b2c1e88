import type { JsonSchema, Tool, ToolParameters } from './types.js';

/**
 * A tool's argument type, derived from its JSON schema (made with toolParameters below), so that
 * the schema the model sees and the arguments the handler reads cannot drift apart: the registry
 * checks calls against the schema before run() (src/tools/core/validate.ts), and run() gets exactly
 * that type. Covers what the tools' schemas use: string, integer, number, boolean, enum and
 * arrays of them.
 */
export type SchemaValue<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { type: 'string' }
    ? string
    : S extends { type: 'integer' | 'number' }
      ? number
      : S extends { type: 'boolean' }
        ? boolean
        : S extends { type: 'array'; items: infer I }
          ? SchemaValue<I>[]
          : unknown;

type RequiredKeys<P> = P extends { required: readonly (infer R)[] } ? R : never;

type Flatten<T> = { [K in keyof T]: T[K] };

/** A property's schema (one the schema may leave out, like chart's "database", is optional here anyway). */
type PropertySchema<P extends { properties: object }, K extends keyof P['properties']> = Exclude<P['properties'][K], undefined>;

export type ArgsOf<P extends { properties: object }> = Flatten<
  { [K in keyof P['properties'] & RequiredKeys<P>]: SchemaValue<PropertySchema<P, K>> } & {
    [K in Exclude<keyof P['properties'], RequiredKeys<P>>]?: SchemaValue<PropertySchema<P, K>>;
  }
>;

/**
 * A tool whose run() and callIsReadOnly() take the arguments its schema describes; registered
 * as any other tool (the registry has validated the arguments against that schema by then).
 */
export function defineTool<const P extends ToolParameters>(tool: Omit<Tool<ArgsOf<P>>, 'parameters'> & { parameters: P }): Tool {
  return tool as unknown as Tool;
}

/**
 * A tool's argument schema: an object with these properties, of which `required` must be given,
 * and no others. Its literal types are kept (as if written `as const`), for ArgsOf.
 */
export function toolParameters<const Properties extends Record<string, JsonSchema>, const Required extends readonly (keyof Properties & string)[]>(
  properties: Properties,
  required: Required,
) {
  return { type: 'object', properties, required, additionalProperties: false } as const satisfies ToolParameters;
}
