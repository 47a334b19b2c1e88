import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { quarryHome } from '../config/home.js';
import type { Message, ToolCall, Usage } from '../model/types.js';
import { addUsage, emptyUsage, usageJson } from '../model/types.js';
import { nodeCrypto } from '../node-crypto.js';
import type { Profile } from '../profiles/schema.js';
import {
  LOCK_FILE,
  SessionLockedError,
  acquireSessionLock,
  holderAlive,
  isProcessAlive,
  ownProcessStart,
  readLockHolder,
  releaseSessionLock,
  type LockHolder,
} from './session-lock.js';

/**
 * A session on disk (docs/guide/sessions.md): `$QUARRY_HOME/sessions/ID/` with `meta.json`
 * (rewritten atomically), `trace.jsonl` (append-only, one event a line, each written with one
 * append so a crash loses at most the event being written) and, while a process owns it, `lock`
 * (session-lock.ts). The conversation is rebuilt from the trace.
 */

export type SessionStatus = 'running' | 'completed' | 'failed' | 'cancelled' | 'refused' | 'interrupted';

/** The resolved profile a session runs under, without `source` (stored on its own). */
export type StoredProfile = Omit<Profile, 'source'>;

/** How the session's databases were configured, so a resume reads them from the same places (never with passwords). */
export interface StoredDatabases {
  /** `--db` values as given, with sqlite paths made absolute and URL passwords replaced by `***`. */
  db_flags: { flag: string; password_removed?: boolean }[];
  /** `--databases FILE` or QUARRY_DB_CONFIG, absolute. */
  databases_file?: string;
  /** `--config FILE`, absolute (when one was given). */
  config_file?: string;
  /** What each alias pointed at (as `quarry db list` shows it), checked again on resume. */
  targets: { alias: string; target: string; source: string }[];
}

export interface SessionMeta {
  id: string;
  status: SessionStatus;
  /** The profile's name (for display); what it allowed is `profile_content`. */
  profile: string;
  model: string;
  working_dir: string;
  created_at: string;
  updated_at: string;
  /** The process running it while status is "running". */
  pid: number;
  /** That process's start time (Linux), so a reused pid is not taken for it. */
  pid_started?: string;
  runs: number;
  first_prompt: string;
  usage: { input_tokens: number; output_tokens: number; cached_tokens: number };
  error?: string;
  /** For a delegated child: its parent session. */
  parent_id?: string;
  /** How to load the profile again: a built-in name or a file's absolute path. */
  profile_ref?: string;
  /** Where the profile came from: "built-in" or the file path. */
  profile_source?: string;
  /** The profile exactly as the session ran under it. */
  profile_content?: StoredProfile;
  /** --model (or QUARRY_MODEL) and --base-url as given; keys are read from the environment again. */
  model_spec?: { model: string; base_url?: string };
  databases?: StoredDatabases;
  /** --system-prompt (absolute path), --vars-file (absolute) and --var values, for a resume that names none. */
  prompt?: { system_prompt?: string; vars_file?: string; vars: string[] };
}

/** What a new session records about how it was set up (see SessionMeta). */
export type SessionSetupRecord = Pick<SessionMeta, 'profile_ref' | 'profile_source' | 'profile_content' | 'model_spec' | 'databases' | 'prompt'>;

export type TraceEvent =
  | { type: 'run_start'; prompt: string; model: string; profile: string; working_dir: string; profile_source?: string; resumed?: boolean }
  | { type: 'llm_start'; turn: number; messages: number; purpose: 'turn' | 'compaction' }
  | {
      type: 'llm_end';
      turn: number;
      usage: ReturnType<typeof usageJson>;
      duration_ms: number;
      stop_reason: string;
      attempts: number;
      purpose: 'turn' | 'compaction';
    }
  | { type: 'message'; message: Message }
  | { type: 'tool_start'; id: string; name: string; arguments: string }
  | { type: 'tool_end'; id: string; name: string; ok: boolean; duration_ms: number; metadata: Record<string, unknown> }
  | { type: 'tool_blocked'; id: string; name: string; reason: string }
  | { type: 'compact'; summarized_messages: number; kept_messages: number; messages: Message[] }
  | { type: 'clear' }
  | { type: 'error'; message: string }
  | { type: 'trace_repaired'; removed_bytes: number; reason: string }
  | { type: 'run_end'; status: SessionStatus; usage: ReturnType<typeof usageJson>; error?: string };

export type TimedTraceEvent = TraceEvent & { ts: string };

export const LATEST_SESSION = 'latest';
const CANCEL_FILE = 'cancel';
const TRACE_FILE = 'trace.jsonl';

export function sessionsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(quarryHome(env), 'sessions');
}

