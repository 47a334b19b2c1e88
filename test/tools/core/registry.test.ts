import { describe, expect, it } from 'vitest';
import { ToolRegistry } from '../../../src/tools/core/registry.js';
import { MAX_TOOL_OUTPUT_BYTES } from '../../../src/tools/core/sanitize.js';
import { success, ToolError, type Tool, type ToolContext } from '../../../src/tools/core/types.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/** A tool that echoes the arguments it received, so tests can see what validation produced. */
function echoTool(overrides: Partial<Tool> = {}): Tool {
  return {
    name: 'echo',
    description: 'echoes its arguments',
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string' },
        count: { type: 'integer', minimum: 1 },
        loud: { type: 'boolean' },
        mode: { type: 'string', enum: ['a', 'b'] },
      },
      required: ['text'],
    },
    readOnly: true,
    run: async (args) => success(JSON.stringify(args)),
    ...overrides,
  };
}

function setup(tool: Tool = echoTool()): { registry: ToolRegistry; context: ToolContext } {
  const registry = new ToolRegistry();
  registry.register(tool);
  return { registry, context: makeToolContext({ workingDir: makeTempDir() }) };
}

describe('ToolRegistry validation', () => {
  it('coerces obvious scalar mistakes: "5" to 5 and "true" to true', async () => {
    const { registry, context } = setup();
    const result = await registry.run('echo', { text: 'hi', count: '5', loud: 'true' }, context);
    expect(result.ok).toBe(true);
    expect(JSON.parse(result.output)).toEqual({ text: 'hi', count: 5, loud: true });
  });

  it('treats null in an optional field as not given', async () => {
    const { registry, context } = setup();
    const result = await registry.run('echo', { text: 'hi', count: null }, context);
    expect(JSON.parse(result.output)).toEqual({ text: 'hi' });
  });

  it('names the field for a value that cannot be coerced', async () => {
    const { registry, context } = setup();
    const result = await registry.run('echo', { text: 'hi', count: 'five' }, context);
    expect(result.ok).toBe(false);
    expect(result.output).toBe('echo: invalid arguments: field "count" must be integer (got "five")');
    expect(result.metadata.error).toBe('invalid_arguments');
  });

  it('reports missing required fields, unknown fields and enum violations together', async () => {
    const { registry, context } = setup();
    const result = await registry.run('echo', { colour: 'red', mode: 'c' }, context);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('missing required field "text"');
    expect(result.output).toContain('unknown field "colour"; allowed fields: text, count, loud, mode');
    expect(result.output).toContain('field "mode" must be one of "a", "b"');
  });

  it('refuses a required field given as null and arguments that are not an object', async () => {
    const { registry, context } = setup();
    expect((await registry.run('echo', { text: null }, context)).output).toContain('field "text" is required and must not be null');
    expect((await registry.run('echo', ['x'], context)).output).toContain('arguments must be a JSON object');
  });

  it('does not run the handler when validation fails', async () => {
    let ran = false;
    const { registry, context } = setup(
      echoTool({
        run: async () => {
          ran = true;
          return success('x');
        },
      }),
    );
    await registry.run('echo', { count: 2 }, context);
    expect(ran).toBe(false);
  });

  it('answers an unknown tool with the list of available ones', async () => {
    const { registry, context } = setup();
    const result = await registry.run('delete_everything', {}, context);
    expect(result).toMatchObject({ ok: false, output: 'unknown tool "delete_everything"; available tools: echo' });
  });

  it('refuses to register the same name twice', () => {
    const registry = new ToolRegistry();
    registry.register(echoTool());
    expect(() => registry.register(echoTool())).toThrow(/registered twice/);
  });
});

describe('ToolRegistry results', () => {
  it('turns a thrown ToolError into a failed result with its message, its kind as metadata.error, and its metadata', async () => {
    const { registry, context } = setup(
      echoTool({
        run: async () => {
          throw new ToolError('nope, because', 'not_found', { reason: 'x' });
        },
      }),
    );
    expect(await registry.run('echo', { text: 'a' }, context)).toEqual({ ok: false, output: 'nope, because', metadata: { error: 'not_found', reason: 'x' } });
  });

  it('turns an unexpected error into a failed result without a stack trace', async () => {
    const { registry, context } = setup(
      echoTool({
        run: async () => {
          throw new TypeError('boom');
        },
      }),
    );
    const result = await registry.run('echo', { text: 'a' }, context);
    expect(result.ok).toBe(false);
    expect(result.output).toBe('echo failed: boom');
    expect(result.output).not.toContain('    at ');
  });

  it('describes file system errors in words', async () => {
    const error = Object.assign(new Error('ENOENT: no such file'), { code: 'ENOENT', path: '/x/y' });
    const { registry, context } = setup(
      echoTool({
        run: async () => {
          throw error;
        },
      }),
    );
    expect((await registry.run('echo', { text: 'a' }, context)).output).toBe('echo failed: no such file or directory: /x/y');
  });

  it('sanitises control bytes and invalid UTF-8 in string and byte outputs', async () => {
    const bytes = Buffer.concat([Buffer.from('ok\t\n\x00\x1b[31m'), Buffer.from([0xff, 0xc3]), Buffer.from('é\r\n')]);
    const { registry, context } = setup(echoTool({ run: async () => success(bytes) }));
    const result = await registry.run('echo', { text: 'a' }, context);
    expect(result.output).toBe('ok\t\n\\x00\\x1b[31m\\xff\\xc3é\\r\n');
  });

  it('caps output at 64 KiB with a marker that says what was cut and how to see more', async () => {
    const big = 'line of text\n'.repeat(10_000); // 130,000 bytes
    const { registry, context } = setup(echoTool({ run: async () => success(big, { moreHint: 'read with start_line' }) }));
    const result = await registry.run('echo', { text: 'a' }, context);
    expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(MAX_TOOL_OUTPUT_BYTES);
    expect(result.output).toMatch(/\[output cut: showing the first \d+ of 130000 bytes; \d+ bytes not shown\. To see more, read with start_line\.\]$/);
    expect(result.output.startsWith('line of text\nline of text\n')).toBe(true);
    expect(result.metadata).toMatchObject({ outputCut: true, outputBytes: 130_000 });
  });

  it('does not run a call whose signal is already aborted', async () => {
    let ran = false;
    const registry = new ToolRegistry();
    registry.register(
      echoTool({
        run: async () => {
          ran = true;
          return success('');
        },
      }),
    );
    const controller = new AbortController();
    controller.abort();
    const result = await registry.run('echo', { text: 'a' }, makeToolContext({ workingDir: makeTempDir(), signal: controller.signal }));
    expect(ran).toBe(false);
    expect(result).toMatchObject({ ok: false, metadata: { error: 'cancelled' } });
  });
});
