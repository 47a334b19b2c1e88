import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { AnthropicProvider } from '../../src/model/anthropic.js';
import { OpenAIChatProvider } from '../../src/model/openai.js';
import { streamWithRetries, type RetryNotice } from '../../src/model/retry.js';
import type { Message, ModelEvent, ModelProvider, ProviderQuirks } from '../../src/model/types.js';
import { sse, startAnthropicServer, startOpenAIServer, type FakeServer, type ReplySource } from '../support/fake-openai.js';

/**
 * The stream shapes real providers send, written as fixtures in this file (shapes learned from the
 * providers' documentation, their SDKs' tests and public bug reports), replayed through loopback
 * servers to the real SDK-backed providers and the retry policy.
 */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const policy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 };
const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm' };
const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  ...base,
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});
const usageChunk = (usage: Record<string, unknown>) => ({ ...base, choices: [], usage });

async function openai(replies: ReplySource, quirks?: ProviderQuirks): Promise<OpenAIChatProvider> {
  server = await startOpenAIServer(replies);
  return new OpenAIChatProvider({ label: 'test', model: 'm', apiKey: 'k', baseURL: server.url, ...(quirks ? { quirks } : {}) });
}

async function turn(provider: ModelProvider, messages: Message[] = [{ role: 'user', content: 'hi' }], signal = new AbortController().signal) {
  const events: (ModelEvent | RetryNotice)[] = [];
  for await (const event of streamWithRetries(
    provider,
    { system: 's', messages, tools: [{ name: 'read', description: 'r', parameters: { type: 'object' } }], signal },
    policy,
  ))
    events.push(event);
  const retries = events.filter((e) => e.type === 'retry').length;
  const afterLastRetry = events.slice(events.map((e) => e.type).lastIndexOf('retry') + 1);
  const text = afterLastRetry.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join('');
  const calls = afterLastRetry.flatMap((e) => (e.type === 'tool_call' ? [e.call] : []));
  const end = afterLastRetry.find((e) => e.type === 'end') as Extract<ModelEvent, { type: 'end' }>;
  return { text, calls, end, retries };
}

async function failure(provider: ModelProvider): Promise<Error & { attempts: number }> {
  try {
    await turn(provider);
  } catch (error) {
    return error as Error & { attempts: number };
  }
  throw new Error('the turn did not fail');
}

describe('tool calls as each provider streams them', () => {
  it('splits parallel calls sent without index, each with its own id (Mistral, Ollama before 0.4.7)', async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ role: 'assistant', content: '' }),
          chunk({ tool_calls: [{ id: 'Ab12Cd34E', function: { name: 'read', arguments: '{"path": "a.txt"}' } }] }),
          chunk({ tool_calls: [{ id: 'Fg56Hi78J', function: { name: 'read', arguments: '{"path": "b.txt"}' } }] }, 'tool_calls'),
          usageChunk({ prompt_tokens: 5, completion_tokens: 3 }),
        ]),
      },
    ]);
    const { calls } = await turn(p);
    expect(calls).toEqual([
      { id: 'Ab12Cd34E', name: 'read', arguments: '{"path": "a.txt"}' },
      { id: 'Fg56Hi78J', name: 'read', arguments: '{"path": "b.txt"}' },
    ]);
  });

  it('splits calls with empty ids and no index once the arguments are complete JSON (Gemini), generating distinct ids', async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ role: 'assistant', tool_calls: [{ id: '', type: 'function', function: { name: 'read', arguments: '{"path":"a.txt"}' } }] }),
          chunk({ tool_calls: [{ id: '', type: 'function', function: { name: 'read', arguments: '{"path":"b.txt"}' } }] }),
          chunk({ tool_calls: [{ id: '', type: 'function', function: { name: 'list', arguments: '{}' } }] }, 'tool_calls'),
        ]),
      },
    ]);
    const { calls } = await turn(p);
    expect(calls.map((c) => [c.name, c.arguments])).toEqual([
      ['read', '{"path":"a.txt"}'],
      ['read', '{"path":"b.txt"}'],
      ['list', '{}'],
    ]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    for (const call of calls) expect(call.id).toMatch(/^call_\w+_\d$/);
  });

  it('does not append a name repeated in every chunk (Fireworks, NVIDIA NIM)', async () => {
    const frag = (index: number, id: string, args: string) => ({ index, id, type: 'function', function: { name: 'read', arguments: args } });
    const p = await openai([
      {
        raw: sse([
          chunk({ role: 'assistant', content: null }),
          chunk({ tool_calls: [frag(0, 'call_x1', '{"pa')] }),
          chunk({ tool_calls: [frag(0, 'call_x1', 'th": "a.')] }),
          chunk({ tool_calls: [frag(0, 'call_x1', 'txt"}')] }),
          chunk({ tool_calls: [frag(1, 'call_x2', '{"path": "b.txt"}')] }),
          chunk({}, 'tool_calls'),
        ]),
      },
    ]);
    const { calls } = await turn(p);
    expect(calls).toEqual([
      { id: 'call_x1', name: 'read', arguments: '{"path": "a.txt"}' },
      { id: 'call_x2', name: 'read', arguments: '{"path": "b.txt"}' },
    ]);
  });

  it('splits calls that all carry index 0 but their own ids, with "null" placeholder ids on continuations (serving gateways)', async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'add', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, id: 'null', function: { arguments: '{"a": 2, ' } }] }),
          chunk({ tool_calls: [{ index: 0, id: 'null', function: { arguments: '"b": 2}' } }] }),
          chunk({ tool_calls: [{ index: 0, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city": "Tokyo"}' } }] }),
          chunk({}, 'tool_calls'),
        ]),
      },
    ]);
    expect((await turn(p)).calls).toEqual([
      { id: 'call_a', name: 'add', arguments: '{"a": 2, "b": 2}' },
      { id: 'call_b', name: 'weather', arguments: '{"city": "Tokyo"}' },
    ]);
  });

  it('still joins a name and arguments streamed in pieces under one index (OpenAI)', async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 're', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { name: 'ad', arguments: '{"path"' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: ': "x"}' } }] }),
          chunk({}, 'tool_calls'),
        ]),
      },
    ]);
    expect((await turn(p)).calls).toEqual([{ id: 'call_1', name: 'read', arguments: '{"path": "x"}' }]);
  });
});

