import type { Message, usageJson } from '../model/types.js';
import type { SessionStatus, TraceEvent } from './session.js';

/**
 * The run-event stream (docs/guide/sessions.md and docs/guide/running.md): the loop emits
 * each event once; the session's trace writer (traceSubscriber) and the terminal renderer
 * (cli/render.ts) subscribe and each write their own view of it.
 */

export type UsageJson = ReturnType<typeof usageJson>;
export type ModelCallPurpose = 'turn' | 'compaction';
type AssistantMessage = Extract<Message, { role: 'assistant' }>;

export type RunEvent =
  | { type: 'run_start'; prompt: string; model: string; profile: string; profile_source: string; working_dir: string }
  /** A user message (the prompt); the assistant's and the tools' have events of their own. */
  | { type: 'message'; message: Message }
  | { type: 'llm_start'; turn: number; messages: number; purpose: ModelCallPurpose }
  | { type: 'text'; text: string }
  | { type: 'retry'; attempt: number; delay_ms: number; reason: string }
  | { type: 'llm_end'; turn: number; usage: UsageJson; duration_ms: number; stop_reason: string; attempts: number; purpose: ModelCallPurpose }
  | { type: 'assistant_message'; turn: number; message: AssistantMessage; usage: UsageJson }
  | { type: 'tool_start'; id: string; name: string; arguments: string }
  | { type: 'tool_blocked'; id: string; name: string; reason: string }
  | {
      type: 'tool_end';
      id: string;
      name: string;
      arguments: Record<string, unknown> | null;
      ok: boolean;
      duration_ms: number;
      output: string;
      metadata: Record<string, unknown>;
    }
  | { type: 'compact'; ok: true; message: string; summarized_messages: number; kept_messages: number; messages: Message[] }
  | { type: 'compact'; ok: false; message: string }
  | { type: 'error'; message: string }
  | { type: 'clear' }
  | { type: 'run_end'; status: SessionStatus; usage: UsageJson; error?: string };

export type RunEventSubscriber = (event: RunEvent) => void;
export type ToolEndEvent = Extract<RunEvent, { type: 'tool_end' }>;

/** The conversation's message for a finished (or refused, or never run) tool call. */
export function toolResultMessage(event: ToolEndEvent): Message {
  return { role: 'tool', toolCallId: event.id, name: event.name, content: event.output, ...(event.ok ? {} : { isError: true }) };
}

/**
 * Writes the run's events to the session trace in its on-disk format (docs/guide/sessions.md).
 * A tool result becomes a `message` line the moment the call finishes, then a `tool_end` for a call that
 * had a `tool_start` (calls the run stopped before have only the result); a retry and a failed compaction
 * are `error` lines; streamed text is not written.
 */
export function traceSubscriber(session: { append(event: TraceEvent): void }): RunEventSubscriber {
  const running = new Map<string, number>();
  return (event) => {
    switch (event.type) {
      case 'text':
        return;
      case 'retry':
        session.append({ type: 'error', message: `model call attempt ${event.attempt - 1} failed (${event.reason}); retrying in ${event.delay_ms} ms` });
        return;
      case 'assistant_message':
        session.append({ type: 'message', message: event.message });
        return;
      case 'tool_start':
        running.set(event.id, (running.get(event.id) ?? 0) + 1);
        session.append(event);
        return;
      case 'tool_end': {
        session.append({ type: 'message', message: toolResultMessage(event) });
        const count = running.get(event.id) ?? 0;
        if (count === 0) return;
        if (count === 1) running.delete(event.id);
        else running.set(event.id, count - 1);
        session.append({ type: 'tool_end', id: event.id, name: event.name, ok: event.ok, duration_ms: event.duration_ms, metadata: event.metadata });
        return;
      }
      case 'compact':
        if (event.ok)
          session.append({ type: 'compact', summarized_messages: event.summarized_messages, kept_messages: event.kept_messages, messages: event.messages });
        else session.append({ type: 'error', message: event.message });
        return;
      default:
        session.append(event);
    }
  };
}
