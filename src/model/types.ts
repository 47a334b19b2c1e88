/**
 * The conversation and streaming shapes shared by every provider. Providers translate these to
 * and from their wire formats; the agent loop only ever sees these.
 */

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments exactly as the model sent them (JSON text, possibly invalid). */
  arguments: string;
}

export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError?: boolean };

export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens served from the provider's prompt cache (a part of inputTokens). */
  cachedTokens: number;
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
}

export function addUsage(total: Usage, more: Usage): Usage {
  return {
    inputTokens: total.inputTokens + more.inputTokens,
    outputTokens: total.outputTokens + more.outputTokens,
    cachedTokens: total.cachedTokens + more.cachedTokens,
  };
}

/** The wire form of usage in traces and JSON results. */
export function usageJson(usage: Usage): { input_tokens: number; output_tokens: number; cached_tokens: number } {
  return { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, cached_tokens: usage.cachedTokens };
}

export interface ModelRequest {
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  signal: AbortSignal;
  /** 'compaction' asks for a summary (no tools); the scripted provider answers it without using a turn. */
  purpose?: 'turn' | 'compaction';
  reasoningEffort?: string;
}

/**
 * What one model call yields: text as it arrives, then each tool call once fully assembled, then
 * `end`. A stream that stops before `end` is incomplete and must never be taken as an answer.
 */
export type ModelEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'end'; usage: Usage; stopReason: string };

/** How an SDK-backed provider reaches its model. */
export interface ProviderConnection {
  /** What the user sees, e.g. "openai/gpt-4o" or "llama3.1 at http://127.0.0.1:11434/v1". */
  label: string;
  model: string;
  apiKey: string;
  baseURL?: string;
}

export interface ModelProvider {
  /** e.g. "openai/gpt-4o", "anthropic/claude-sonnet-4-5", "script:demo.json". */
  readonly label: string;
  readonly scripted: boolean;
  /** One attempt. Throws on any failure; the retry policy lives in retry.ts, not in the SDKs. */
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

/** The model (or the connection) stopped before the answer was complete. Retryable. */
export class StreamIncompleteError extends Error {
  override name = 'StreamIncompleteError';
}

/** A configuration or model-side problem that retrying cannot fix (bad key, unknown model). */
export class ModelError extends Error {
  override name = 'ModelError';
}
