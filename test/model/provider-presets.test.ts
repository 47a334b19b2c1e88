import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { chooseModel, createProvider, PROVIDER_PRESETS } from '../../src/model/resolve.js';
import { streamWithRetries } from '../../src/model/retry.js';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { sse, startOpenAIServer, type FakeServer } from '../support/fake-openai.js';

/**
 * Each preset's requests: the default base URL and path, the key from the provider's usual
 * variable, its headers and body quirks. The real fetch is pointed at a loopback server, so the
 * URL the SDK asked for is recorded as it would have gone out.
 */

let server: FakeServer | undefined;
afterEach(async () => {
  vi.unstubAllGlobals();
  await server?.close();
  server = undefined;
});

const expected: Record<string, { url: string; key: string; quirk?: (body: Record<string, unknown>, headers: Record<string, unknown>) => void }> = {
  deepseek: { url: 'https://api.deepseek.com/chat/completions', key: 'DEEPSEEK_API_KEY' },
  openrouter: { url: 'https://openrouter.ai/api/v1/chat/completions', key: 'OPENROUTER_API_KEY', quirk: (_b, h) => expect(h['x-title']).toBe('quarry') },
  groq: { url: 'https://api.groq.com/openai/v1/chat/completions', key: 'GROQ_API_KEY' },
  mistral: { url: 'https://api.mistral.ai/v1/chat/completions', key: 'MISTRAL_API_KEY', quirk: (b) => expect(b).not.toHaveProperty('stream_options') },
  gemini: { url: 'https://generativelanguage.googleapis.com/v1beta/openai/chat/completions', key: 'GEMINI_API_KEY' },
  xai: { url: 'https://api.x.ai/v1/chat/completions', key: 'XAI_API_KEY' },
  together: { url: 'https://api.together.xyz/v1/chat/completions', key: 'TOGETHER_API_KEY' },
  fireworks: { url: 'https://api.fireworks.ai/inference/v1/chat/completions', key: 'FIREWORKS_API_KEY' },
  moonshot: { url: 'https://api.moonshot.ai/v1/chat/completions', key: 'MOONSHOT_API_KEY' },
  lmstudio: { url: 'http://127.0.0.1:1234/v1/chat/completions', key: 'LMSTUDIO_API_KEY' },
  vllm: { url: 'http://127.0.0.1:8000/v1/chat/completions', key: 'VLLM_API_KEY' },
};