function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${nodeCrypto().randomBytes(3).toString('hex')}`;
}

const VALID_ID = /^[A-Za-z0-9_.-]+$/;

export function listSessionIds(env: NodeJS.ProcessEnv = process.env): string[] {
  return sessionIdsIn(sessionsDir(env));
}

function sessionIdsIn(dir: string): string[] {
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

/** The trace's events, and the lines that are not valid JSON (a line torn by a crash or a full disk). */
export function readTraceChecked(dir: string): { events: TimedTraceEvent[]; unreadable: { line: number; bytes: number }[] } {
  let text: string;
  try {
    text = readFileSync(join(dir, TRACE_FILE), 'utf8');
  } catch {
    return { events: [], unreadable: [] };
  }
  const events: TimedTraceEvent[] = [];
  const unreadable: { line: number; bytes: number }[] = [];
  text.split('\n').forEach((line, index) => {
    if (!line.trim()) return;
    try {
      events.push(JSON.parse(line) as TimedTraceEvent);
    } catch {
      // Everything around a torn line is intact; the line itself is reported, not guessed at.
      unreadable.push({ line: index + 1, bytes: Buffer.byteLength(line) });
    }
  });
  return { events, unreadable };
}

export function readTrace(dir: string): TimedTraceEvent[] {
  return readTraceChecked(dir).events;
}

/**
 * A trace whose last line has no newline was cut while being written (a crash, a full disk).
 * A cut line that still parses is terminated; one that does not is removed, so the next event
 * starts on a line of its own. Returns the bytes removed (0 when nothing was).
 */
export function repairTraceTail(dir: string): number {
  const path = join(dir, TRACE_FILE);
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch {
    return 0;
  }
  if (data.length === 0 || data[data.length - 1] === 0x0a) return 0;
  const lineStart = data.lastIndexOf(0x0a) + 1;
  const tail = data.subarray(lineStart).toString('utf8');
  try {
    JSON.parse(tail);
    appendFileSync(path, '\n');
    return 0;
  } catch {
    truncateSync(path, lineStart);
    return data.length - lineStart;
  }
}

/** What the trace says about one assistant message's calls: which started, which ended and how. */
interface CallProgress {
  started: Set<string>;
  ended: Map<string, { ok: boolean; metadata: Record<string, unknown> }>;
}

/**
 * The conversation as the model last saw it: messages in order, a compaction replacing
 * everything before it with its compacted form, /clear starting afresh. Tool results are
 * written to the trace as each call finishes (so a crash keeps those that did); calls without
 * one are answered from what the trace says happened to them (see answerDanglingCalls).
 */
export function conversationFromTrace(events: readonly TraceEvent[]): Message[] {
  let messages: Message[] = [];
  const progress = new Map<Message, CallProgress>();
  let open: CallProgress | undefined;
  for (const event of events) {
    if (event.type === 'message') {
      messages.push(event.message);
      if (event.message.role === 'tool') continue;
      open = undefined;
      if (event.message.role === 'assistant' && event.message.toolCalls?.length) {
        open = { started: new Set(), ended: new Map() };
        progress.set(event.message, open);
      }
    } else if (event.type === 'tool_start') open?.started.add(event.id);
    else if (event.type === 'tool_end') open?.ended.set(event.id, { ok: event.ok, metadata: event.metadata });
    else if (event.type === 'compact') {
      messages = [...event.messages];
      open = undefined;
    } else if (event.type === 'clear') {
      messages = [];
      open = undefined;
    } else if (event.type === 'run_start') open = undefined;
  }
  return answerDanglingCalls(messages, progress);
}

function danglingResult(call: ToolCall, progress: CallProgress | undefined): Extract<Message, { role: 'tool' }> {
  const base = { role: 'tool' as const, toolCallId: call.id, name: call.name };
  const ended = progress?.ended.get(call.id);
  if (ended) {
    const details = JSON.stringify(ended.metadata);
    const summary = details && details !== '{}' ? ` (${details.length > 400 ? `${details.slice(0, 400)}...` : details})` : '';
    return {
      ...base,
      content:
        `${ended.ok ? 'finished' : 'failed'}: this call ${ended.ok ? 'completed' : 'ended with an error'} before the session was interrupted, but ` +
        `its output was not saved${summary}`,
      ...(ended.ok ? {} : { isError: true }),
    };
  }
  if (progress?.started.has(call.id)) {
    return {
      ...base,
      content: 'interrupted: the session ended while this call was running; it may or may not have taken effect, so check before repeating it',
      isError: true,
    };
  }
  return { ...base, content: 'not run: the session ended before this call started', isError: true };
}

/**
 * Every tool call needs exactly one result, in call order, before the model is called again.
 * A crash may have left some without one; `progress` (from the trace) tells finished calls
 * from interrupted and never-started ones.
 */
export function answerDanglingCalls(messages: Message[], progress: ReadonlyMap<Message, CallProgress> = new Map()): Message[] {
  const out: Message[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as Message;
    out.push(message);
    if (message.role !== 'assistant' || !message.toolCalls?.length) continue;
    const results = new Map<string, Message>();
    let j = i + 1;
    for (; j < messages.length && (messages[j] as Message).role === 'tool'; j++) {
      const result = messages[j] as Extract<Message, { role: 'tool' }>;
      if (!results.has(result.toolCallId)) results.set(result.toolCallId, result);
    }
    for (const call of message.toolCalls) out.push(results.get(call.id) ?? danglingResult(call, progress.get(message)));
    i = j - 1;
  }
  return out;
}

/**
 * The status to show: a session marked "running" whose process is gone (killed, crashed) was
 * interrupted. The lock file names the owner of a top-level session; a delegated child (and a
 * session written before locks) is checked by the pid in its meta.json.
 */
export function effectiveStatus(meta: SessionMeta, dir: string): SessionStatus {
  if (meta.status !== 'running') return meta.status;
  const holder = readLockHolder(dir);
  const alive = holder ? holderAlive(holder) : isProcessAlive(meta.pid, meta.pid_started);
  return alive ? 'running' : (endedRun(dir)?.status ?? 'interrupted');
}

/**
 * How the trace's last run ended, when its `run_end` is the trace's last word on it (after its
 * `run_start`): a process killed between writing `run_end` and updating meta.json left the run
 * ended but marked running. Null when the last run has no end.
 */
export function endedRun(dir: string): { status: SessionStatus; error?: string } | null {
  let text: string;
  try {
    text = readFileSync(join(dir, TRACE_FILE), 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line.includes('"run_')) continue;
    let event: { type?: string; status?: SessionStatus; error?: string };
    try {
      event = JSON.parse(line) as typeof event;
    } catch {
      continue;
    }
    if (event.type === 'run_start') return null;
    if (event.type === 'run_end' && event.status) return { status: event.status, ...(event.error ? { error: event.error } : {}) };
  }
  return null;
}

export interface NewSessionInfo extends SessionSetupRecord {
  profile: string;
  model: string;
  workingDir: string;
}

export class Session {
  private usageTotal: Usage;
  /** The trace's length after the last complete event this process wrote. */
  private traceBytes: number;

  private constructor(
    readonly id: string,
    readonly dir: string,
    private meta: SessionMeta,
  ) {
    this.usageTotal = { inputTokens: meta.usage.input_tokens, outputTokens: meta.usage.output_tokens, cachedTokens: meta.usage.cached_tokens };
    this.traceBytes = traceSize(dir);
  }

  /** A new top-level session, locked by this process until close() (or its exit). */
  static create(info: NewSessionInfo, env: NodeJS.ProcessEnv = process.env): Session {
    return Session.createIn(sessionsDir(env), info);
  }

  /** A delegated child's session, stored under this one (children/ID) and naming it as parent; the parent's lock covers it. */
  createChild(info: NewSessionInfo): Session {
    return Session.createIn(join(this.dir, 'children'), info, this.id);
  }

  private static createIn(parentDir: string, info: NewSessionInfo, parentId?: string): Session {
    const id = newSessionId();
    const dir = join(parentDir, id);
    mkdirSync(dir, { recursive: true });
    if (!parentId) acquireSessionLock(dir, () => `session ${id} was taken by another process as it was created`);
    const now = new Date().toISOString();
    const { profile, model, workingDir, ...record } = info;
    const started = ownProcessStart();
    const meta: SessionMeta = {
      id,
      status: 'running',
      profile,
      model,
      working_dir: workingDir,
      created_at: now,
      updated_at: now,
      pid: process.pid,
      ...(started ? { pid_started: started } : {}),
      runs: 0,
      first_prompt: '',
      usage: usageJson(emptyUsage()),
      ...(parentId ? { parent_id: parentId } : {}),
      ...record,
    };
    const session = new Session(id, dir, meta);
    session.writeMeta();
    writeFileSync(join(dir, TRACE_FILE), '');
    return session;
  }

  /**
   * An existing session. With `lock` (to continue it), this process takes the session's lock
   * (SessionLockedError, exit 2, when another live process has it), then mends what a crash
   * left: a torn last trace line, a run (and delegated children) still marked running.
   */
  static open(requested: string, env: NodeJS.ProcessEnv = process.env, options: { lock?: boolean } = {}): Session {
    const id = resolveSessionId(requested, env);
    const dir = join(sessionsDir(env), id);
    const before = readMeta(dir);
    if (!before) throw new UsageError(`session ${id} has no readable meta.json`);
    if (!options.lock) return new Session(id, dir, before);
    const acquired = acquireSessionLock(dir, (holder) => lockedMessage(id, dir, holder, readMeta(dir)));
    try {
      const meta = readMeta(dir) ?? before;
      // A session run by an older quarry (no lock file) in a process that is still alive.
      if (meta.status === 'running' && meta.pid !== process.pid && isProcessAlive(meta.pid, meta.pid_started)) {
        throw new SessionLockedError(lockedMessage(id, dir, { pid: meta.pid, host: hostname(), nonce: '', at: '' }, meta), undefined);
      }
      const session = new Session(id, dir, meta);
      session.recoverFromCrash();
      return session;
    } catch (error) {
      if (acquired) releaseSessionLock(dir);
      throw error;
    }
  }

  /** Lets go of the session (its lock); safe to call twice. */
  close(): void {
    releaseSessionLock(this.dir);
  }

  private recoverFromCrash(): void {
    const removed = repairTraceTail(this.dir);
    this.traceBytes = traceSize(this.dir);
    if (removed > 0)
      this.append({
        type: 'trace_repaired',
        removed_bytes: removed,
        reason: 'the last line was cut off while being written (the process stopped or the disk was full)',
      });
    const ended = this.meta.status === 'running' ? endedRun(this.dir) : null;
    if (ended) {
      // The run ended (its run_end is in the trace) and only meta.json missed it: no second run_end.
      this.finishRun(ended.status, ended.error);
    } else if (this.meta.status === 'running') {
      const error = `the run in process ${this.meta.pid} ended without finishing (it was killed or crashed)`;
      this.append({ type: 'run_end', status: 'interrupted', usage: usageJson(emptyUsage()), error });
      this.finishRun('interrupted', error);
    }
    for (const childId of sessionIdsIn(join(this.dir, 'children'))) {
      const childDir = join(this.dir, 'children', childId);
      const child = readMeta(childDir);
      if (child?.status !== 'running' || isProcessAlive(child.pid, child.pid_started)) continue;
      new Session(childId, childDir, child).recoverFromCrash();
    }
  }

  get info(): Readonly<SessionMeta> {
    return this.meta;
  }

  get usage(): Usage {
    return this.usageTotal;
  }

  /**
   * One event, one append. When a write fails part-way (a full disk), the partial line is cut
   * off again so the trace stays valid JSONL, and the error is raised.
   */
  append(event: TraceEvent): void {
    const line = `${JSON.stringify({ ts: new Date().toISOString(), ...event })}\n`;
    const path = join(this.dir, TRACE_FILE);
    try {
      appendFileSync(path, line);
      this.traceBytes += Buffer.byteLength(line);
    } catch (error) {
      try {
        truncateSync(path, this.traceBytes);
      } catch {
        // the next open repairs the tail (repairTraceTail)
      }
      throw new Error(`cannot write the session trace ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }

  events(): TimedTraceEvent[] {
    return readTrace(this.dir);
  }

  conversation(): Message[] {
    return conversationFromTrace(this.events());
  }

  startRun(prompt: string): void {
    this.clearCancelRequest();
    const started = ownProcessStart();
    this.update({
      status: 'running',
      pid: process.pid,
      ...(started ? { pid_started: started } : {}),
      runs: this.meta.runs + 1,
      first_prompt: this.meta.first_prompt || prompt.slice(0, 200),
    });
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

function traceSize(dir: string): number {
  try {
    return statSync(join(dir, TRACE_FILE)).size;
  } catch {
    return 0;
  }
}

function lockedMessage(id: string, dir: string, holder: LockHolder | undefined, meta: SessionMeta | undefined): string {
  if (!holder) return `session ${id} is being opened by another process; try again in a moment`;
  if (holder.host !== hostname())
    return `session ${id} is held by process ${holder.pid} on host ${holder.host}; if that process is gone, remove ${join(dir, LOCK_FILE)}`;
  if (meta?.status === 'running') return `session ${id} is running in process ${holder.pid}; wait for it or stop it with quarry cancel ${id}`;
  return `session ${id} is open in process ${holder.pid} (a REPL, or a run starting up); try again once that quarry has exited`;
}

export function requestCancel(id: string, env: NodeJS.ProcessEnv = process.env): { meta: SessionMeta | undefined; dir: string } {
  const dir = join(sessionsDir(env), id);
  writeFileSync(join(dir, CANCEL_FILE), `${process.pid}\n`);
  return { meta: readMeta(dir), dir };
}

export function readSessionMeta(id: string, env: NodeJS.ProcessEnv = process.env): SessionMeta | undefined {
  return readMeta(join(sessionsDir(env), id));
}

/** A session's delegated children (id, directory, meta), oldest first. */
export function childSessions(dir: string): { id: string; dir: string; meta: SessionMeta }[] {
  const parent = join(dir, 'children');
  return sessionIdsIn(parent).flatMap((id) => {
    const meta = readMeta(join(parent, id));
    return meta ? [{ id, dir: join(parent, id), meta }] : [];
  });
}
