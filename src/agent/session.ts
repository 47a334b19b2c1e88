import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { UsageError } from '../cli/errors.js';
import { quarryHome } from '../config.js';
import type { Message, Usage } from '../model/types.js';
import { addUsage, emptyUsage, usageJson } from '../model/types.js';

/**
 * A session on disk (SPEC §8): `$QUARRY_HOME/sessions/ID/` with `meta.json` (rewritten
 * atomically) and `trace.jsonl` (append-only, one event a line, each written with one append so
 * a crash loses at most the event being written). The conversation is rebuilt from the trace.
 */

export type SessionStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'refused';

export interface SessionMeta {
  id: string;
  status: SessionStatus;
  profile: string;
  model: string;
  working_dir: string;
  created_at: string;
  updated_at: string;
  /** The process running it while status is "running". */
  pid: number;
  runs: number;
  first_prompt: string;
  usage: { input_tokens: number; output_tokens: number; cached_tokens: number };
  error?: string;
  /** For a delegated child: its parent session. */
  parent_id?: string;
}

export type TraceEvent =
  | { type: 'run_start'; prompt: string; model: string; profile: string; working_dir: string; resumed?: boolean }
  | { type: 'llm_start'; turn: number; messages: number; purpose: 'turn' | 'compaction' }
  | { type: 'llm_end'; turn: number; usage: ReturnType<typeof usageJson>; duration_ms: number; stop_reason: string; attempts: number; purpose: 'turn' | 'compaction' }
  | { type: 'message'; message: Message }
  | { type: 'tool_start'; id: string; name: string; arguments: string }
  | { type: 'tool_end'; id: string; name: string; ok: boolean; duration_ms: number; metadata: Record<string, unknown> }
  | { type: 'tool_blocked'; id: string; name: string; reason: string }
  | { type: 'compact'; summarized_messages: number; kept_messages: number; messages: Message[] }
  | { type: 'clear' }
  | { type: 'error'; message: string }
  | { type: 'run_end'; status: SessionStatus; usage: ReturnType<typeof usageJson>; error?: string };

export type TimedTraceEvent = TraceEvent & { ts: string };

export const LATEST_SESSION = 'latest';
const CANCEL_FILE = 'cancel';

export function sessionsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(quarryHome(env), 'sessions');
}

function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

const VALID_ID = /^[A-Za-z0-9_.-]+$/;

export function listSessionIds(env: NodeJS.ProcessEnv = process.env): string[] {
  const dir = sessionsDir(env);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(dir, entry.name, 'meta.json')))
    .map((entry) => entry.name)
    .sort();
}

/** `latest` or an ID (a unique prefix is enough). */
export function resolveSessionId(requested: string, env: NodeJS.ProcessEnv = process.env): string {
  const ids = listSessionIds(env);
  if (requested === LATEST_SESSION) {
    const newest = ids
      .map((id) => ({ id, updated: readMeta(join(sessionsDir(env), id))?.updated_at ?? '' }))
      .sort((a, b) => (a.updated === b.updated ? a.id.localeCompare(b.id) : a.updated.localeCompare(b.updated)))
      .pop();
    if (!newest) throw new UsageError(`no sessions yet in ${sessionsDir(env)}`);
    return newest.id;
  }
  if (!VALID_ID.test(requested)) throw new UsageError(`not a session id: "${requested}"`);
  if (ids.includes(requested)) return requested;
  const matches = ids.filter((id) => id.startsWith(requested));
  if (matches.length === 1) return matches[0] as string;
  if (matches.length > 1) throw new UsageError(`session id "${requested}" is ambiguous: ${matches.slice(0, 5).join(', ')}`);
  throw new UsageError(`no session "${requested}" in ${sessionsDir(env)} (see quarry sessions)`);
}

function readMeta(dir: string): SessionMeta | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as SessionMeta;
  } catch {
    return undefined;
  }
}

export function readTrace(dir: string): TimedTraceEvent[] {
  let text: string;
  try {
    text = readFileSync(join(dir, 'trace.jsonl'), 'utf8');
  } catch {
    return [];
  }
  const events: TimedTraceEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as TimedTraceEvent);
    } catch {
      // A line cut short by a crash: everything before it is intact.
    }
  }
  return events;
}

/**
 * The conversation as the model last saw it: messages in order, a compaction replacing
 * everything before it with its compacted form, /clear starting afresh.
 */
export function conversationFromTrace(events: readonly TraceEvent[]): Message[] {
  let messages: Message[] = [];
  for (const event of events) {
    if (event.type === 'message') messages.push(event.message);
    else if (event.type === 'compact') messages = [...event.messages];
    else if (event.type === 'clear') messages = [];
  }
  return answerDanglingCalls(messages);
}

