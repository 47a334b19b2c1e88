import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Message, ModelEvent, ModelProvider, ModelRequest } from './types.js';
import { ModelError, emptyUsage } from './types.js';

/**
 * `--model script:FILE`: replays assistant turns from a JSON file while the tools run for real.
 * For demos, tests and benchmarks; no LLM is called and every output says so.
 *
 * File format: {"description"?: string, "turns": [{"text"?: string, "tool_calls"?: [{"name": string,
 * "arguments": object | string}]}]} (or just the array of turns). A string `arguments` is sent
 * as written, so a script can exercise invalid JSON.
 *
 * A script may also pick its turns by the question (for `quarry eval`, where each question is a
 * fresh run): {"by_prompt": [{"match": "text in the first user message", "turns": [...]}],
 * "turns": [...]} replays the first entry whose `match` occurs in the run's first prompt
 * (case-insensitive), and `turns` when none does.
 */
export interface ScriptTurn {
  text: string;
  toolCalls: { name: string; arguments: string }[];
}

export interface PromptScript {
  match: string;
  turns: ScriptTurn[];
}

export function parseScript(text: string, where: string): ScriptTurn[] {
  return parseScriptFile(text, where).turns;
}

export function parseScriptFile(text: string, where: string): { turns: ScriptTurn[]; byPrompt: PromptScript[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ModelError(`${where} is not valid JSON: ${(error as Error).message}`);
  }
  const byPromptRaw = Array.isArray(raw) ? undefined : (raw as { by_prompt?: unknown } | null)?.by_prompt;
  if (byPromptRaw !== undefined && !Array.isArray(byPromptRaw)) throw new ModelError(`${where}: by_prompt must be a list of {"match", "turns"}`);
  const byPrompt = ((byPromptRaw ?? []) as unknown[]).map((entry, index) => {
    const e = (entry ?? {}) as { match?: unknown; turns?: unknown };
    if (typeof e.match !== 'string' || e.match === '') throw new ModelError(`${where}: by_prompt[${index}].match must be a non-empty string`);
    return { match: e.match, turns: parseTurns(e.turns, `${where}: by_prompt[${index}]`) };
  });
  const turns = Array.isArray(raw) ? raw : (raw as { turns?: unknown } | null)?.turns;
  if (turns === undefined && byPrompt.length > 0) return { turns: [], byPrompt };
  return { turns: parseTurns(turns, where), byPrompt };
}

function parseTurns(turns: unknown, where: string): ScriptTurn[] {
  if (!Array.isArray(turns)) throw new ModelError(`${where}: expected {"turns": [...]} (a list of assistant turns)`);
  return turns.map((turn: unknown, index) => {
    const entry = (turn ?? {}) as { text?: unknown; tool_calls?: unknown };
    if (entry.text !== undefined && typeof entry.text !== 'string') throw new ModelError(`${where}: turns[${index}].text must be a string`);
    if (entry.tool_calls !== undefined && !Array.isArray(entry.tool_calls)) throw new ModelError(`${where}: turns[${index}].tool_calls must be a list`);
    const toolCalls = ((entry.tool_calls ?? []) as unknown[]).map((call, callIndex) => {
      const c = (call ?? {}) as { name?: unknown; arguments?: unknown };
      if (typeof c.name !== 'string') throw new ModelError(`${where}: turns[${index}].tool_calls[${callIndex}].name must be a string`);
      const args = typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {});
      return { name: c.name, arguments: args };
    });
    return { text: (entry.text as string | undefined) ?? '', toolCalls };
  });
}

/** Text is streamed in pieces of this many characters, like a real model would. */
const SCRIPT_CHUNK_CHARS = 24;

export class ScriptedProvider implements ModelProvider {
  readonly scripted = true;
  readonly label: string;
  private next = 0;

  private chosen = false;

  constructor(
    private turns: ScriptTurn[],
    private readonly file: string,
    private readonly byPrompt: PromptScript[] = [],
  ) {
    this.label = `script:${file}`;
  }

  /** With by_prompt entries: the turns for this run's first prompt, chosen once. */
  private choose(messages: readonly Message[]): void {
    if (this.chosen) return;
    this.chosen = true;
    const first = messages.find((message) => message.role === 'user')?.content.toLowerCase() ?? '';
    const entry = this.byPrompt.find((candidate) => first.includes(candidate.match.toLowerCase()));
    if (entry) this.turns = entry.turns;
  }

  static fromFile(file: string, cwd: string): ScriptedProvider {
    const path = resolve(cwd, file);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new ModelError(
        `cannot read the model script ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      );
    }
    const script = parseScriptFile(text, path);
    return new ScriptedProvider(script.turns, file, script.byPrompt);
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    if (request.purpose === 'compaction') {
      yield { type: 'text', text: `(scripted summary of ${request.messages.length} earlier messages)` };
      yield { type: 'end', usage: emptyUsage(), stopReason: 'stop' };
      return;
    }
    this.choose(request.messages);
    const turn = this.turns[this.next];
    if (!turn) throw new ModelError(`the model script ${this.file} has no more assistant turns (it has ${this.turns.length})`);
    const index = this.next++;
    for (let at = 0; at < turn.text.length; at += SCRIPT_CHUNK_CHARS) {
      yield { type: 'text', text: turn.text.slice(at, at + SCRIPT_CHUNK_CHARS) };
    }
    for (const [callIndex, call] of turn.toolCalls.entries()) {
      yield { type: 'tool_call', call: { id: `script_${index + 1}_${callIndex + 1}`, name: call.name, arguments: call.arguments } };
    }
    yield { type: 'end', usage: emptyUsage(), stopReason: turn.toolCalls.length ? 'tool_calls' : 'stop' };
  }
}
