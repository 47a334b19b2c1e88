import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runQuarry } from '../../support/cli.js';

/**
 * The build compiles the built-in tools' validators ahead of time (scripts/postbuild.mjs). They
 * must exist for every built-in tool and behave exactly like Ajv compiling the schema at run time:
 * the same verdict, the same errors, the same coercions and defaults applied to the arguments.
 */

interface BuiltModules {
  PRECOMPILED_VALIDATORS: Record<string, (data: unknown) => boolean>;
  AJV_OPTIONS: Record<string, unknown>;
  fullSchema: (schema: unknown) => Record<string, unknown>;
  allBuiltinTools: () => { name: string; parameters: { properties: Record<string, { type?: string; enum?: unknown[] }> } }[];
  databaseValidationParameters: (several: boolean) => { properties: Record<string, unknown> };
}

async function built(): Promise<BuiltModules> {
  const dist = `${REPO_ROOT}dist`;
  const { PRECOMPILED_VALIDATORS } = await import(`${dist}/tools/core/precompiled-validators.js`);
  const { AJV_OPTIONS, fullSchema } = await import(`${dist}/tools/core/validate.js`);
  const { allBuiltinTools } = await import(`${dist}/agent/toolset.js`);
  const { databaseValidationParameters } = await import(`${dist}/tools/database/tool.js`);
  return { PRECOMPILED_VALIDATORS, AJV_OPTIONS, fullSchema, allBuiltinTools, databaseValidationParameters };
}

const SAMPLES: unknown[] = ['', 'x', '5', '-1', '0', 'true', 'false', 5, 0, -3, 2.5, 1001, true, false, null, [], ['a'], {}, { a: 1 }];

describe('precompiled validators', () => {
  it('cover every built-in tool and both shapes of the database tools, and agree with run-time compilation on many argument sets', async () => {
    const { PRECOMPILED_VALIDATORS, AJV_OPTIONS, fullSchema, allBuiltinTools, databaseValidationParameters } = await built();
    const ajv = new Ajv(AJV_OPTIONS);
    let compared = 0;
    const databaseShapes = [false, true].map((several) => ({
      name: several ? 'database (several)' : 'database (one)',
      parameters: databaseValidationParameters(several),
    }));
    for (const tool of [...allBuiltinTools(), ...databaseShapes]) {
      const schema = fullSchema(tool.parameters);
      const precompiled = PRECOMPILED_VALIDATORS[JSON.stringify(schema)] as ((data: unknown) => boolean) & { errors?: unknown };
      expect(precompiled, tool.name).toBeTypeOf('function');
      const runtime = ajv.compile(schema);
      const fields = Object.keys(tool.parameters.properties);
      let seed = tool.name.length;
      const random = (n: number) => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed % n;
      };
      for (let round = 0; round < 400; round++) {
        const args: Record<string, unknown> = {};
        for (const field of fields) if (random(3) > 0) args[field] = SAMPLES[random(SAMPLES.length)];
        if (random(10) === 0) args.unknown_field = 1;
        const a = structuredClone(args);
        const b = structuredClone(args);
        const verdict = precompiled(a);
        expect(verdict, `${tool.name} ${JSON.stringify(args)}`).toBe(runtime(b));
        expect(a).toEqual(b); // coercions and defaults alike
        expect(precompiled.errors ?? null).toEqual(runtime.errors ?? null);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(4000);
  });
});

describe('database tools in the built CLI', () => {
  it("check calls with the build's checker, valid and invalid alike; an unknown alias names the configured ones", async () => {
    const ok = await runQuarry(['tool', 'sqlite', '--db', 'fixtures/sample.db', '--args', JSON.stringify({ operation: 'query', sql: 'SELECT 1 AS one' })]);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('│ one │');
    const bad = await runQuarry(['tool', 'sqlite', '--db', 'fixtures/sample.db', '--args', JSON.stringify({ operation: 'query', row_limit: 'many' })]);
    expect(bad.code).toBe(2); // invalid arguments are a usage error
    expect(bad.stderr).toContain('invalid arguments: field "row_limit" must be integer (got "many")');
    const alias = await runQuarry([
      'tool',
      'sqlite',
      '--db',
      'a=fixtures/sample.db',
      '--db',
      'b=fixtures/sample.db',
      '--args',
      JSON.stringify({ database: 'c', operation: 'query', sql: 'SELECT 1' }),
    ]);
    expect(alias.code).toBe(2);
    expect(alias.stderr).toContain('sqlite: no database "c"; configured: a, b');
  });
});
