import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer, type ReplySource } from '../support/fake-openai.js';

/** The whole loop through the real CLI and the real OpenAI SDK against a loopback server. */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Setup {
  home: string;
  work: string;
  run(args: string[], extraEnv?: Record<string, string>): ReturnType<typeof runCli>;
}

async function setup(replies: ReplySource): Promise<Setup> {
  server = await startOpenAIServer(replies);
  const home = makeTempDir('quarry-home-');
  const work = makeTempDir('quarry-work-');
  writeFileSync(join(work, 'notes.txt'), 'alpha\nbeta\ngamma\n');
  writeFileSync(join(work, 'sales.csv'), 'region,amount\nnorth,10\nsouth,20\n');
  const url = server.url;
  return {
    home,
    work,
    run: (args, extraEnv = {}) => runCli(['--base-url', url, '--model', 'test-model', '--working-dir', work, ...args], { env: cliEnv(home, extraEnv) }),
  };
}

type ChatMessage = {
  role: string;
  content?: string | null;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
};
const messagesOf = (index: number): ChatMessage[] => (server?.requests[index]?.body.messages ?? []) as ChatMessage[];
const toolResults = (index: number) => messagesOf(index).filter((m) => m.role === 'tool');

function sessionDirs(home: string): string[] {
  return readdirSync(join(home, 'sessions')).map((id) => join(home, 'sessions', id));
}