describe('errors inside a 200 stream', () => {
  it("retries OpenAI's in-band server_error, discarding the partial turn", async () => {
    const p = await openai([
      {
        raw: sse(
          [
            chunk({ content: 'partial ' }),
            { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } },
          ],
          false,
        ),
      },
      { text: 'whole answer' },
    ]);
    const result = await turn(p);
    expect(result.retries).toBe(1);
    expect(result.text).toBe('whole answer');
  });

  it('retries OpenRouter\'s error chunk with finish_reason "error"', async () => {
    const p = await openai([
      { raw: sse([chunk({ content: 'half' }), { ...chunk({ content: '' }, 'error'), error: { code: 502, message: 'Provider returned error' } }]) },
      { text: 'fine' },
    ]);
    const result = await turn(p);
    expect(result.retries).toBe(1);
    expect(result.text).toBe('fine');
  });

  it("fails at once on an in-band invalid request, with the provider's message", async () => {
    const p = await openai([
      { raw: sse([{ error: { message: 'Invalid schema for function read', type: 'invalid_request_error', code: 'invalid_function_parameters' } }], false) },
    ]);
    const error = await failure(p);
    expect(error.attempts).toBe(1);
    expect(error.message).toMatch(
      /\(POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\): the server sent an error inside the stream \(invalid_request_error\): Invalid schema for function read/,
    );
  });

  it("retries Anthropic's overloaded_error event at the start and mid-stream", async () => {
    const overloaded = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    const start =
      'event: message_start\ndata: ' +
      '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}\n\n';
    const text =
      'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\nevent: ' +
      'content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half an ans"}}\n\n';
    server = await startAnthropicServer([{ raw: overloaded }, { raw: [start, text, overloaded] }, { text: 'the answer' }]);
    const p = new AnthropicProvider({ label: 'a', model: 'c', apiKey: 'k', baseURL: server.url.replace(/\/v1$/, '') });
    const result = await turn(p);
    expect(result.retries).toBe(2);
    expect(result.text).toBe('the answer');
  });
});

