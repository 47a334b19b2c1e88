import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Loopback servers that speak the providers' real streaming wire protocols, scripted per test:
 * OpenAI Chat Completions (SSE chunks, tool-call fragments split across chunks, a usage chunk,
 * [DONE]) and Anthropic Messages (message_start ... message_stop). Every request is recorded.
 */

export interface ScriptedToolCall {
  id?: string;
  name: string;
  /** JSON text as the model would send it (may be invalid on purpose). */
  arguments: string;
}

export type Reply =
  | {
      text?: string;
      toolCalls?: ScriptedToolCall[];
      usage?: { input: number; output: number; cached?: number };
      /** Destroy the connection after this many SSE events (a stream broken mid-way). */
      cutAfter?: number;
      /** Send the text, then keep the connection open without finishing (for cancellation). */
      hang?: boolean;
    }
  | { status: number; headers?: Record<string, string>; message?: string }
  /**
   * Bytes exactly as a real server wrote them (a recorded stream shape, an HTML page, an error
   * body of any form): status 200 and text/event-stream unless given.
   */
  | { raw: string | string[]; rawStatus?: number; contentType?: string };

/** One SSE `data:` event per JSON chunk (or a literal string), then `[DONE]`. */
export function sse(chunks: (Record<string, unknown> | string)[], done = true): string[] {
  return [...chunks.map((chunk) => `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`), ...(done ? ['data: [DONE]\n\n'] : [])];
}

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface FakeServer {
  /** Base URL including /v1. */
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export type ReplySource = Reply[] | ((request: RecordedRequest, index: number) => Reply);

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}

export function openAIEvents(reply: Extract<Reply, { text?: string }>): string[] {
  const base = { id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 1, model: 'test-model' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const events: string[] = [chunk({ role: 'assistant', content: '' })];
  for (const part of pieces(reply.text ?? '', 5)) events.push(chunk({ content: part }));
  (reply.toolCalls ?? []).forEach((call, index) => {
    events.push(chunk({ tool_calls: [{ index, id: call.id ?? `call_${index + 1}`, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const part of pieces(call.arguments, Math.max(1, Math.ceil(call.arguments.length / 3)))) {
      events.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
  });
  events.push(chunk({}, reply.toolCalls?.length ? 'tool_calls' : 'stop'));
  const usage = reply.usage ?? { input: 10, output: 5 };
  events.push(
    JSON.stringify({
      ...base,
      choices: [],
      usage: {
        prompt_tokens: usage.input,
        completion_tokens: usage.output,
        total_tokens: usage.input + usage.output,
        prompt_tokens_details: { cached_tokens: usage.cached ?? 0 },
      },
    }),
  );
  events.push('[DONE]');
  return events.map((data) => `data: ${data}\n\n`);
}

export function anthropicEvents(reply: Extract<Reply, { text?: string }>): string[] {
  const usage = reply.usage ?? { input: 10, output: 5 };
  const events: [string, Record<string, unknown>][] = [
    [
      'message_start',
      {
        type: 'message_start',
        message: {
          id: 'msg_test',
          type: 'message',
          role: 'assistant',
          model: 'claude-test',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: usage.input - (usage.cached ?? 0),
            output_tokens: 1,
            cache_read_input_tokens: usage.cached ?? 0,
            cache_creation_input_tokens: 0,
          },
        },
      },
    ],
  ];
  let index = 0;
  if (reply.text) {
    events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
    for (const part of pieces(reply.text, 5))
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: part } }]);
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    index++;
  }
  for (const call of reply.toolCalls ?? []) {
    events.push([
      'content_block_start',
      { type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id ?? `toolu_${index}`, name: call.name, input: {} } },
    ]);
    for (const part of pieces(call.arguments, Math.max(1, Math.ceil(call.arguments.length / 3)))) {
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } }]);
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
    index++;
  }
  events.push([
    'message_delta',
    {
      type: 'message_delta',
      delta: { stop_reason: reply.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: usage.output },
    },
  ]);
  events.push(['message_stop', { type: 'message_stop' }]);
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

function startServer(kind: 'openai' | 'anthropic', source: ReplySource): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer(async (request, response) => {
    const recorded: RecordedRequest = { path: request.url ?? '', headers: request.headers, body: await readBody(request) };
    requests.push(recorded);
    const index = requests.length - 1;
    const reply = typeof source === 'function' ? source(recorded, index) : source[index];
    if (!reply) {
      response
        .writeHead(500, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: `fake server: no scripted reply for request ${index + 1}` } }));
      return;
    }
    if ('raw' in reply) {
      response.writeHead(reply.rawStatus ?? 200, { 'content-type': reply.contentType ?? 'text/event-stream' });
      for (const piece of Array.isArray(reply.raw) ? reply.raw : [reply.raw]) response.write(piece);
      response.end();
      return;
    }
    if ('status' in reply) {
      const error =
        kind === 'openai'
          ? { error: { message: reply.message ?? `status ${reply.status}`, type: 'test' } }
          : { type: 'error', error: { type: 'test_error', message: reply.message ?? `status ${reply.status}` } };
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify(error));
      return;
    }
    open.add(response);
    response.on('close', () => open.delete(response));
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const events = kind === 'openai' ? openAIEvents(reply) : anthropicEvents(reply);
    if (reply.hang) {
      // The text, then nothing more: the connection stays open until the client goes away.
      const upToText = events.filter((event) => !/finish_reason":"(stop|tool_calls)"|\[DONE\]|"usage"|message_delta|message_stop/.test(event));
      for (const event of upToText) response.write(event);
      return;
    }
    for (const [i, event] of events.entries()) {
      if (reply.cutAfter !== undefined && i >= reply.cutAfter) {
        response.socket?.destroy();
        return;
      }
      response.write(event);
    }
    response.end();
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        close: () =>
          new Promise<void>((done) => {
            for (const response of open) response.socket?.destroy();
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

export function startOpenAIServer(source: ReplySource): Promise<FakeServer> {
  return startServer('openai', source);
}

export function startAnthropicServer(source: ReplySource): Promise<FakeServer> {
  return startServer('anthropic', source);
}
