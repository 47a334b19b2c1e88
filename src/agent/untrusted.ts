import type { Message } from '../model/types.js';
import type { UntrustedDataMode } from '../profiles/schema.js';
import { effectsOf } from '../tools/core/effects.js';
import type { Tool } from '../tools/core/types.js';
import { SUMMARY_PREFIX } from './compaction.js';

/**
 * The outward-tool rule (docs/security.md). Content the user did not write (database rows,
 * files, command output, an MCP server's answer, a child agent's answer: the result of any tool whose
 * declared effects include `reads`) may carry instructions. Once such content is in the conversation,
 * a call of a tool that can send data out of the machine (declared `sendsOut`) needs a person's
 * consent, whatever --yes says: the profile's `untrusted_data` decides whether it is asked (ask, the
 * default), refused (refuse) or let through (allow). The user's prompt, the system prompt and the
 * knowledge folder are the user's own and do not count.
 */

const SOURCE_DETAIL_CHARS = 60;
/** At most this many sources are named in a question (the rest are counted). */
const SOURCES_SHOWN = 4;

/** "sqlite (database shop)", "read (data/notes.txt)", "bash (git log -5)". */
export function describeSource(toolName: string, args: Record<string, unknown> | null): string {
  const detail = args ? [args.database, args.path, args.command, args.pattern, args.sql].find((value) => typeof value === 'string') : undefined;
  if (typeof detail !== 'string' || detail.trim() === '') return toolName;
  const oneLine = detail.replace(/\s+/g, ' ').trim();
  return `${toolName} (${oneLine.length > SOURCE_DETAIL_CHARS ? `${oneLine.slice(0, SOURCE_DETAIL_CHARS)}…` : oneLine})`;
}

/** Where the untrusted content of one conversation came from, in the order it arrived. */
export class UntrustedSources {
  private readonly sources: string[] = [];

  constructor(inherited: readonly string[] = []) {
    for (const source of inherited) this.add(source);
  }

  add(source: string): void {
    if (!this.sources.includes(source)) this.sources.push(source);
  }

  /** After a call ran: its result is untrusted when the tool reads (or is unknown, failing closed). */
  noteResult(tool: Tool | undefined, name: string, args: Record<string, unknown> | null): void {
    if (!tool || effectsOf(tool).reads) this.add(describeSource(name, args));
  }

  /** A resumed or inherited conversation: its tool results and compaction summaries are untrusted. */
  noteConversation(messages: readonly Message[], lookup: (name: string) => Tool | undefined): void {
    for (const message of messages) {
      if (message.role === 'tool') this.noteResult(lookup(message.name), message.name, null);
      else if (message.role === 'user' && message.content.startsWith(SUMMARY_PREFIX)) this.add('a summary of earlier tool results');
    }
  }

  list(): readonly string[] {
    return this.sources;
  }
}

export type OutwardCheck = { kind: 'none' } | { kind: 'ask'; reason: string } | { kind: 'refuse'; message: string };

/** What the rule says about one call, given the sources so far. */
export function outwardCheck(mode: UntrustedDataMode, profileName: string, tool: Tool, sources: readonly string[]): OutwardCheck {
  if (mode === 'allow' || sources.length === 0 || !effectsOf(tool).sendsOut) return { kind: 'none' };
  const shown = sources.slice(0, SOURCES_SHOWN).join(', ');
  const more = sources.length > SOURCES_SHOWN ? ` and ${sources.length - SOURCES_SHOWN} more` : '';
  const reason = `${tool.name} can send data out of this machine, and the conversation holds content the user did not write (from ${shown}${more})`;
  if (mode === 'refuse') {
    return {
      kind: 'refuse',
      message: `refused: ${reason}; profile "${profileName}" has untrusted_data: refuse, so nothing was run. Do not retry; answer from what you have.`,
    };
  }
  return { kind: 'ask', reason };
}