describe('reasoning, content parts, refusals and usage', () => {
  it("keeps DeepSeek's reasoning_content out of the text and sends it back with the tool calls", async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ role: 'assistant', content: null, reasoning_content: 'The user wants ' }),
          chunk({ reasoning_content: 'a file.' }),
          chunk({ tool_calls: [{ index: 0, id: 'call_00_x', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } }] }),
          chunk({}, 'tool_calls'),
          usageChunk({ prompt_tokens: 50, completion_tokens: 20, prompt_cache_hit_tokens: 32, completion_tokens_details: { reasoning_tokens: 12 } }),
        ]),
      },
      { text: 'done' },
    ]);
    const first = await turn(p);
    expect(first.text).toBe('');
    expect(first.end.reasoning).toEqual({ text: 'The user wants a file.', field: 'reasoning_content' });
    expect(first.end.usage).toEqual({ inputTokens: 50, outputTokens: 20, cachedTokens: 32, reasoningTokens: 12 });
    const history: Message[] = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: first.calls, reasoning: first.end.reasoning! },
      { role: 'tool', toolCallId: 'call_00_x', name: 'read', content: 'x' },
    ];
    await turn(p, history);
    const assistant = (server!.requests[1]!.body.messages as Record<string, unknown>[])[2]!;
    expect(assistant).toMatchObject({ role: 'assistant', reasoning_content: 'The user wants a file.', tool_calls: [{ id: 'call_00_x' }] });
  });

  it("echoes Gemini's thought_signature on each tool call", async () => {
    const signature = { google: { thought_signature: 'CiQBjz1rX2sig==' } };
    const p = await openai([
      {
        raw: sse([
          chunk(
            {
              role: 'assistant',
              tool_calls: [{ id: 'function-call-1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' }, extra_content: signature }],
            },
            'tool_calls',
          ),
        ]),
      },
      { text: 'ok' },
    ]);
    const first = await turn(p);
    expect(first.calls[0]!.extra).toEqual({ extra_content: signature });
    await turn(p, [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '', toolCalls: first.calls },
      { role: 'tool', toolCallId: 'function-call-1', name: 'read', content: 'x' },
    ]);
    const sent = (server!.requests[1]!.body.messages as { tool_calls?: Record<string, unknown>[] }[])[2]!.tool_calls![0]!;
    expect(sent).toEqual({ id: 'function-call-1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' }, extra_content: signature });
  });

  it("merges OpenRouter's streamed reasoning_details and sends them back unchanged", async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({
            role: 'assistant',
            content: '',
            reasoning: 'Thinking',
            reasoning_details: [{ type: 'reasoning.text', text: 'Thinking', format: 'anthropic-claude-v1', index: 0 }],
          }),
          chunk({ content: '', reasoning: ' more', reasoning_details: [{ type: 'reasoning.text', text: ' more', format: 'anthropic-claude-v1', index: 0 }] }),
          chunk({ content: '', reasoning_details: [{ type: 'reasoning.text', signature: 'EqQBsig', format: 'anthropic-claude-v1', index: 0 }] }),
          chunk({ content: 'Answer.' }, 'stop'),
        ]),
      },
      { text: 'second' },
    ]);
    const first = await turn(p);
    expect(first.text).toBe('Answer.');
    expect(first.end.reasoning).toEqual({
      text: 'Thinking more',
      field: 'reasoning',
      details: [{ type: 'reasoning.text', text: 'Thinking more', signature: 'EqQBsig', format: 'anthropic-claude-v1', index: 0 }],
    });
    await turn(p, [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: first.text, reasoning: first.end.reasoning! },
      { role: 'user', content: 'and?' },
    ]);
    const assistant = (server!.requests[1]!.body.messages as Record<string, unknown>[])[2]!;
    expect(assistant.reasoning_details).toEqual(first.end.reasoning!.details);
    expect(assistant).not.toHaveProperty('reasoning_content');
  });

  it('reads content sent as typed parts, thinking kept apart (Mistral Magistral)', async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ role: 'assistant', content: [{ type: 'thinking', thinking: [{ type: 'text', text: 'Let me see.' }] }] }),
          chunk({ content: [{ type: 'text', text: 'The total ' }] }),
          chunk({ content: [{ type: 'text', text: 'is 30.' }] }, 'stop'),
        ]),
      },
    ]);
    const result = await turn(p);
    expect(result.text).toBe('The total is 30.');
    expect(result.end.reasoning?.text).toBe('Let me see.');
  });

  it('treats a leading <think> block as reasoning even when its tags are split across chunks (Qwen3, R1 without a parser)', async () => {
    const pieces = ['<thi', 'nk>\nweigh ', 'it up</th', 'ink>\n\n', 'The answer', ' is <b>42</b>.'];
    const p = await openai([{ raw: sse([...pieces.map((content) => chunk({ content })), chunk({}, 'stop')]) }]);
    const result = await turn(p);
    expect(result.text).toBe('The answer is <b>42</b>.');
    expect(result.end.reasoning?.text).toBe('\nweigh it up');
  });

  it('leaves text that only mentions <think> later alone', async () => {
    const p = await openai([{ raw: sse([chunk({ content: 'Use a <think> tag' }), chunk({ content: ' here.' }, 'stop')]) }]);
    expect((await turn(p)).text).toBe('Use a <think> tag here.');
  });

  it('reports an OpenAI refusal', async () => {
    const p = await openai([
      {
        raw: sse([
          chunk({ role: 'assistant', content: null, refusal: '' }),
          chunk({ refusal: "I'm sorry, I can't " }),
          chunk({ refusal: 'help with that.' }),
          chunk({}, 'stop'),
        ]),
      },
    ]);
    const { end, text } = await turn(p);
    expect(text).toBe('');
    expect(end).toMatchObject({ stopReason: 'refusal', refusal: "I'm sorry, I can't help with that." });
  });

  it('reports xAI reasoning tokens and counts them as output (billed on top of completion_tokens)', async () => {
    const reply = {
      raw: sse([
        chunk({ content: 'hi' }, 'stop'),
        usageChunk({
          prompt_tokens: 30,
          completion_tokens: 4,
          completion_tokens_details: { reasoning_tokens: 90 },
          prompt_tokens_details: { cached_tokens: 6 },
        }),
      ]),
    };
    const xai = await turn(await openai([reply], { reasoningTokensSeparate: true }));
    expect(xai.end.usage).toEqual({ inputTokens: 30, outputTokens: 94, cachedTokens: 6, reasoningTokens: 90 });
  });

  it("lets Anthropic's message_delta usage override message_start's", async () => {
    const events = [
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            id: 'm',
            type: 'message',
            role: 'assistant',
            model: 'c',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
          },
        },
      ],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      [
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { input_tokens: 2400, output_tokens: 77, cache_read_input_tokens: 1000, cache_creation_input_tokens: 200 },
        },
      ],
      ['message_stop', { type: 'message_stop' }],
    ].map(([name, data]) => `event: ${name as string}\ndata: ${JSON.stringify(data)}\n\n`);
    server = await startAnthropicServer([{ raw: events }]);
    const result = await turn(new AnthropicProvider({ label: 'a', model: 'c', apiKey: 'k', baseURL: server.url.replace(/\/v1$/, '') }));
    expect(result.end.usage).toEqual({ inputTokens: 3600, outputTokens: 77, cachedTokens: 1000 });
  });

  it('reports an Anthropic refusal (stop_reason "refusal")', async () => {
    const events = [
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            id: 'm',
            type: 'message',
            role: 'assistant',
            model: 'c',
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: { input_tokens: 5, output_tokens: 1 },
          },
        },
      ],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'refusal', stop_sequence: null }, usage: { output_tokens: 3 } }],
      ['message_stop', { type: 'message_stop' }],
    ].map(([name, data]) => `event: ${name as string}\ndata: ${JSON.stringify(data)}\n\n`);
    server = await startAnthropicServer([{ raw: events }]);
    const result = await turn(new AnthropicProvider({ label: 'a', model: 'c', apiKey: 'k', baseURL: server.url.replace(/\/v1$/, '') }));
    expect(result.end).toMatchObject({ stopReason: 'refusal', refusal: expect.stringMatching(/declined/) });
  });
});

