import { describe, expect, it } from 'vitest';
import { answerDanglingCalls } from '../../src/agent/session.js';
import { compactionSplit, manualCompactionSplit } from '../../src/agent/compaction.js';
import { chooseModel, knownContextWindow, DEFAULT_CONTEXT_WINDOW } from '../../src/model/resolve.js';
import { backoffDelayMs, isRetryable, retryAfterMs, retryPolicyFromEnv, MAX_MODEL_ATTEMPTS } from '../../src/model/retry.js';
import { parseScript } from '../../src/model/script.js';
import { StreamIncompleteError, type Message } from '../../src/model/types.js';

describe('choosing the model', () => {
  it('maps --model and --base-url to providers', () => {
    expect(chooseModel({ model: 'llama3.1', baseUrl: 'http://127.0.0.1:11434/v1', env: {} })).toMatchObject({
      kind: 'openai',
      model: 'llama3.1',
      baseURL: 'http://127.0.0.1:11434/v1',
    });
    expect(chooseModel({ model: 'meta-llama/llama-3.1-70b', baseUrl: 'https://openrouter.ai/api/v1', env: {} })).toMatchObject({
      kind: 'openai',
      model: 'meta-llama/llama-3.1-70b',
    });
    expect(chooseModel({ model: 'openai/gpt-4.1', env: { OPENAI_API_KEY: 'k' } })).toMatchObject({ kind: 'openai', model: 'gpt-4.1', apiKey: 'k' });
    expect(chooseModel({ model: 'anthropic/claude-sonnet-4-5', env: { ANTHROPIC_API_KEY: 'a' } })).toMatchObject({
      kind: 'anthropic',
      model: 'claude-sonnet-4-5',
    });
    expect(chooseModel({ model: 'ollama/qwen3', env: {} })).toMatchObject({ kind: 'openai', model: 'qwen3', baseURL: 'http://127.0.0.1:11434/v1' });
    expect(chooseModel({ model: 'gpt-4o', env: { OPENAI_API_KEY: 'k' } })).toMatchObject({ kind: 'openai', model: 'gpt-4o' });
    expect(chooseModel({ env: { QUARRY_MODEL: 'script:demo.json' } })).toMatchObject({ kind: 'script', model: 'demo.json' });
    expect(chooseModel({ model: 'phi4', env: { OPENAI_BASE_URL: 'http://localhost:8000/v1' } })).toMatchObject({
      kind: 'openai',
      model: 'phi4',
      baseURL: 'http://localhost:8000/v1',
    });
  });

  it('explains what is missing', () => {
    expect(() => chooseModel({ env: {} })).toThrow(/no model configured/);
    expect(() => chooseModel({ model: 'openai/gpt-4.1', env: {} })).toThrow(/export OPENAI_API_KEY/);
    expect(() => chooseModel({ model: 'anthropic/claude-x', env: {} })).toThrow(/export ANTHROPIC_API_KEY/);
    expect(() => chooseModel({ model: 'mystery', env: {} })).toThrow(/cannot tell which provider serves "mystery"/);
    expect(() => chooseModel({ baseUrl: 'http://x/v1', env: {} })).toThrow(/--base-url needs --model/);
  });

  it('knows context windows of common models', () => {
    expect(knownContextWindow('claude-sonnet-4-5')).toBe(200_000);
    expect(knownContextWindow('gpt-4.1-mini')).toBe(1_047_576);
    expect(knownContextWindow('llama3.1')).toBe(DEFAULT_CONTEXT_WINDOW);
    expect(knownContextWindow('deepseek-reasoner')).toBe(128_000);
    expect(knownContextWindow('gemini-2.5-pro')).toBe(1_048_576);
    expect(knownContextWindow('x-ai/grok-4-fast')).toBe(256_000);
    expect(knownContextWindow('accounts/fireworks/models/kimi-k2-instruct')).toBe(131_072);
    expect(knownContextWindow('meta-llama/llama-3.3-70b-instruct')).toBe(131_072);
  });
});

