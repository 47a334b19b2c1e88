import { ClassifiedModelError } from './types.js';

/**
 * The fetch both SDKs use (passed as their `fetch` option). It fixes three things the SDKs get
 * wrong with servers other than the vendor's own:
 * - an error body without an `error.message` (older vLLM and TensorRT-LLM `{"detail": ...}` or
 *   `{"message": ...}`, Mistral's 422 `detail` list, Gemini's JSON array, an HTML or text page) is
 *   rewritten into the shape the SDKs read, so the user sees the server's own words instead of
 *   "400 status code (no body)";
 * - a 200 reply to a streaming request that is not an event stream (an HTML page from a wrong URL
 *   or a proxy) fails at once, saying what came back, instead of being retried as a broken stream;
 * - nothing listening on a loopback port (connection refused) fails at once: a local server that
 *   is not running will not start within a retry window.
 */

/** How much of a server's error text is shown. */
export const SERVER_MESSAGE_CHARS = 500;

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\]|::1|0\.0\.0\.0)$/i;

function cut(text: string, limit = SERVER_MESSAGE_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit - 3)}...` : flat;
}

function stringField(value: unknown): string | undefined {
  if (typeof value === 'string' && value.trim()) return value;
  // Mistral nests its validation list: {"message": {"detail": [...]}}.
  if (value && typeof value === 'object' && !Array.isArray(value) && 'detail' in value) return stringField((value as { detail: unknown }).detail);
  if (Array.isArray(value) && value.length) {
    // FastAPI/pydantic validation lists (Mistral 422, vLLM): [{"loc": [...], "msg": "..."}].
    const parts = value.map((item) => {
      if (typeof item === 'string') return item;
      const entry = (item ?? {}) as { msg?: unknown; message?: unknown; loc?: unknown };
      const text = typeof entry.msg === 'string' ? entry.msg : typeof entry.message === 'string' ? entry.message : JSON.stringify(item);
      return Array.isArray(entry.loc) ? `${entry.loc.join('.')}: ${text}` : text;
    });
    return parts.join('; ');
  }
  return undefined;
}

/** The server's own message from an error body of any common shape; undefined for an empty body. */
export function serverMessage(body: string): { message: string; type?: unknown; code?: unknown } | undefined {
  const text = body.trim();
  if (!text) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // An HTML page: its text without tags (the title comes first).
    return { message: cut(text.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ')) };
  }
  // Gemini wraps its error in a one-element array.
  if (Array.isArray(json) && json.length && typeof json[0] === 'object') json = json[0];
  if (!json || typeof json !== 'object') return { message: cut(text) };
  const object = json as Record<string, unknown>;
  const inner = object.error;
  if (inner && typeof inner === 'object' && !Array.isArray(inner)) {
    const error = inner as Record<string, unknown>;
    const message = stringField(error.message) ?? stringField(error.msg) ?? JSON.stringify(error);
    return { message: cut(message), type: error.type ?? error.status ?? object.type, code: error.code ?? object.code };
  }
  const headline = stringField(inner) ?? stringField(object.message) ?? stringField(object.msg);
  // A message beside a validation list (Mistral: "Extra inputs are not permitted" with the field
  // only in detail[].loc) keeps both, so the field the server rejects is named.
  const detail = stringField(object.detail);
  const message = headline && detail && headline !== detail ? `${headline} (${detail})` : (headline ?? detail ?? JSON.stringify(object));
  return { message: cut(message), type: object.type, code: object.code };
}

function isStreamingRequest(init: RequestInit | undefined): boolean {
  return typeof init?.body === 'string' && /"stream"\s*:\s*true/.test(init.body);
}

function errorCode(error: unknown): string | undefined {
  for (
    let current = error as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    current && depth < 5;
    current = current.cause as typeof current, depth++
  ) {
    if (typeof current.code === 'string') return current.code;
  }
  return undefined;
}

function describeContentType(response: Response): string {
  return response.headers.get('content-type')?.split(';')[0]?.trim() || 'no content type';
}

/** Reads the first piece of a body and gives back a body that still starts with it. */
async function peek(response: Response): Promise<{ head: string; body: ReadableStream<Uint8Array> | null }> {
  if (!response.body) return { head: '', body: null };
  const reader = response.body.getReader();
  const first = await reader.read();
  const bytes = first.value ?? new Uint8Array();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (bytes.length) controller.enqueue(bytes);
      if (first.done) controller.close();
    },
    async pull(controller) {
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return { head: new TextDecoder().decode(bytes), body };
}

export function endpointFetch(inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    let response: Response;
    try {
      response = await inner(input, init);
    } catch (error) {
      if (init?.signal?.aborted) throw error;
      const host = new URL(url).hostname;
      if (errorCode(error) === 'ECONNREFUSED' && LOOPBACK.test(host)) {
        throw new ClassifiedModelError(
          `nothing is listening at ${new URL(url).origin} (connection refused): start the model server or check --base-url`,
          false,
        );
      }
      // fetch refuses the ports browsers block (1, 22, 25, 6000, ...): retrying cannot help.
      if (/^bad port$/i.test((error as { cause?: { message?: string } }).cause?.message ?? '')) {
        throw new ClassifiedModelError(
          `fetch refuses to connect to port ${new URL(url).port} (a port on the fetch standard's blocked list): serve the model on another port`,
          false,
        );
      }
      throw error;
    }
    if (!response.ok) {
      const text = await response.text();
      const found = serverMessage(text);
      const message = found?.message ?? `${response.status} ${response.statusText || 'error'} with an empty body`;
      const error = { message, ...(found?.type !== undefined ? { type: found.type } : {}), ...(found?.code !== undefined ? { code: found.code } : {}) };
      // Both SDKs read `error.message` (OpenAI) or the whole body's `message` (Anthropic).
      return new Response(JSON.stringify({ type: 'error', message, error }), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    }
    if (!isStreamingRequest(init)) return response;
    const contentType = describeContentType(response);
    if (/event-stream/i.test(contentType)) return response;
    // Some servers label a real event stream text/plain (or nothing): look at what came.
    const { head, body } = await peek(response);
    if (/^\s*(data|event|id|retry)\s*:|^:/.test(head))
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    await body?.cancel().catch(() => undefined);
    const what = head.trim() ? `: ${cut(serverMessage(head)?.message ?? head, 200)}` : ' with an empty body';
    throw new ClassifiedModelError(
      `the server answered ${response.status} with ${contentType}, not an event stream (is the URL a model API? a wrong --base-url or a proxy page gives ` +
        `this)${what}`,
      false,
    );
  };
}