describe('error bodies and endpoints', () => {
  const bodies: [string, string, string, RegExp][] = [
    [
      'vLLM (top-level message)',
      'application/json',
      '{"object":"error","message":"This model\'s maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}',
      /400 This model's maximum context length is 4096 tokens\./,
    ],
    ['TensorRT-LLM / FastAPI detail', 'application/json', '{"detail":"Model llama-x not found"}', /400 Model llama-x not found/],
    [
      'Mistral 422 validation list',
      'application/json',
      '{"object":"error","message":{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required"}]},"type":"invalid_request_message_error"}',
      /body\.messages: Field required/,
    ],
    [
      'Gemini JSON array',
      'application/json',
      '[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}]',
      /API key not valid/,
    ],
    ['plain text', 'text/plain', 'upstream model crashed', /upstream model crashed/],
  ];
  for (const [name, type, body, expected] of bodies) {
    it(`shows the server's own message: ${name}`, async () => {
      const p = await openai([{ raw: body, rawStatus: 400, contentType: type }]);
      const error = await failure(p);
      expect(error.message).toMatch(expected);
      expect(error.message).not.toMatch(/no body/);
      expect(error.attempts).toBe(1);
    });
  }

  it('fails at once on an HTML page answered with 200, saying what came back', async () => {
    const p = await openai([
      {
        raw: '<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>',
        contentType: 'text/html; charset=utf-8',
      },
    ]);
    const started = Date.now();
    const error = await failure(p);
    expect(Date.now() - started).toBeLessThan(10_000); // a retry would back off for longer; attempts says it did not
    expect(error.attempts).toBe(1);
    expect(server!.requests).toHaveLength(1);
    expect(error.message).toMatch(
      /\(POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions\): the server answered 200 with text\/html, not an event stream .*Welcome to nginx!/,
    );
  });

  it('accepts a real event stream labelled text/plain', async () => {
    const p = await openai([{ raw: sse([chunk({ content: 'fine' }, 'stop')]), contentType: 'text/plain' }]);
    expect((await turn(p)).text).toBe('fine');
  });

  it('fails at once, naming the URL, when nothing listens on a loopback port', async () => {
    const probe = await startOpenAIServer([]);
    const url = probe.url;
    await probe.close();
    const p = new OpenAIChatProvider({ label: 't', model: 'm', apiKey: 'k', baseURL: url });
    const started = Date.now();
    const error = await failure(p);
    expect(Date.now() - started).toBeLessThan(10_000); // a retry would back off for longer; attempts says it did not
    expect(error.attempts).toBe(1);
    expect(error.message).toContain(`nothing is listening at ${new URL(url).origin} (connection refused)`);
    expect(error.message).toContain(`POST ${url}/chat/completions`);
  });

  it('fails at once on a port fetch refuses to use (port 1)', async () => {
    const error = await failure(new OpenAIChatProvider({ label: 't', model: 'm', apiKey: 'k', baseURL: 'http://127.0.0.1:1/v1' }));
    expect(error.attempts).toBe(1);
    expect(error.message).toMatch(/fetch refuses to connect to port 1/);
  });

  it('drops stream_options for the session when the server rejects it, and never sends it with the quirk', async () => {
    const rejecting: ReplySource = (request) =>
      request.body.stream_options
        ? {
            raw: '{"detail":[{"type":"extra_forbidden","loc":["body","stream_options"],"msg":"Extra inputs are not permitted"}]}',
            rawStatus: 422,
            contentType: 'application/json',
          }
        : { text: 'ok' };
    const p = await openai(rejecting);
    expect((await turn(p)).text).toBe('ok');
    expect((await turn(p)).text).toBe('ok');
    expect(server!.requests.map((r) => 'stream_options' in r.body)).toEqual([true, false, false]);
    await server!.close();
    const quirky = await openai(rejecting, { noStreamOptions: true });
    await turn(quirky);
    expect(server!.requests.map((r) => 'stream_options' in r.body)).toEqual([false]);
  });

  it('drops stream_options when only the body details name it (a message without the field name, as Mistral answers)', async () => {
    const body = {
      object: 'error',
      message: 'Extra inputs are not permitted',
      type: 'invalid_request_error',
      detail: [{ type: 'extra_forbidden', loc: ['body', 'stream_options'], msg: 'Extra inputs are not permitted' }],
    };
    const p = await openai((request) =>
      request.body.stream_options ? { raw: JSON.stringify(body), rawStatus: 422, contentType: 'application/json' } : { text: 'ok' },
    );
    expect((await turn(p)).text).toBe('ok');
    expect(server!.requests.map((r) => 'stream_options' in r.body)).toEqual([true, false]);
  });
});

describe('abort listeners in long runs', () => {
  it('leaves the run signal with as many listeners after 40 turns as before (one signal per request)', async () => {
    const p = await openai(() => ({ text: 'again' }));
    const controller = new AbortController();
    const before = getEventListeners(controller.signal, 'abort').length;
    for (let i = 0; i < 40; i++) await turn(p, [{ role: 'user', content: `turn ${i}` }], controller.signal);
    expect(server!.requests).toHaveLength(40);
    expect(getEventListeners(controller.signal, 'abort').length).toBe(before);
  });
});
