import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import type { ReasoningEffort } from 'openai/resources/shared';
import type { Message, ProviderConnection, ModelEvent, ModelProvider, ModelRequest, ToolCall, ToolSpec, Usage } from './types.js';
import { emptyUsage } from './types.js';

/** OpenAI and every OpenAI-compatible Chat Completions endpoint (Ollama, vLLM, LM Studio, LiteLLM, OpenRouter). */
export class OpenAIChatProvider implements ModelProvider {
  readonly scripted = false;
  readonly label: string;
  private readonly client: OpenAI;

  constructor(private readonly options: ProviderConnection) {
    this.label = options.label;
    // maxRetries 0: retries are ours (retry.ts). The 10-minute timeout is only a backstop: cancellation comes from our signal.
    this.client = new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL ?? null, maxRetries: 0, timeout: 10 * 60_000 });
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const stream = await this.client.chat.completions.create(
      {
        model: this.options.model,
        messages: toOpenAIMessages(request.system, request.messages),
        ...(request.tools.length ? { tools: request.tools.map(toOpenAITool) } : {}),
        stream: true,
        stream_options: { include_usage: true },
        ...(request.reasoningEffort ? { reasoning_effort: request.reasoningEffort as ReasoningEffort } : {}),
      },
      { signal: request.signal },
    );
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    let usage: Usage = emptyUsage();
    let finishReason: string | null = null;
    for await (const chunk of stream) {
      if (chunk.usage) {
        usage = {
          inputTokens: chunk.usage.prompt_tokens ?? 0,
          outputTokens: chunk.usage.completion_tokens ?? 0,
          cachedTokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
        };
      }
      const choice = chunk.choices?.[0];
      if (!choice) continue;
      const delta = choice.delta;
      if (delta?.content) yield { type: 'text', text: delta.content };
      for (const fragment of delta?.tool_calls ?? []) {
        const call = calls.get(fragment.index) ?? { id: '', name: '', arguments: '' };
        if (fragment.id) call.id = fragment.id;
        if (fragment.function?.name) call.name += fragment.function.name;
        if (fragment.function?.arguments) call.arguments += fragment.function.arguments;
        calls.set(fragment.index, call);
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
    // The SDK ends the iteration quietly on abort and on a body that closes early: only a
    // finish_reason proves the answer is complete (retry.ts treats a missing `end` as broken).
    if (finishReason === null || request.signal.aborted) return;
    for (const [index, call] of [...calls.entries()].sort((a, b) => a[0] - b[0])) {
      yield { type: 'tool_call', call: { id: call.id || `call_${index}`, name: call.name, arguments: call.arguments } satisfies ToolCall };
    }
    yield { type: 'end', usage, stopReason: finishReason };
  }
}

function toOpenAITool(tool: ToolSpec): ChatCompletionTool {
  return { type: 'function', function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

export function toOpenAIMessages(system: string, messages: Message[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [{ role: 'system', content: system }];
  for (const message of messages) {
    if (message.role === 'user') out.push({ role: 'user', content: message.content });
    else if (message.role === 'tool') out.push({ role: 'tool', tool_call_id: message.toolCallId, content: message.content });
    else if (message.toolCalls?.length) {
      out.push({
        role: 'assistant',
        content: message.content || null,
        tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function' as const, function: { name: call.name, arguments: call.arguments } })),
      });
    } else out.push({ role: 'assistant', content: message.content });
  }
  return out;
}