/** Every tool call needs a result before the model is called again; a crash may have left some without. */
export function answerDanglingCalls(messages: Message[]): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as Message;
    out.push(message);
    if (message.role !== 'assistant' || !message.toolCalls?.length) continue;
    const answered = new Set<string>();
    let j = i + 1;
    for (; j < messages.length && (messages[j] as Message).role === 'tool'; j++) {
      const result = messages[j] as Extract<Message, { role: 'tool' }>;
      answered.add(result.toolCallId);
      out.push(result);
    }
    for (const call of message.toolCalls) {
      if (!answered.has(call.id)) out.push({ role: 'tool', toolCallId: call.id, name: call.name, content: 'not run: the session ended before this call finished', isError: true });
    }
    i = j - 1;
  }
  return out;
}

export class Session {
  private usageTotal: Usage;

  private constructor(readonly id: string, readonly dir: string, private meta: SessionMeta) {
    this.usageTotal = { inputTokens: meta.usage.input_tokens, outputTokens: meta.usage.output_tokens, cachedTokens: meta.usage.cached_tokens };
  }

  static create(info: { profile: string; model: string; workingDir: string }, env: NodeJS.ProcessEnv = process.env): Session {
    return Session.createIn(sessionsDir(env), info);
  }

  /** A delegated child's session, stored under this one (children/ID) and naming it as parent. */
  createChild(info: { profile: string; model: string; workingDir: string }): Session {
    return Session.createIn(join(this.dir, 'children'), info, this.id);
  }

  private static createIn(parentDir: string, info: { profile: string; model: string; workingDir: string }, parentId?: string): Session {
    const id = newSessionId();
    const dir = join(parentDir, id);
    mkdirSync(dir, { recursive: true });
    const now = new Date().toISOString();
    const meta: SessionMeta = {
      id, status: 'running', profile: info.profile, model: info.model, working_dir: info.workingDir,
      created_at: now, updated_at: now, pid: process.pid, runs: 0, first_prompt: '', usage: usageJson(emptyUsage()),
      ...(parentId ? { parent_id: parentId } : {}),
    };
    const session = new Session(id, dir, meta);
    session.writeMeta();
    writeFileSync(join(dir, 'trace.jsonl'), '');
    return session;
  }

  static open(requested: string, env: NodeJS.ProcessEnv = process.env): Session {
    const id = resolveSessionId(requested, env);
    const dir = join(sessionsDir(env), id);
    const meta = readMeta(dir);
    if (!meta) throw new UsageError(`session ${id} has no readable meta.json`);
    return new Session(id, dir, meta);
  }

  get info(): Readonly<SessionMeta> {
    return this.meta;
  }

  get usage(): Usage {
    return this.usageTotal;
  }

  append(event: TraceEvent): void {
    appendFileSync(join(this.dir, 'trace.jsonl'), `${JSON.stringify({ ts: new Date().toISOString(), ...event })}\n`);
  }

  events(): TimedTraceEvent[] {
    return readTrace(this.dir);
  }

  conversation(): Message[] {
    return conversationFromTrace(this.events());
  }

  startRun(prompt: string): void {
    this.clearCancelRequest();
    this.update({ status: 'running', pid: process.pid, runs: this.meta.runs + 1, first_prompt: this.meta.first_prompt || prompt.slice(0, 200) });
  }

  addUsage(usage: Usage): void {
    this.usageTotal = addUsage(this.usageTotal, usage);
    this.update({ usage: usageJson(this.usageTotal) });
  }

  finishRun(status: SessionStatus, error?: string): void {
    const { error: _previous, ...rest } = this.meta;
    this.meta = { ...rest, ...(error ? { error } : {}) };
    this.update({ status });
    this.clearCancelRequest();
  }

  update(patch: Partial<SessionMeta>): void {
    this.meta = { ...this.meta, ...patch, updated_at: new Date().toISOString() };
    this.writeMeta();
  }

  /** `quarry cancel ID` from another terminal leaves this file; the running loop polls for it. */
  cancelRequested(): boolean {
    return existsSync(join(this.dir, CANCEL_FILE));
  }

  clearCancelRequest(): void {
    rmSync(join(this.dir, CANCEL_FILE), { force: true });
  }

  private writeMeta(): void {
    const path = join(this.dir, 'meta.json');
    const temp = `${path}.${process.pid}.tmp`;
    writeFileSync(temp, `${JSON.stringify(this.meta, null, 2)}\n`);
    renameSync(temp, path);
  }
}

export function requestCancel(id: string, env: NodeJS.ProcessEnv = process.env): { meta: SessionMeta | undefined; dir: string } {
  const dir = join(sessionsDir(env), id);
  writeFileSync(join(dir, CANCEL_FILE), `${process.pid}\n`);
  return { meta: readMeta(dir), dir };
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Two processes appending to one trace would interleave two conversations. */
export function assertNotRunningElsewhere(meta: SessionMeta): void {
  if (meta.status === 'running' && meta.pid !== process.pid && isProcessAlive(meta.pid)) {
    throw new UsageError(`session ${meta.id} is running in process ${meta.pid}; wait for it or stop it with quarry cancel ${meta.id}`);
  }
}

export function readSessionMeta(id: string, env: NodeJS.ProcessEnv = process.env): SessionMeta | undefined {
  return readMeta(join(sessionsDir(env), id));
}
