import type { RunEvent, UsageJson } from '../agent/events.js';
import type { SessionStatus } from '../agent/session.js';
import type { ToolCall } from '../model/types.js';

/**
 * The lines `--format stream-json` prints (cli/render.ts writes them, typed by this union; the
 * events reference, docs/reference/events.md, is generated from it): a start line, the run's
 * events as the stream shows them, then one result line.
 */
export type StreamJsonLine =
  | { type: 'run_start'; session_id: string; model: string; scripted: boolean; profile: string }
  /** A model turn begins (compaction's model calls have no line). */
  | { type: 'turn_start'; turn: number }
  | { type: 'assistant_message'; turn: number; text: string; tool_calls: ToolCall[]; usage: UsageJson }
  | { type: 'compact'; ok: true; message: string; summarized_messages: number; kept_messages: number }
  | { type: 'compact'; ok: false; message: string }
  /** As the run event. */
  | Extract<RunEvent, { type: 'text' | 'retry' | 'tool_start' | 'tool_blocked' | 'tool_end' | 'error' }>
  /** The last line: how the run ended (--format json prints the same object without type). */
  | {
      type: 'result';
      status: Exclude<SessionStatus, 'interrupted'>;
      text: string;
      error?: string;
      usage: UsageJson;
      session_id: string;
      model: string;
      scripted: boolean;
      profile: string;
      turns: number;
      tool_calls: number;
    }
  /** The last line when the command itself failed (a usage error, no model): exit_code is the process's. */
  | { type: 'result'; status: 'error'; error: string; exit_code: number };

/** The result object of `--format json` (and stream-json's last line, with its type). */
export type ResultObject = Omit<Extract<StreamJsonLine, { type: 'result'; turns: number }>, 'type'>;
