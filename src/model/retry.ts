import type { ModelEvent, ModelProvider, ModelRequest } from './types.js';
import { ClassifiedModelError, StreamIncompleteError } from './types.js';

/**
 * Our retry policy for model calls (the SDKs' own retries are turned off so that this is the
 * only one): exponential backoff with jitter on 408/409/429/5xx, network errors and streams that
 * broke mid-way, honouring Retry-After, at most MAX_MODEL_ATTEMPTS attempts.
 */
export const MAX_MODEL_ATTEMPTS = 6;
export const DEFAULT_RETRY_BASE_MS = 1000;
export const MAX_RETRY_DELAY_MS = 30_000;
/** A Retry-After longer than this is not waited for: the call fails with the server's message. */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** QUARRY_RETRY_BASE_MS shortens the first delay (tests use 1 ms); it doubles on each retry. */
export function retryPolicyFromEnv(env: NodeJS.ProcessEnv = process.env): RetryPolicy {
  const base = Number(env.QUARRY_RETRY_BASE_MS);
  const baseDelayMs =
    Number.isFinite(base) && base >= 0 && env.QUARRY_RETRY_BASE_MS !== '' && env.QUARRY_RETRY_BASE_MS !== undefined ? base : DEFAULT_RETRY_BASE_MS;
  return { maxAttempts: MAX_MODEL_ATTEMPTS, baseDelayMs, maxDelayMs: Math.max(baseDelayMs, MAX_RETRY_DELAY_MS) };
}

const RETRYABLE_STATUS = new Set([408, 409, 429]);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

interface ErrorLike {
  name?: string;
  message?: string;
  status?: number;
  code?: string;
  headers?: unknown;
  cause?: unknown;
}

