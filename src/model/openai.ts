import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ReasoningEffort } from 'openai/resources/shared';
import { endpointFetch } from './http.js';
import { errorStatus } from './retry.js';
import type { Message, ProviderConnection, ModelEvent, ModelProvider, ModelRequest, Reasoning, ToolCall, ToolSpec, Usage } from './types.js';
import { emptyUsage } from './types.js';

/**
 * OpenAI and every OpenAI-compatible Chat Completions endpoint (DeepSeek, OpenRouter, Groq,
 * Mistral, Gemini, xAI, Together, Fireworks, Ollama, vLLM, LM Studio, LiteLLM). The chunks are
 * read as loosely as the servers write them (docs/guide/models.md): tool calls without
 * `index`, names repeated in every chunk, content as a list of typed parts, reasoning in
 * `reasoning_content`, `reasoning`, `reasoning_details` or `<think>` tags, refusals.
 */
export class OpenAIChatProvider implements ModelProvider {
  readonly scripted = false;
  readonly label: string;
  readonly endpoint: string;
  private readonly client: OpenAI;
  /** Cleared for the rest of the session when the server rejects `stream_options` (Mistral has). */
  private sendStreamOptions: boolean;

  constructor(private readonly options: ProviderConnection) {
    this.label = options.label;
    const base = (options.baseURL ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
    this.endpoint = `POST ${base}/chat/completions`;
    this.sendStreamOptions = !options.quirks?.noStreamOptions;
    // maxRetries 0: retries are ours (retry.ts). The 10-minute timeout is only a backstop: cancellation comes from our signal.
    this.client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseURL ?? null,
      maxRetries: 0,
      timeout: 10 * 60_000,
      fetch: endpointFetch(),
      ...(options.headers ? { defaultHeaders: options.headers } : {}),
    });
  }

  private async open(request: ModelRequest): Promise<AsyncIterable<unknown>> {
    const body = {
      model: this.options.model,
      messages: toOpenAIMessages(request.system, request.messages),
      ...(request.tools.length ? { tools: request.tools.map(toOpenAITool) } : {}),
      stream: true as const,
      ...(this.sendStreamOptions ? { stream_options: { include_usage: true } } : {}),
      ...(request.reasoningEffort ? { reasoning_effort: request.reasoningEffort as ReasoningEffort } : {}),
    };
    try {
      return await this.client.chat.completions.create(body, { signal: request.signal });
    } catch (error) {
      const status = errorStatus(error);
      if (this.sendStreamOptions && (status === 400 || status === 422) && /stream_options|include_usage/i.test((error as Error).message)) {
        this.sendStreamOptions = false;
        return this.open(request);
      }
      throw error;
    }
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const stream = await this.open(request);
    const calls = new CallAssembler();
    const think = new ThinkSplitter();
    const reasoning: Reasoning = { text: '' };
    const details = new DetailsMerger();
    let refusal = '';
    let usage: Usage = emptyUsage();
    let finishReason: string | null = null;
    for await (const raw of stream) {
      const chunk = raw as unknown as RawChunk;
      if (chunk.usage) usage = this.usageOf(chunk.usage);
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta ?? {};
      for (const field of ['reasoning_content', 'reasoning'] as const) {
        const value = delta[field];
        if (typeof value === 'string' && value) {
          reasoning.text += value;
          reasoning.field ??= field;
        }
      }
      if (Array.isArray(delta.reasoning_details)) details.add(delta.reasoning_details);
      const { text, thinking } = contentParts(delta.content);
      if (thinking) reasoning.text += thinking;
      if (text) {
        const split = think.push(text);
        if (split.reasoning) reasoning.text += split.reasoning;
        if (split.text) yield { type: 'text', text: split.text };
      }
      if (typeof delta.refusal === 'string') refusal += delta.refusal;
      for (const fragment of delta.tool_calls ?? []) calls.add(fragment);
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
    // The SDK ends the iteration quietly on abort and on a body that closes early: only a
    // finish_reason proves the answer is complete (retry.ts treats a missing `end` as broken).
    if (finishReason === null || request.signal.aborted) return;
    const rest = think.flush();
    if (rest.reasoning) reasoning.text += rest.reasoning;
    if (rest.text) yield { type: 'text', text: rest.text };
    for (const call of calls.finish()) yield { type: 'tool_call', call };
    const merged = details.result();
    if (merged.length) reasoning.details = merged;
    const hasReasoning = reasoning.text !== '' || merged.length > 0;
    yield {
      type: 'end',
      usage,
      stopReason: refusal ? 'refusal' : finishReason,
      ...(hasReasoning ? { reasoning } : {}),
      ...(refusal ? { refusal } : {}),
    };
  }

  private usageOf(raw: RawUsage): Usage {
    const reasoningTokens = raw.completion_tokens_details?.reasoning_tokens ?? 0;
    const output = (raw.completion_tokens ?? 0) + (this.options.quirks?.reasoningTokensSeparate ? reasoningTokens : 0);
    return {
      inputTokens: raw.prompt_tokens ?? 0,
      outputTokens: output,
      cachedTokens: raw.prompt_tokens_details?.cached_tokens ?? raw.prompt_cache_hit_tokens ?? 0,
      ...(reasoningTokens ? { reasoningTokens } : {}),
    };
  }
}