function traceEvents(home: string): Record<string, unknown>[] {
  const [dir] = sessionDirs(home);
  return readFileSync(join(dir as string, 'trace.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('quarry with an OpenAI-compatible server', () => {
  it('runs several turns with parallel tool calls and returns results in call order', async () => {
    const s = await setup([
      {
        text: 'Looking at the files.',
        toolCalls: [
          { id: 'c1', name: 'read', arguments: '{"path": "notes.txt"}' },
          { id: 'c2', name: 'grep', arguments: '{"pattern": "south", "path": "."}' },
          { id: 'c3', name: 'list', arguments: '{"path": "."}' },
        ],
        usage: { input: 100, output: 20, cached: 40 },
      },
      { toolCalls: [{ id: 'c4', name: 'read', arguments: '{"path": "sales.csv"}' }], usage: { input: 200, output: 10 } },
      { text: 'South sold 20; notes hold alpha, beta, gamma.', usage: { input: 300, output: 30, cached: 100 } },
    ]);
    const result = await s.run(['--format', 'json', 'what do the files say?']);
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(out.status).toBe('completed');
    expect(out.text).toBe('South sold 20; notes hold alpha, beta, gamma.');
    expect(out.usage).toEqual({ input_tokens: 600, output_tokens: 60, cached_tokens: 140 });
    expect(out.turns).toBe(3);
    expect(out.tool_calls).toBe(4);
    expect(server?.requests).toHaveLength(3);
    // The second request carries the assistant's calls and one result per call, in call order.
    const second = messagesOf(1);
    expect(second[0]?.role).toBe('system');
    expect(second[1]).toEqual({ role: 'user', content: 'what do the files say?' });
    expect(second[2]?.tool_calls?.map((call) => [call.id, call.function.name, JSON.parse(call.function.arguments)])).toEqual([
      ['c1', 'read', { path: 'notes.txt' }],
      ['c2', 'grep', { pattern: 'south', path: '.' }],
      ['c3', 'list', { path: '.' }],
    ]);
    expect(toolResults(1).map((m) => m.tool_call_id)).toEqual(['c1', 'c2', 'c3']);
    expect(toolResults(1)[0]?.content).toContain('beta');
    expect(toolResults(1)[1]?.content).toContain('south,20');
    expect(toolResults(1)[2]?.content).toContain('sales.csv');
    expect(toolResults(2).map((m) => m.tool_call_id)).toEqual(['c1', 'c2', 'c3', 'c4']);
    expect(toolResults(2)[3]?.content).toContain('north,10');
    // The request offers the profile's tools with their schemas, and asks for usage.
    const tools = (server?.requests[0]?.body.tools as { function: { name: string } }[] | undefined)?.map((tool) => tool.function.name);
    expect(tools).toEqual(expect.arrayContaining(['read', 'grep', 'glob', 'list']));
    expect(server?.requests[0]?.body.stream_options).toEqual({ include_usage: true });
    // The trace has every event kind of a run, and the meta the status and usage.
    const types = traceEvents(s.home).map((event) => event.type);
    expect(types[0]).toBe('run_start');
    expect(types.at(-1)).toBe('run_end');
    expect(types.filter((t) => t === 'llm_start')).toHaveLength(3);
    expect(types.filter((t) => t === 'tool_end')).toHaveLength(4);
    const llmEnd = traceEvents(s.home).find((event) => event.type === 'llm_end');
    expect(llmEnd?.usage).toEqual({ input_tokens: 100, output_tokens: 20, cached_tokens: 40 });
    const meta = JSON.parse(readFileSync(join(sessionDirs(s.home)[0] as string, 'meta.json'), 'utf8')) as Record<string, unknown>;
    expect(meta).toMatchObject({ id: out.session_id, status: 'completed', profile: 'readonly', usage: out.usage });
  });

  it('streams text to stdout and one compact row per tool call to stderr', async () => {
    const s = await setup([
      {
        text: 'Reading.',
        toolCalls: [
          { name: 'read', arguments: '{"path": "notes.txt"}' },
          { name: 'read', arguments: '{"path": "missing.txt"}' },
        ],
      },
      { text: 'Done.' },
    ]);
    const result = await s.run(['read the notes']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('Reading.\nDone.\n');
    expect(result.stderr).toMatch(/^ok read notes\.txt \(\d+ lines, [\d.]+ B(, [\d.]+ s)?\)$/m);
    expect(result.stderr).toMatch(/^err read missing\.txt \(0\.\d s\): .*missing\.txt/m);
  });

  it('answers invalid JSON arguments and unknown tools with errors and carries on', async () => {
    const s = await setup([
      {
        toolCalls: [
          { id: 'bad', name: 'read', arguments: '{"path": "notes.txt"' },
          { id: 'ghost', name: 'teleport', arguments: '{}' },
          { id: 'fine', name: 'read', arguments: '{"path":"notes.txt"}' },
        ],
      },
      { text: 'Recovered.' },
    ]);
    const result = await s.run(['--format', 'json', 'go']);
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as { text: string }).text).toBe('Recovered.');
    const [bad, ghost, fine] = toolResults(1);
    expect(bad?.tool_call_id).toBe('bad');
    expect(bad?.content).toMatch(/not valid JSON/);
    expect(ghost?.tool_call_id).toBe('ghost');
    expect(ghost?.content).toMatch(/unknown tool "teleport"; available tools: .*\bread\b.*\blist\b/);
    expect(fine?.content).toContain('alpha');
  });

  it('retries a 429, honouring Retry-After, then succeeds', async () => {
    const s = await setup([
      { status: 429, headers: { 'retry-after': '0' }, message: 'slow down' },
      { status: 503, message: 'overloaded' },
      { text: 'Fine now.' },
    ]);
    const result = await s.run(['--format', 'json', 'hello']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'completed', text: 'Fine now.' });
    expect(server?.requests).toHaveLength(3);
    const retries = traceEvents(s.home)
      .filter((event) => event.type === 'error')
      .map((event) => String(event.message));
    expect(retries[0]).toMatch(/429.*slow down.*retrying in 0 ms/);
    expect(retries[1]).toMatch(/503.*overloaded/);
  });

  it('gives up after 6 attempts on a server that keeps failing (exit 1)', async () => {
    const s = await setup(() => ({ status: 500, message: 'boom' }));
    const result = await s.run(['--format', 'json', 'hello']);
    expect(result.code).toBe(1);
    expect(server?.requests).toHaveLength(6);
    const out = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(out.status).toBe('failed');
    expect(out.error).toMatch(/failed after 6 attempts \(POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\): .*500.*boom/);
  });

  it('does not retry a 400 (the request itself is wrong)', async () => {
    const s = await setup(() => ({ status: 400, message: 'bad model name' }));
    const result = await s.run(['hello']);
    expect(result.code).toBe(1);
    expect(server?.requests).toHaveLength(1);
    expect(result.stderr).toMatch(/model call failed \(POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\): 400 bad model name/);
  });

  it('retries a stream cut mid-answer and never passes the partial text off as the answer', async () => {
    const s = await setup([{ text: 'The total is 12345 and more words follow', cutAfter: 4 }, { text: 'The total is 42.' }]);
    const result = await s.run(['--format', 'json', 'total?']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'completed', text: 'The total is 42.' });
    expect(server?.requests).toHaveLength(2);
  });

  it('fails (exit 1) when every attempt is cut mid-answer', async () => {
    const s = await setup(() => ({ text: 'The total is 12345 and more', cutAfter: 3 }));
    const result = await s.run(['--format', 'json', 'total?']);
    expect(result.code).toBe(1);
    const out = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(out.status).toBe('failed');
    expect(out.text).toBe('');
    expect(server?.requests).toHaveLength(6);
  });

  it('caps a tool output over 64 KiB before it reaches the model', async () => {
    const s = await setup([{ toolCalls: [{ id: 'big', name: 'read', arguments: '{"path": "big.txt"}' }] }, { text: 'That was big.' }]);
    writeFileSync(join(s.work, 'big.txt'), `${'x'.repeat(400)}\n`.repeat(500));
    const result = await s.run(['read big.txt']);
    expect(result.code).toBe(0);
    const content = toolResults(1)[0]?.content ?? '';
    expect(Buffer.byteLength(content)).toBeLessThanOrEqual(64 * 1024 + 1024);
    expect(Buffer.byteLength(content)).toBeGreaterThan(60 * 1024);
    expect(content).toMatch(/cut|truncated|more/i);
  });

  it('stops when the same call repeats three times in a row (exit 1, explained)', async () => {
    const call = { name: 'read', arguments: '{"path": "notes.txt"}' };
    const s = await setup(() => ({ toolCalls: [call] }));
    const result = await s.run(['--format', 'json', 'loop']);
    expect(result.code).toBe(1);
    expect(server?.requests).toHaveLength(3);
    expect((JSON.parse(result.stdout) as { error: string }).error).toMatch(/same arguments 3 times in a row/);
    const lastResults = traceEvents(s.home).filter((e) => e.type === 'message' && (e.message as { role: string }).role === 'tool');
    expect(lastResults).toHaveLength(3);
    expect(String((lastResults[2]?.message as { content: string } | undefined)?.content)).toMatch(/^not run/);
  });

  it('stops at --max-turns (exit 1)', async () => {
    let n = 0;
    const s = await setup(() => ({ toolCalls: [{ name: 'read', arguments: JSON.stringify({ path: 'notes.txt', start_line: ++n }) }] }));
    const result = await s.run(['--max-turns', '2', '--format', 'json', 'loop']);
    expect(result.code).toBe(1);
    expect(server?.requests).toHaveLength(2);
    expect((JSON.parse(result.stdout) as { error: string }).error).toMatch(/stopped after 2 model turns \(--max-turns 2\)/);
  });

  it('prints every event as a JSON line with --format stream-json', async () => {
    const s = await setup([{ text: 'Hi.', toolCalls: [{ name: 'list', arguments: '{"path": "."}' }] }, { text: 'Bye.' }]);
    const result = await s.run(['--format', 'stream-json', 'hello']);
    expect(result.code).toBe(0);
    const events = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const types = events.map((event) => event.type);
    expect(types[0]).toBe('run_start');
    expect(types).toEqual(expect.arrayContaining(['turn_start', 'text', 'assistant_message', 'tool_start', 'tool_end']));
    expect(types.indexOf('tool_start')).toBeLessThan(types.indexOf('tool_end'));
    const last = events.at(-1) as Record<string, unknown>;
    expect(last).toMatchObject({ type: 'result', status: 'completed', text: 'Bye.' });
    expect(typeof last.session_id).toBe('string');
    expect(events.find((event) => event.type === 'tool_end')).toMatchObject({ name: 'list', ok: true });
  });

  it('reads the prompt from stdin and writes the answer to --output', async () => {
    const s = await setup([{ text: 'Piped answer.' }]);
    const outFile = join(s.work, 'answer.md');
    const result = await runCli(['--base-url', server?.url ?? '', '--model', 'm', '-w', s.work, '--output', outFile], {
      env: cliEnv(s.home),
      input: 'question from a pipe\n',
    });
    expect(result.code).toBe(0);
    expect(readFileSync(outFile, 'utf8')).toBe('Piped answer.\n');
    expect(messagesOf(0)[1]).toEqual({ role: 'user', content: 'question from a pipe' });
  });

  it('exits 2 with a clear message when no model is configured or flags are wrong', async () => {
    const home = makeTempDir('quarry-home-');
    const none = await runCli(['what now?'], { env: cliEnv(home) });
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no model configured/);
    expect(none.stderr).toMatch(/OPENAI_API_KEY/);
    expect(none.stderr).toMatch(/ANTHROPIC_API_KEY/);
    expect(none.stderr).toMatch(/--base-url http:\/\/127\.0\.0\.1:11434\/v1/);
    expect(none.stderr).not.toMatch(/\n\s+at /);
    const noKey = await runCli(['--model', 'openai/gpt-4.1', 'hi'], { env: cliEnv(home) });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/export OPENAI_API_KEY/);
    const badTurns = await runCli(['--model', 'script:x.json', '--max-turns', '0', 'hi'], { env: cliEnv(home) });
    expect(badTurns.code).toBe(2);
    expect(badTurns.stderr).toMatch(/--max-turns must be a positive whole number/);
    writeFileSync(join(home, 'x.json'), '{"turns": []}');
    const noPrompt = await runCli(['--model', `script:${join(home, 'x.json')}`], { env: cliEnv(home), input: '' });
    expect(noPrompt.code).toBe(2);
    expect(noPrompt.stderr).toMatch(/no prompt/);
  });
});
