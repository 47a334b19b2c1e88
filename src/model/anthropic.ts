import Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageParam, Tool as AnthropicTool } from '@anthropic-ai/sdk/resources/messages';
import { endpointFetch } from './http.js';
import type { Message, ProviderConnection, ModelEvent, ModelProvider, ModelRequest, ToolSpec, Usage } from './types.js';

/** Anthropic requires max_tokens; enough for a long answer with tool calls. */
export const ANTHROPIC_MAX_OUTPUT_TOKENS = 8192;

export class AnthropicProvider implements ModelProvider {
  readonly scripted = false;
  readonly label: string;
  readonly endpoint: string;
  private readonly client: Anthropic;

  constructor(private readonly options: ProviderConnection) {
    this.label = options.label;
    this.endpoint = `POST ${(options.baseURL ?? 'https://api.anthropic.com').replace(/\/+$/, '')}/v1/messages`;
    this.client = new Anthropic({ apiKey: options.apiKey, baseURL: options.baseURL ?? null, maxRetries: 0, timeout: 10 * 60_000, fetch: endpointFetch() });
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const stream = await this.client.messages.create(
      {
        model: this.options.model,
        max_tokens: ANTHROPIC_MAX_OUTPUT_TOKENS,
        system: request.system,
        messages: toAnthropicMessages(request.messages),
        ...(request.tools.length ? { tools: request.tools.map(toAnthropicTool) } : {}),
        stream: true,
      },
      { signal: request.signal },
    );
    const blocks = new Map<number, { id: string; name: string; json: string }>();
    const usage: Usage = { inputTokens: 0, outputTokens: 0, cachedTokens: 0 };
    let stopReason: string | null = null;
    let stopped = false;
    let created = 0;
    let text = '';
    for await (const event of stream) {
      switch (event.type) {
        case 'message_start': {
          const u = event.message.usage;
          const cached = u.cache_read_input_tokens ?? 0;
          created = u.cache_creation_input_tokens ?? 0;
          usage.inputTokens = u.input_tokens + cached + created;
          usage.cachedTokens = cached;
          usage.outputTokens = u.output_tokens ?? 0;
          break;
        }
        case 'content_block_start':
          if (event.content_block.type === 'tool_use') blocks.set(event.index, { id: event.content_block.id, name: event.content_block.name, json: '' });
          else if (event.content_block.type === 'text' && event.content_block.text) {
            text += event.content_block.text;
            yield { type: 'text', text: event.content_block.text };
          }
          break;
        case 'content_block_delta':
          if (event.delta.type === 'text_delta') {
            text += event.delta.text;
            yield { type: 'text', text: event.delta.text };
          } else if (event.delta.type === 'input_json_delta') {
            const block = blocks.get(event.index);
            if (block) block.json += event.delta.partial_json;
          }
          break;
        case 'message_delta': {
          stopReason = event.delta.stop_reason ?? stopReason;
          // The final figures win over message_start's (server tools, fallback models and gateways
          // report the real input here); each field only where it is present.
          const u = event.usage as
            | {
                output_tokens?: number | null;
                input_tokens?: number | null;
                cache_read_input_tokens?: number | null;
                cache_creation_input_tokens?: number | null;
              }
            | undefined;
          if (typeof u?.output_tokens === 'number') usage.outputTokens = u.output_tokens;
          if (typeof u?.input_tokens === 'number' || typeof u?.cache_read_input_tokens === 'number' || typeof u?.cache_creation_input_tokens === 'number') {
            const cached = u?.cache_read_input_tokens ?? usage.cachedTokens;
            const fresh = u?.input_tokens ?? usage.inputTokens - usage.cachedTokens - created;
            created = u?.cache_creation_input_tokens ?? created;
            usage.inputTokens = fresh + cached + created;
            usage.cachedTokens = cached;
          }
          break;
        }
        case 'message_stop':
          stopped = true;
          break;
        default:
          break;
      }
    }
    // Only message_stop proves the answer is complete; anything else is a broken stream.
    if (!stopped || request.signal.aborted) return;
    for (const [, block] of [...blocks.entries()].sort((a, b) => a[0] - b[0])) {
      // A tool_use block with no input fragments means "no arguments".
      yield { type: 'tool_call', call: { id: block.id, name: block.name, arguments: block.json || '{}' } };
    }
    const refused = stopReason === 'refusal';
    yield {
      type: 'end',
      usage,
      stopReason: stopReason ?? 'end_turn',
      ...(refused ? { refusal: text.trim() || 'the model declined to answer (stop_reason "refusal")' } : {}),
    };
  }
}

function toAnthropicTool(tool: ToolSpec): AnthropicTool {
  return { name: tool.name, description: tool.description, input_schema: tool.parameters as AnthropicTool['input_schema'] };
}

function parseInput(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Anthropic wants alternating roles, tool results inside a user turn, and tool inputs as objects. */
export function toAnthropicMessages(messages: Message[]): MessageParam[] {
  const out: MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    const last = out[out.length - 1];
    if (last && last.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    if (message.role === 'user') push('user', [{ type: 'text', text: message.content || '(empty)' }]);
    else if (message.role === 'tool') {
      push('user', [
        { type: 'tool_result', tool_use_id: message.toolCallId, content: message.content || '(no output)', ...(message.isError ? { is_error: true } : {}) },
      ]);
    } else {
      const blocks: ContentBlockParam[] = message.content ? [{ type: 'text', text: message.content }] : [];
      for (const call of message.toolCalls ?? []) blocks.push({ type: 'tool_use', id: call.id, name: call.name, input: parseInput(call.arguments) });
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: '(no answer)' }]);
    }
  }
  return out;
}