/** A chunk as servers really send it (looser than the SDK's types). */
interface RawToolFragment {
  index?: number;
  id?: string | null;
  type?: string;
  function?: { name?: string | null; arguments?: string | null };
  extra_content?: Record<string, unknown>;
}
interface RawUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
  /** DeepSeek's spelling of cached input tokens. */
  prompt_cache_hit_tokens?: number;
}
interface RawChunk {
  usage?: RawUsage | null;
  choices?: {
    finish_reason?: string | null;
    delta?: {
      content?: unknown;
      refusal?: string | null;
      reasoning_content?: unknown;
      reasoning?: unknown;
      reasoning_details?: Record<string, unknown>[];
      tool_calls?: RawToolFragment[];
    };
  }[];
}

/** `delta.content` as a string or as typed parts (Mistral Magistral: text and thinking parts). */
export function contentParts(content: unknown): { text: string; thinking: string } {
  if (typeof content === 'string') return { text: content, thinking: '' };
  if (!Array.isArray(content)) return { text: '', thinking: '' };
  let text = '';
  let thinking = '';
  for (const part of content as Record<string, unknown>[]) {
    if (typeof part === 'string') text += part;
    else if (!part || typeof part !== 'object') continue;
    else if (part.type === 'thinking' || part.type === 'reasoning') thinking += contentParts(part.thinking ?? part.reasoning ?? part.text).text;
    else if (typeof part.text === 'string') text += part.text;
  }
  return { text, thinking };
}