describe('retry policy', () => {
  it('retries what can succeed later and nothing else', () => {
    for (const status of [408, 409, 429, 500, 502, 503, 529]) expect(isRetryable({ status })).toBe(true);
    for (const status of [400, 401, 403, 404, 422, 501, 505]) expect(isRetryable({ status })).toBe(false);
    expect(isRetryable(new StreamIncompleteError('cut'))).toBe(true);
    expect(isRetryable({ name: 'APIConnectionError', message: 'Connection error.' })).toBe(true);
    expect(isRetryable(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } }))).toBe(true);
    expect(isRetryable(new Error('unexpected'))).toBe(false);
  });

  it('honours Retry-After in seconds, as a date, and retry-after-ms', () => {
    expect(retryAfterMs({ headers: new Headers({ 'retry-after': '3' }) })).toBe(3000);
    expect(retryAfterMs({ headers: new Headers({ 'retry-after-ms': '250' }) })).toBe(250);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs({ headers: new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }) }, now)).toBe(5000);
    expect(retryAfterMs({ headers: new Headers({}) })).toBeUndefined();
  });

  it('backs off exponentially with jitter, at most 6 attempts', () => {
    const policy = retryPolicyFromEnv({});
    expect(policy.maxAttempts).toBe(MAX_MODEL_ATTEMPTS);
    expect(MAX_MODEL_ATTEMPTS).toBe(6);
    expect(backoffDelayMs(policy, 1, () => 0)).toBe(500);
    expect(backoffDelayMs(policy, 1, () => 1)).toBe(1000);
    expect(backoffDelayMs(policy, 3, () => 1)).toBe(4000);
    expect(backoffDelayMs(policy, 10, () => 1)).toBe(30_000);
    expect(retryPolicyFromEnv({ QUARRY_RETRY_BASE_MS: '1' }).baseDelayMs).toBe(1);
  });
});

describe('conversation repair and compaction split', () => {
  it('answers calls left without a result by a crash', () => {
    const messages: Message[] = [
      { role: 'user', content: 'q' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 'read', arguments: '{}' },
          { id: 'b', name: 'list', arguments: '{}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', name: 'read', content: 'done' },
    ];
    const repaired = answerDanglingCalls(messages);
    expect(repaired).toHaveLength(4);
    expect(repaired[3]).toMatchObject({ role: 'tool', toolCallId: 'b', isError: true, content: expect.stringMatching(/not run/) });
  });

  it('never splits a tool result from its call', () => {
    const messages: Message[] = [
      { role: 'user', content: 'x'.repeat(4000) },
      { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 'read', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'a', name: 'read', content: 'y'.repeat(4000) },
      { role: 'assistant', content: 'short answer' },
      { role: 'user', content: 'next' },
    ];
    expect(compactionSplit(messages, 100)).toBe(3);
    expect(compactionSplit(messages, 10)).toBe(4);
    expect(manualCompactionSplit(messages)).toBe(4);
    expect(compactionSplit([{ role: 'user', content: 'only' }], 10)).toBeNull();
  });
});

describe('model scripts', () => {
  it('reads turns with object or raw-string arguments and rejects malformed files', () => {
    const turns = parseScript('{"turns":[{"text":"a","tool_calls":[{"name":"read","arguments":{"path":"x"}},{"name":"read","arguments":"{bad"}]}]}', 's.json');
    expect(turns[0]?.toolCalls).toEqual([
      { name: 'read', arguments: '{"path":"x"}' },
      { name: 'read', arguments: '{bad' },
    ]);
    expect(() => parseScript('{', 's.json')).toThrow(/s.json is not valid JSON/);
    expect(() => parseScript('{"turns":[{"tool_calls":[{}]}]}', 's.json')).toThrow(/tool_calls\[0\]\.name must be a string/);
  });
});