describe('provider presets', () => {
  it('covers every preset', () => {
    expect(Object.keys(PROVIDER_PRESETS).sort()).toEqual(Object.keys(expected).sort());
  });

  for (const [prefix, want] of Object.entries(expected)) {
    it(`${prefix}/ goes to ${want.url} with ${want.key}`, async () => {
      server = await startOpenAIServer([{ text: 'hello' }]);
      const asked: string[] = [];
      const realFetch = globalThis.fetch;
      const loopback = new URL(server.url).origin;
      vi.stubGlobal('fetch', (input: string | URL | Request, init?: RequestInit) => {
        const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
        asked.push(url);
        const target = new URL(url);
        return realFetch(`${loopback}${target.pathname.replace(/^.*\/chat\/completions$/, '/v1/chat/completions')}`, init);
      });
      const model = prefix === 'fireworks' ? 'accounts/fireworks/models/kimi-k2' : 'some-model';
      const choice = chooseModel({ model: `${prefix}/${model}`, env: { [want.key]: `key-for-${prefix}` } });
      const provider = await createProvider(choice, process.cwd());
      expect(provider.endpoint).toBe(`POST ${want.url}`);
      let text = '';
      for await (const event of streamWithRetries(
        provider,
        { system: 's', messages: [{ role: 'user', content: 'hi' }], tools: [], signal: new AbortController().signal },
        { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      )) {
        if (event.type === 'text') text += event.text;
      }
      expect(text).toBe('hello');
      expect(asked).toEqual([want.url]);
      const request = server.requests[0]!;
      expect(request.headers.authorization).toBe(`Bearer key-for-${prefix}`);
      expect(request.body.model).toBe(model);
      if (want.quirk) want.quirk(request.body, request.headers);
      else expect(request.body.stream_options).toEqual({ include_usage: true });
    });
  }

  it('names the variable to set when a cloud preset has no key, and needs none for local servers', () => {
    for (const [prefix, preset] of Object.entries(PROVIDER_PRESETS)) {
      if (preset.keyOptional) expect(chooseModel({ model: `${prefix}/m`, env: {} })).toMatchObject({ apiKey: 'not-needed' });
      else expect(() => chooseModel({ model: `${prefix}/m`, env: {} })).toThrow(`export ${preset.keyVariable}=`);
    }
    expect(chooseModel({ model: 'vllm/qwen3', baseUrl: 'http://gpu-box:9000/v1', env: {} })).toMatchObject({
      model: 'qwen3',
      baseURL: 'http://gpu-box:9000/v1',
    });
    expect(chooseModel({ model: 'deepseek/deepseek-chat', baseUrl: 'http://proxy/v1', env: {} })).toMatchObject({
      model: 'deepseek-chat',
      baseURL: 'http://proxy/v1',
    });
  });
});

describe('through the CLI', () => {
  const base = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });

  function setupDirs() {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    writeFileSync(join(work, 'notes.txt'), 'alpha\n');
    return { home, work };
  }
  const trace = (home: string) => {
    const [id] = readdirSync(join(home, 'sessions'));
    return readFileSync(join(home, 'sessions', id as string, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  };

  it('runs a DeepSeek thinking session past turn 2 (reasoning sent back, kept out of the answer, in the trace)', async () => {
    server = await startOpenAIServer((request, index) => {
      if (index === 0) {
        return {
          raw: sse([
            chunk({ role: 'assistant', content: null, reasoning_content: 'I should read notes.txt.' }),
            chunk({ tool_calls: [{ index: 0, id: 'call_00_a', type: 'function', function: { name: 'read', arguments: '{"path":"notes.txt"}' } }] }),
            chunk({}, 'tool_calls'),
          ]),
        };
      }
      const assistant = (request.body.messages as Record<string, unknown>[]).find((m) => m.role === 'assistant' && m.tool_calls);
      if (!assistant?.reasoning_content)
        return {
          raw: '{"error":{"message":"The reasoning_content in the thinking mode must be passed back to the API.","type":"invalid_request_error"}}',
          rawStatus: 400,
          contentType: 'application/json',
        };
      return { raw: sse([chunk({ reasoning_content: 'It says alpha.' }), chunk({ content: 'The file says alpha.' }, 'stop')]) };
    });
    const { home, work } = setupDirs();
    const result = await runCli(
      ['-m', 'deepseek/deepseek-reasoner', '--base-url', server.url, '--working-dir', work, '--format', 'json', 'what is in notes.txt?'],
      { env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-ds' }) },
    );
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ status: 'completed', text: 'The file says alpha.' });
    expect(server.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-ds', 'Bearer sk-ds']);
    const messages = trace(home)
      .filter((e) => e.type === 'message')
      .map((e) => e.message as Record<string, unknown>);
    expect(messages.filter((m) => m.role === 'assistant').map((m) => (m.reasoning as { text: string }).text)).toEqual([
      'I should read notes.txt.',
      'It says alpha.',
    ]);
  });

  it('shows a refusal on stderr, records it, and gives it the status "refused" (exit 1)', async () => {
    server = await startOpenAIServer(() => ({
      raw: sse([chunk({ role: 'assistant', content: null, refusal: 'I cannot help with that.' }), chunk({}, 'stop')]),
    }));
    const { home, work } = setupDirs();
    const result = await runCli(['--base-url', server.url, '-m', 'gpt-4o', '--working-dir', work, '--format', 'json', 'something'], { env: cliEnv(home) });
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'refused', error: 'the model refused to answer: I cannot help with that.' });
    const text = await runCli(['--base-url', server.url, '-m', 'gpt-4o', '--working-dir', work, 'something'], { env: cliEnv(makeTempDir('quarry-home-')) });
    expect(text.code).toBe(1);
    expect(text.stderr).toContain('quarry: the model refused to answer: I cannot help with that.');
    const events = trace(home);
    expect(events.find((e) => e.type === 'message' && (e.message as { role: string }).role === 'assistant')).toMatchObject({
      message: { refusal: 'I cannot help with that.' },
    });
    expect(events.at(-1)).toMatchObject({ type: 'run_end', status: 'refused' });
  });

  it('prints content sent as typed parts in text mode (no internal error)', async () => {
    server = await startOpenAIServer([
      {
        raw: sse([
          chunk({ content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'hmm' }] }] }),
          chunk({ content: [{ type: 'text', text: 'Forty-two.' }] }, 'stop'),
        ]),
      },
    ]);
    const { home, work } = setupDirs();
    const result = await runCli(['-m', 'mistral/magistral-medium-latest', '--base-url', server.url, '--working-dir', work, 'q'], {
      env: cliEnv(home, { MISTRAL_API_KEY: 'm' }),
    });
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe('Forty-two.');
    expect(server.requests[0]!.body).not.toHaveProperty('stream_options');
  });

  it('fails within seconds, naming the URL, on a closed loopback port (exit 1)', async () => {
    const probe = await startOpenAIServer([]);
    const url = probe.url;
    await probe.close();
    const { home, work } = setupDirs();
    const started = Date.now();
    const result = await runCli(['--base-url', url, '-m', 'llama3.1', '--working-dir', work, 'q'], { env: cliEnv(home, { QUARRY_RETRY_BASE_MS: '1000' }) });
    expect(Date.now() - started).toBeLessThan(8000);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`model call failed (POST ${url}/chat/completions): nothing is listening at ${new URL(url).origin} (connection refused)`);
  });
});