function isCompleteJson(text: string): boolean {
  if (!text.trim()) return false;
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Assembles streamed tool calls. With `index` the fragments are keyed by it; without it (Mistral,
 * older Ollama, Gemini), or with the same index for every call (some serving gateways), a new id,
 * or a name arriving once the current call's arguments are complete JSON, starts a new call. A name repeated in every chunk (Fireworks, NIM) is not appended.
 */
export class CallAssembler {
  private readonly calls: { id: string; name: string; arguments: string; extra?: Record<string, unknown> }[] = [];
  private readonly byIndex = new Map<number, number>();

  add(fragment: RawToolFragment): void {
    const name = fragment.function?.name ?? '';
    const args = fragment.function?.arguments ?? '';
    // Some gateways send the string "null" as a placeholder id on continuation chunks.
    const id = fragment.id && fragment.id !== 'null' ? fragment.id : '';
    let slot: number | undefined;
    if (typeof fragment.index === 'number') slot = this.byIndex.get(fragment.index);
    else slot = this.calls.length ? this.calls.length - 1 : undefined;
    let current = slot === undefined ? undefined : this.calls[slot];
    if (current) {
      const newId = id !== '' && current.id !== '' && id !== current.id;
      const newName = name !== '' && current.name !== '' && isCompleteJson(current.arguments) && name !== current.name;
      const sameNameAfterComplete =
        name !== '' && name === current.name && isCompleteJson(current.arguments) && args !== '' && typeof fragment.index !== 'number';
      if (newId || newName || sameNameAfterComplete) current = undefined;
    }
    if (!current) {
      current = { id: '', name: '', arguments: '' };
      this.calls.push(current);
      if (typeof fragment.index === 'number') this.byIndex.set(fragment.index, this.calls.length - 1);
    }
    if (id) current.id = id;
    // Some servers repeat the whole name in every chunk; others stream it in pieces.
    if (name && name !== current.name) current.name += name;
    current.arguments += args;
    if (fragment.extra_content) current.extra = { ...current.extra, extra_content: fragment.extra_content };
  }

  finish(): ToolCall[] {
    const stamp = Date.now().toString(36);
    return this.calls.map((call, index) => ({
      id: call.id || `call_${stamp}_${index}`,
      name: call.name,
      arguments: call.arguments,
      ...(call.extra ? { extra: call.extra } : {}),
    }));
  }
}

/**
 * Splits `<think>...</think>` out of streamed content (reasoning models served without a
 * reasoning parser). Only a block at the start of the answer counts; a tag split across chunks
 * is held back until it is whole.
 */
export class ThinkSplitter {
  private state: 'start' | 'thinking' | 'answer' = 'start';
  private pending = '';

  push(piece: string): { text: string; reasoning: string } {
    this.pending += piece;
    let text = '';
    let reasoning = '';
    for (;;) {
      if (this.state === 'start') {
        const trimmed = this.pending.trimStart();
        if (trimmed.startsWith('<think>')) {
          this.pending = trimmed.slice('<think>'.length);
          this.state = 'thinking';
        } else if ('<think>'.startsWith(trimmed))
          return { text, reasoning }; // maybe the tag, wait
        else this.state = 'answer';
      } else if (this.state === 'thinking') {
        const end = this.pending.indexOf('</think>');
        if (end >= 0) {
          reasoning += this.pending.slice(0, end);
          this.pending = this.pending.slice(end + '</think>'.length).replace(/^\s+/, '');
          this.state = 'answer';
          continue;
        }
        // Keep a possible partial "</think>" at the end.
        let keep = 0;
        for (let n = Math.min(7, this.pending.length); n > 0; n--) {
          if ('</think>'.startsWith(this.pending.slice(-n))) {
            keep = n;
            break;
          }
        }
        reasoning += this.pending.slice(0, this.pending.length - keep);
        this.pending = this.pending.slice(this.pending.length - keep);
        return { text, reasoning };
      } else {
        text += this.pending;
        this.pending = '';
        return { text, reasoning };
      }
    }
  }

  flush(): { text: string; reasoning: string } {
    const rest = this.pending;
    this.pending = '';
    // An unclosed think block is reasoning; a lone partial tag at the start is text.
    return this.state === 'thinking' ? { text: '', reasoning: rest } : { text: rest, reasoning: '' };
  }
}

/** OpenRouter streams `reasoning_details` in pieces; the pieces of one index are joined. */
class DetailsMerger {
  private readonly parts: Record<string, unknown>[] = [];

  add(items: Record<string, unknown>[]): void {
    for (const item of items) {
      if (!item || typeof item !== 'object') continue;
      const last = this.parts[this.parts.length - 1];
      const sameSlot = last && last.type === item.type && (item.index === undefined || last.index === item.index);
      if (!sameSlot) {
        this.parts.push({ ...item });
        continue;
      }
      for (const [key, value] of Object.entries(item)) {
        if (typeof value === 'string' && typeof last[key] === 'string' && ['text', 'summary', 'data'].includes(key)) last[key] = (last[key] as string) + value;
        else if (value !== null && value !== undefined) last[key] = value;
      }
    }
  }

  result(): Record<string, unknown>[] {
    return this.parts;
  }
}

function toOpenAITool(tool: ToolSpec): ChatCompletionTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/**
 * The conversation in Chat Completions form. An assistant turn with tool calls carries its
 * reasoning back in the field it came in (DeepSeek and Kimi thinking modes reject the next
 * request otherwise), OpenRouter's `reasoning_details`, and each call's provider fields
 * (Gemini's thought signatures).
 */
export function toOpenAIMessages(system: string, messages: Message[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [{ role: 'system', content: system }];
  for (const message of messages) {
    if (message.role === 'user') out.push({ role: 'user', content: message.content });
    else if (message.role === 'tool') out.push({ role: 'tool', tool_call_id: message.toolCallId, content: message.content });
    else {
      const reasoning = message.reasoning;
      const echo: Record<string, unknown> = {};
      if (reasoning?.details?.length) echo.reasoning_details = reasoning.details;
      if (message.toolCalls?.length && reasoning?.field === 'reasoning_content' && reasoning.text) echo.reasoning_content = reasoning.text;
      if (message.toolCalls?.length) {
        out.push({
          role: 'assistant',
          content: message.content || null,
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: 'function' as const,
            function: { name: call.name, arguments: call.arguments },
            ...call.extra,
          })),
          ...echo,
        } as ChatCompletionMessageParam);
      } else out.push({ role: 'assistant', content: message.content, ...echo } as ChatCompletionMessageParam);
    }
  }
  return out;
}
