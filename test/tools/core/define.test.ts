import { describe, expect, expectTypeOf, it } from 'vitest';
import { toolParameters, type ArgsOf } from '../../../src/tools/core/define.js';
import type { DatabaseArgs } from '../../../src/tools/database/tool.js';

/**
 * Argument types come from each tool's schema (src/tools/core/define.ts): the type-level checks run
 * in `npm run typecheck`, the schema's JSON here.
 */
describe('toolParameters and ArgsOf', () => {
  const parameters = toolParameters(
    {
      path: { type: 'string', description: 'p' },
      mode: { type: 'string', enum: ['a', 'b'] },
      count: { type: 'integer', minimum: 1 },
      flags: { type: 'array', items: { type: 'string' } },
      all: { type: 'boolean' },
    },
    ['path', 'mode'],
  );

  it('writes the object schema as the tools always had it: type, properties, required, no other keys', () => {
    expect(JSON.stringify(parameters)).toBe(
      '{"type":"object","properties":{"path":{"type":"string","description":"p"},"mode":{"type":"string","enum":["a","b"]},' +
        '"count":{"type":"integer","minimum":1},"flags":{"type":"array","items":{"type":"string"}},"all":{"type":"boolean"}},' +
        '"required":["path","mode"],"additionalProperties":false}',
    );
  });

  it("gives the handler required and optional fields of the schema's types", () => {
    expectTypeOf<ArgsOf<typeof parameters>>().toEqualTypeOf<{ path: string; mode: 'a' | 'b'; count?: number; flags?: string[]; all?: boolean }>();
    expectTypeOf<DatabaseArgs['operation']>().toEqualTypeOf<
      'query' | 'list_tables' | 'describe' | 'export_query' | 'search' | 'find_values' | 'sample' | 'profile' | 'explain' | 'validate'
    >();
    expectTypeOf<DatabaseArgs['database']>().toEqualTypeOf<string | undefined>();
  });
});
