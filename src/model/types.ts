/**
 * The conversation and streaming shapes shared by every provider. Providers translate these to
 * and from their wire formats; the agent loop only ever sees these.
 */

export interface ToolCall {
  id: string;
  name: string;
  /** The arguments exactly as the model sent them (JSON text, possibly invalid). */
  arguments: string;
  /**
   * Provider fields that must go back with the call on the next request, verbatim (Gemini's
   * `extra_content.google.thought_signature` on its OpenAI-compatible API).
   */
  extra?: Record<string, unknown>;
}

/**
 * The model's reasoning for one assistant turn: kept out of the answer, recorded in the trace,
 * and sent back where the provider requires it (docs/guide/models.md).
 */
export interface Reasoning {
  text: string;
  /** The Chat Completions field it arrived in; DeepSeek and Kimi require it back in that field. */
  field?: 'reasoning_content' | 'reasoning';
  /** OpenRouter's `reasoning_details` (encrypted and signed parts), merged per index, sent back as is. */
  details?: Record<string, unknown>[];
}

export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[]; reasoning?: Reasoning; refusal?: string }
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
  /** Reasoning tokens where the provider reports them (a part of outputTokens). */
  reasoningTokens?: number;
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
}

export function addUsage(total: Usage, more: Usage): Usage {
  const reasoningTokens = (total.reasoningTokens ?? 0) + (more.reasoningTokens ?? 0);
  return {
    inputTokens: total.inputTokens + more.inputTokens,
    outputTokens: total.outputTokens + more.outputTokens,
    cachedTokens: total.cachedTokens + more.cachedTokens,
    ...(reasoningTokens ? { reasoningTokens } : {}),
  };
}

/** The wire form of usage in traces and JSON results; reasoning_tokens only where a provider reported some. */
export function usageJson(usage: Usage): { input_tokens: number; output_tokens: number; cached_tokens: number; reasoning_tokens?: number } {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cached_tokens: usage.cachedTokens,
    ...(usage.reasoningTokens ? { reasoning_tokens: usage.reasoningTokens } : {}),
  };
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
  /**
   * The end of a complete answer. `reasoning` is what the model thought (never part of the text);
   * `refusal` is set when the model declined to answer (OpenAI `refusal`, Anthropic `stop_reason: "refusal"`).
   */
  | { type: 'end'; usage: Usage; stopReason: string; reasoning?: Reasoning; refusal?: string };

/** How an SDK-backed provider reaches its model. */
export interface ProviderConnection {
  /** What the user sees, e.g. "openai/gpt-4o" or "llama3.1 at http://127.0.0.1:11434/v1". */
  label: string;
  model: string;
  apiKey: string;
  baseURL?: string;
  /** Extra request headers (OpenRouter's attribution headers). */
  headers?: Record<string, string>;
  /** Per-provider quirks from the preset (resolve.ts). */
  quirks?: ProviderQuirks;
}

export interface ProviderQuirks {
  /** Never send `stream_options` (servers that reject it with 422); otherwise learned on the first rejection. */
  noStreamOptions?: boolean;
  /** Reasoning tokens are billed on top of completion_tokens (xAI): add them to output tokens. */
  reasoningTokensSeparate?: boolean;
}

export interface ModelProvider {
  /** e.g. "openai/gpt-4o", "anthropic/claude-sonnet-4-5", "script:demo.json". */
  readonly label: string;
  readonly scripted: boolean;
  /** The URL requests go to, named in every error ("POST http://127.0.0.1:8000/v1/chat/completions"). */
  readonly endpoint?: string;
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

/** An error whose retry decision is already made (a known in-stream error, a non-stream reply). */
export class ClassifiedModelError extends Error {
  override name = 'ClassifiedModelError';
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}