export function errorStatus(error: unknown): number | undefined {
  const status = (error as ErrorLike | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

function isNetworkError(error: unknown): boolean {
  for (let current = error as ErrorLike | undefined, depth = 0; current && depth < 5; current = current.cause as ErrorLike | undefined, depth++) {
    if (current.name === 'APIConnectionError' || current.name === 'APIConnectionTimeoutError') return true;
    if (current.code && NETWORK_CODES.has(current.code)) return true;
    if (current.name === 'TypeError' && /terminated|fetch failed|other side closed/i.test(current.message ?? '')) return true;
  }
  return false;
}

function classified(error: unknown): ClassifiedModelError | undefined {
  for (let current = error as ErrorLike | undefined, depth = 0; current && depth < 5; current = current.cause as ErrorLike | undefined, depth++) {
    if (current instanceof ClassifiedModelError) return current;
  }
  return undefined;
}

/** In-stream error types that mean "try again later" (OpenAI, OpenRouter, Anthropic, vLLM spellings). */
const RETRYABLE_TYPES = /overloaded|rate.?limit|server.?error|api_error|internal|unavailable|timeout|too_many_requests|resource_exhausted/i;

/**
 * An error the provider sent inside a 200 event stream (the SDKs throw these with no status):
 * OpenAI's and OpenRouter's `{"error": {...}}` chunk, Anthropic's `event: error`. Gives the
 * provider's type or numeric code and message, or undefined for any other error.
 */
export function inStreamError(error: unknown): { type: string; message: string; retryable: boolean } | undefined {
  const e = error as (ErrorLike & { error?: unknown }) | null;
  if (!e || errorStatus(error) !== undefined || e.name === 'APIConnectionError' || !e.error || typeof e.error !== 'object') return undefined;
  let body = e.error as Record<string, unknown>;
  if (body.error && typeof body.error === 'object') body = body.error as Record<string, unknown>;
  const code = body.code;
  const type = String(body.type ?? body.status ?? code ?? 'error');
  const message = typeof body.message === 'string' ? body.message : JSON.stringify(body);
  const numeric = typeof code === 'number' ? code : /^\d{3}$/.test(String(code ?? '')) ? Number(code) : undefined;
  const retryable = numeric !== undefined ? RETRYABLE_STATUS.has(numeric) || numeric >= 500 : RETRYABLE_TYPES.test(`${type} ${String(code ?? '')}`);
  return { type, message, retryable };
}

export function isRetryable(error: unknown): boolean {
  const decided = classified(error);
  if (decided) return decided.retryable;
  if (error instanceof StreamIncompleteError) return true;
  const status = errorStatus(error);
  // 501 Not Implemented and 505 HTTP Version Not Supported will answer the same next time.
  if (status !== undefined) return RETRYABLE_STATUS.has(status) || (status >= 500 && status !== 501 && status !== 505);
  const inStream = inStreamError(error);
  if (inStream) return inStream.retryable;
  return isNetworkError(error);
}

function headerValue(headers: unknown, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/** Milliseconds the server asked us to wait (retry-after-ms, Retry-After seconds or HTTP date), if any. */
export function retryAfterMs(error: unknown, now = Date.now()): number | undefined {
  const headers = (error as ErrorLike | null)?.headers;
  const ms = Number(headerValue(headers, 'retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && headerValue(headers, 'retry-after-ms') !== undefined) return ms;
  const value = headerValue(headers, 'retry-after');
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && value.trim() !== '') return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export function backoffDelayMs(policy: RetryPolicy, attempt: number, random = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  // "Equal jitter": at least half the delay, so retries never bunch up at zero.
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

const STATUS_HINTS: Record<number, string> = {
  401: 'the API key was rejected: check the key variable docs/guide/models.md names for this provider',
  403: 'the API key may not use this model',
  404: 'check the model name and --base-url',
};

export function describeModelError(error: unknown): string {
  const status = errorStatus(error);
  const message = (error as ErrorLike | null)?.message ?? String(error);
  if (error instanceof StreamIncompleteError) return message;
  const decided = classified(error);
  if (decided) return decided.message;
  const inStream = inStreamError(error);
  if (inStream) return `the server sent an error inside the stream (${inStream.type}): ${inStream.message}`;
  if (status !== undefined) {
    const text = message.startsWith(String(status)) ? message : `HTTP ${status}: ${message}`;
    return STATUS_HINTS[status] ? `${text} (${STATUS_HINTS[status]})` : text;
  }
  if (isNetworkError(error)) {
    const cause = (error as ErrorLike).cause as ErrorLike | undefined;
    return `network error: ${message}${cause?.message && cause.message !== message ? ` (${cause.message})` : ''}`;
  }
  return message;
}

export class ModelCallFailed extends Error {
  override name = 'ModelCallFailed';
  constructor(
    message: string,
    readonly attempts: number,
    override readonly cause: unknown,
  ) {
    super(message);
  }
}

export class CancelledError extends Error {
  override name = 'CancelledError';
  constructor() {
    super('cancelled');
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new CancelledError());
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CancelledError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Emitted between attempts: whatever text the failed attempt streamed is void. */
export interface RetryNotice {
  type: 'retry';
  attempt: number;
  delayMs: number;
  reason: string;
}

/**
 * Streams one model turn, retrying per the policy. Yields the provider's events, and a `retry`
 * notice before each new attempt. Throws CancelledError when the signal fires and
 * ModelCallFailed when the attempts are spent or the error is not retryable.
 */
export async function* streamWithRetries(provider: ModelProvider, request: ModelRequest, policy: RetryPolicy): AsyncGenerator<ModelEvent | RetryNotice> {
  const where = provider.endpoint ? ` (${provider.endpoint})` : '';
  for (let attempt = 1; ; attempt++) {
    let ended = false;
    // Each attempt gets its own signal, linked to the run's and unlinked when the attempt ends:
    // the SDKs add an abort listener per request to the signal they are given, and a long run
    // would otherwise pile them up on the run's signal (MaxListenersExceededWarning, growing memory).
    const attemptController = new AbortController();
    const relay = () => attemptController.abort(request.signal.reason);
    if (request.signal.aborted) relay();
    else request.signal.addEventListener('abort', relay, { once: true });
    try {
      for await (const event of provider.stream({ ...request, signal: attemptController.signal })) {
        if (request.signal.aborted) throw new CancelledError();
        yield event;
        if (event.type === 'end') ended = true;
      }
      if (request.signal.aborted) throw new CancelledError();
      if (!ended) throw new StreamIncompleteError('the model stream ended before the answer was complete');
      return;
    } catch (error) {
      if (request.signal.aborted || error instanceof CancelledError) throw new CancelledError();
      const reason = describeModelError(error);
      if (!isRetryable(error)) throw new ModelCallFailed(`model call failed${where}: ${reason}`, attempt, error);
      if (attempt >= policy.maxAttempts) throw new ModelCallFailed(`model call failed after ${attempt} attempts${where}: ${reason}`, attempt, error);
      const asked = retryAfterMs(error);
      if (asked !== undefined && asked > MAX_RETRY_AFTER_MS) {
        throw new ModelCallFailed(`model call failed${where}: ${reason} (the server asks to retry after ${Math.round(asked / 1000)} s)`, attempt, error);
      }
      const delayMs = asked ?? backoffDelayMs(policy, attempt);
      yield { type: 'retry', attempt: attempt + 1, delayMs, reason };
      await sleep(delayMs, request.signal);
    } finally {
      request.signal.removeEventListener('abort', relay);
    }
  }
}
