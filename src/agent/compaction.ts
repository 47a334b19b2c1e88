import type { Message } from '../model/types.js';

/**
 * Compaction (docs/guide/running.md): when the conversation passes COMPACTION_THRESHOLD of the context window,
 * the older turns are summarised by the model and replaced by the summary; the system prompt
 * and the most recent turns stay as they were.
 */
export const COMPACTION_THRESHOLD = 0.8;
/** Automatic compaction keeps recent messages up to this share of the window. */
export const KEEP_RECENT_FRACTION = 0.3;
/** Automatic compaction is skipped when the older part is too small for a summary to free anything. */
export const MIN_SUMMARISED_FRACTION = 0.1;
/** A rough, provider-independent count; real counts from the provider are used when larger. */
const CHARS_PER_TOKEN = 4;
/** What of each older message the summariser sees (tool outputs can be 64 KiB each). */
const SUMMARY_MESSAGE_CHARS = 4000;
const SUMMARY_TOOL_RESULT_CHARS = 1500;

export const SUMMARY_PREFIX = '[Summary of the earlier conversation, written when it was compacted]';

export const SUMMARY_SYSTEM_PROMPT =
  `You summarise the earlier part of a conversation between a user and quarry, a data-analysis agent, so that the agent ` +
  `can continue without it.
Keep everything the agent still needs: the user's goals and requests, decisions made, database and table names, columns, the exact SQL that worked, key ` +
  `numbers and results, files read or written (with paths), errors met and how they were resolved, and what was left to do.
Write plain, dense prose or bullet points. Do not invent anything. Do not address the user.`;

export function estimateTokens(messages: readonly Message[], extraChars = 0): number {
  let chars = extraChars;
  for (const message of messages) {
    chars += message.content.length + 16;
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) chars += call.name.length + call.arguments.length + 16;
  }
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/**
 * Where the kept, recent part begins: the earliest message boundary (never a tool result,
 * which must stay beside its call) whose suffix fits keepTokens; at least the last boundary.
 * null when there is nothing older to summarise.
 */
export function compactionSplit(messages: readonly Message[], keepTokens: number): number | null {
  const boundaries: number[] = [];
  for (let i = 1; i < messages.length; i++) if ((messages[i] as Message).role !== 'tool') boundaries.push(i);
  if (boundaries.length === 0) return null;
  for (const index of boundaries) if (estimateTokens(messages.slice(index)) <= keepTokens) return index;
  return boundaries[boundaries.length - 1] as number;
}

/** /compact: keep the last exchange (from the last user message), summarise the rest. */
export function manualCompactionSplit(messages: readonly Message[]): number | null {
  for (let i = messages.length - 1; i > 0; i--) if ((messages[i] as Message).role === 'user') return i;
  return compactionSplit(messages, 0);
}

function clip(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)} [... ${text.length - limit} more characters]` : text;
}

/** What of one tool result the summariser sees. */
export function clipToolResult(text: string): string {
  return clip(text, SUMMARY_TOOL_RESULT_CHARS);
}

/**
 * The older part as one text for the summariser (no tool-call structure, so any provider accepts it).
 * `resultsClipped`: the tool results were already cut with clipToolResult (and marked, src/agent/marking.ts).
 */
export function renderForSummary(messages: readonly Message[], resultsClipped = false): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === 'user') lines.push(`USER: ${clip(message.content, SUMMARY_MESSAGE_CHARS)}`);
    else if (message.role === 'assistant') {
      if (message.content) lines.push(`ASSISTANT: ${clip(message.content, SUMMARY_MESSAGE_CHARS)}`);
      for (const call of message.toolCalls ?? []) lines.push(`ASSISTANT CALLED ${call.name} ${clip(call.arguments, SUMMARY_MESSAGE_CHARS)}`);
    } else lines.push(`RESULT OF ${message.name}${message.isError ? ' (error)' : ''}: ${resultsClipped ? message.content : clipToolResult(message.content)}`);
  }
  return `Summarise this conversation so far:\n\n${lines.join('\n\n')}`;
}

export function compactedConversation(summary: string, kept: readonly Message[]): Message[] {
  return [{ role: 'user', content: `${SUMMARY_PREFIX}\n${summary.trim()}` }, ...kept];
}
