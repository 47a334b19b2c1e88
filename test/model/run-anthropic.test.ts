import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startAnthropicServer, type FakeServer } from '../support/fake-openai.js';

/** The loop through the real Anthropic SDK against a loopback server speaking the Messages streaming protocol. */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('quarry with Anthropic', () => {
  it('streams text and tool_use blocks, sends tool results back in a user turn, counts cached tokens', async () => {
    server = await startAnthropicServer([
      {
        text: 'Let me check.',
        toolCalls: [
          { id: 'toolu_1', name: 'read', arguments: '{"path": "notes.txt"}' },
          { id: 'toolu_2', name: 'list', arguments: '{"path": "."}' },
        ],
        usage: { input: 120, output: 30, cached: 100 },
      },
      { status: 529, message: 'overloaded' },
      { text: 'The notes say alpha.', usage: { input: 200, output: 10 } },
    ]);
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    writeFileSync(join(work, 'notes.txt'), 'alpha\n');
    const env = cliEnv(home, { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: server.url.replace(/\/v1$/, '') });
    const result = await runCli(['--model', 'anthropic/claude-sonnet-4-5', '-w', work, '--format', 'json', 'what do the notes say?'], { env });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({
      status: 'completed',
      text: 'The notes say alpha.',
      usage: { input_tokens: 320, output_tokens: 40, cached_tokens: 100 },
      model: 'anthropic/claude-sonnet-4-5',
    });
    expect(server.requests).toHaveLength(3);
    const first = server.requests[0];
    expect(first?.path).toBe('/v1/messages');
    expect(first?.headers['x-api-key']).toBe('test-key');
    expect(first?.body).toMatchObject({ model: 'claude-sonnet-4-5', stream: true, max_tokens: 8192 });
    expect(String(first?.body.system)).toContain('careful data analyst');
    expect((first?.body.tools as { name: string; input_schema: unknown }[] | undefined)?.find((tool) => tool.name === 'read')?.input_schema).toMatchObject({
      type: 'object',
    });
    const third = server.requests[2]?.body.messages as { role: string; content: { type: string; tool_use_id?: string; content?: string; input?: unknown }[] }[];
    expect(third.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(third[1]?.content.map((block) => block.type)).toEqual(['text', 'tool_use', 'tool_use']);
    expect(third[1]?.content[1]?.input).toEqual({ path: 'notes.txt' });
    expect(third[2]?.content.map((block) => [block.type, block.tool_use_id])).toEqual([
      ['tool_result', 'toolu_1'],
      ['tool_result', 'toolu_2'],
    ]);
    expect(third[2]?.content[0]?.content).toContain('alpha');
  });
});
