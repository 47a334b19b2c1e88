import type { Backend } from '../backends/types.js';
import type { Profile } from '../profiles/schema.js';
import type { Message, ModelProvider, ModelRequest, Reasoning, ToolCall, ToolSpec, Usage } from '../model/types.js';
import { addUsage, emptyUsage, usageJson } from '../model/types.js';
import { CancelledError, ModelCallFailed, streamWithRetries, type RetryPolicy } from '../model/retry.js';
import { FileReadLedger } from '../tools/core/file-read-ledger.js';
import type { ToolRegistry } from '../tools/core/registry.js';
import { isReadOnlyCall, type Tool, type ToolContext } from '../tools/core/types.js';
import type { Approver } from './approver.js';
import {
  COMPACTION_THRESHOLD,
  KEEP_RECENT_FRACTION,
  MIN_SUMMARISED_FRACTION,
  SUMMARY_SYSTEM_PROMPT,
  clipToolResult,
  compactedConversation,
  compactionSplit,
  estimateTokens,
  manualCompactionSplit,
  renderForSummary,
} from './compaction.js';
import { toolResultMessage, traceSubscriber, type ModelCallPurpose, type RunEvent, type RunEventSubscriber, type ToolEndEvent } from './events.js';
import type { Session, SessionStatus } from './session.js';
import { UntrustedSources } from './untrusted.js';
import { gateCall } from './gate.js';
import { DataMarker } from './marking.js';

/**
 * The agent loop (docs/guide/running.md): model turn, tool calls, trace, until the model answers without
 * calling a tool, the run is cancelled, or a guard stops it.
 */

/** What /compact answers when the conversation is too short to summarise (no model call, no event). */
export const NOTHING_TO_COMPACT = 'nothing to compact yet';

export const DEFAULT_MAX_TURNS = 50;
/** The same call with the same arguments this many times in a row stops the run. */
export const REPEATED_CALL_LIMIT = 3;
/** How often a run checks for `quarry cancel ID` from another terminal. */
const CANCEL_POLL_MS = 200;

export interface RunResult {
  status: Exclude<SessionStatus, 'interrupted'>;
  /** The final answer (the last assistant text). */
  text: string;
  error?: string;
  usage: Usage;
  turns: number;
  toolCalls: number;
}

export interface AgentWorkspace {
  registry: ToolRegistry;
  profile: Profile;
  workingDir: string;
  backend: Backend;
}

export interface AgentOptions {
  provider: ModelProvider;
  system: string;
  workspace: AgentWorkspace;
  session: Session;
  approver: Approver;
  maxTurns: number;
  contextWindow: number;
  retryPolicy: RetryPolicy;
  reasoningEffort?: string;
  /** Subscribes to the run's events (the renderer); the session's trace writer always does (events.ts). */
  onEvent?: RunEventSubscriber;
  /** A resumed conversation. */
  messages?: Message[];
  /**
   * Adds to what each tool call gets (the seam for delegate: the session supplies a function
   * that runs a child agent, so tools/ never imports agent/).
   */
  extendToolContext?: (context: ToolContext, conversation: readonly Message[], untrusted: readonly string[]) => ToolContext;
  /** Where untrusted content came from before this agent started (a delegated child inherits its parent's; src/agent/untrusted.ts). */
  untrustedSources?: readonly string[];
}

interface ModelTurn {
  text: string;
  toolCalls: ToolCall[];
  usage: Usage;
  reasoning?: Reasoning;
  refusal?: string;
}

interface PreparedCall {
  call: ToolCall;
  args: Record<string, unknown> | null;
  argsError: string | null;
  tool: Tool | undefined;
  /** Read-only calls, and tools that declare themselves concurrent (delegate), run together. */
  concurrent: boolean;
}

class RunStopped extends Error {
  override name = 'RunStopped';
}

function parseArguments(text: string): { args: Record<string, unknown> | null; error: string | null } {
  let value: unknown;
  try {
    value = JSON.parse(text.trim() === '' ? '{}' : text);
  } catch (error) {
    return { args: null, error: `the arguments are not valid JSON (${(error as Error).message}); send one JSON object matching the tool's schema` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { args: null, error: "the arguments must be a JSON object matching the tool's schema" };
  return { args: value as Record<string, unknown>, error: null };
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

export class Agent {
  messages: Message[];
  private readonly fileReads = new FileReadLedger();
  private readonly toolSpecs: ToolSpec[];
  private recentCalls: string[] = [];
  /** The provider's own count for the conversation at the last call (input + output). */
  private reportedTokens = 0;
  private readonly subscribers: RunEventSubscriber[];
  /** Where the untrusted content in this conversation came from (the outward-tool rule). */
  private readonly untrusted: UntrustedSources;
  /** This agent's boundary around untrusted data (a nonce of its own). */
  private readonly marker = new DataMarker();

  constructor(private readonly options: AgentOptions) {
    this.messages = options.messages ? [...options.messages] : [];
    this.untrusted = new UntrustedSources(options.untrustedSources);
    this.untrusted.noteConversation(this.messages, (name) => options.workspace.registry.get(name));
    this.subscribers = [traceSubscriber(options.session), ...(options.onEvent ? [options.onEvent] : [])];
    this.toolSpecs = options.workspace.registry
      .list()
      .map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters as unknown as Record<string, unknown> }));
  }

  /** Each event once, to every subscriber in order: the trace first, so what was shown is on disk. */
  private emit(event: RunEvent): void {
    for (const subscriber of this.subscribers) subscriber(event);
  }

  /** /clear: a fresh conversation in the same session. */
  clear(): void {
    this.messages = [];
    this.reportedTokens = 0;
    this.emit({ type: 'clear' });
  }

  async run(prompt: string, externalSignal: AbortSignal): Promise<RunResult> {
    const { session, maxTurns } = this.options;
    const controller = new AbortController();
    const abort = () => controller.abort();
    if (externalSignal.aborted) controller.abort();
    externalSignal.addEventListener('abort', abort, { once: true });
    session.startRun(prompt);
    const poll = setInterval(() => {
      if (session.cancelRequested()) controller.abort();
    }, CANCEL_POLL_MS);
    poll.unref();
    const signal = controller.signal;
    const { profile, workingDir } = this.options.workspace;
    this.emit({
      type: 'run_start',
      prompt,
      model: this.options.provider.label,
      profile: profile.name,
      profile_source: profile.source,
      working_dir: workingDir,
    });
    const question: Message = { role: 'user', content: prompt };
    this.messages.push(question);
    this.emit({ type: 'message', message: question });
    this.recentCalls = [];
    let usage = emptyUsage();
    let turns = 0;
    let toolCalls = 0;
    let text = '';
    let status: RunResult['status'] = 'completed';
    let error: string | undefined;
    try {
      for (;;) {
        if (turns >= maxTurns) throw new RunStopped(`stopped after ${maxTurns} model turns (--max-turns ${maxTurns}) without a final answer`);
        await this.compactIfNeeded(signal);
        turns++;
        const turn = await this.modelTurn(turns, signal);
        usage = addUsage(usage, turn.usage);
        // Reasoning and refusals go into the trace with the message; the provider sends back what it must.
        const answer = {
          role: 'assistant' as const,
          content: turn.text,
          ...(turn.toolCalls.length ? { toolCalls: turn.toolCalls } : {}),
          ...(turn.reasoning ? { reasoning: turn.reasoning } : {}),
          ...(turn.refusal ? { refusal: turn.refusal } : {}),
        };
        this.messages.push(answer);
        this.emit({ type: 'assistant_message', turn: turns, message: answer, usage: usageJson(turn.usage) });
        if (turn.text.trim()) text = turn.text;
        if (turn.refusal !== undefined) {
          status = 'refused';
          error = `the model refused to answer: ${turn.refusal}`;
          this.emit({ type: 'error', message: error });
          break;
        }
        if (turn.toolCalls.length === 0) break;
        toolCalls += turn.toolCalls.length;
        const repeated = await this.runToolCalls(turn.toolCalls, signal);
        if (signal.aborted) throw new CancelledError();
        if (repeated) throw new RunStopped(repeated);
      }
    } catch (caught) {
      if (caught instanceof CancelledError || signal.aborted) {
        status = 'cancelled';
        error = 'cancelled by the user';
      } else {
        status = 'failed';
        error =
          caught instanceof RunStopped || caught instanceof ModelCallFailed
            ? caught.message
            : `internal error: ${(caught as Error)?.message ?? String(caught)}`;
        this.emit({ type: 'error', message: error });
      }
    } finally {
      clearInterval(poll);
      externalSignal.removeEventListener('abort', abort);
    }
    this.emit({ type: 'run_end', status, usage: usageJson(usage), ...(error ? { error } : {}) });
    session.finishRun(status, error);
    return { status, text, ...(error ? { error } : {}), usage, turns, toolCalls };
  }

  private async modelTurn(turn: number, signal: AbortSignal, purpose: ModelCallPurpose = 'turn', request?: Partial<ModelRequest>): Promise<ModelTurn> {
    const { provider, session, retryPolicy } = this.options;
    const messages = request?.messages ?? this.messages;
    this.emit({ type: 'llm_start', turn, messages: messages.length, purpose });
    const started = performance.now();
    let text = '';
    let toolCalls: ToolCall[] = [];
    let usage = emptyUsage();
    let stopReason = '';
    let reasoning: Reasoning | undefined;
    let refusal: string | undefined;
    let attempts = 1;
    // Marked on a copy (src/agent/marking.ts): the conversation and the trace keep the raw results.
    const lookup = (name: string) => this.options.workspace.registry.get(name);
    const events = streamWithRetries(
      provider,
      {
        system: (request?.system ?? this.options.system) + this.marker.systemNote(),
        messages: request?.messages ?? this.marker.messages(messages, lookup),
        tools: this.marker.tools(request?.tools ?? this.toolSpecs, lookup),
        signal,
        purpose,
        ...(this.options.reasoningEffort ? { reasoningEffort: this.options.reasoningEffort } : {}),
      },
      retryPolicy,
    );
    for await (const event of events) {
      if (event.type === 'text') {
        text += event.text;
        if (purpose === 'turn') this.emit({ type: 'text', text: event.text });
      } else if (event.type === 'tool_call') toolCalls.push(event.call);
      else if (event.type === 'end') {
        usage = event.usage;
        stopReason = event.stopReason;
        reasoning = event.reasoning;
        refusal = event.refusal;
      } else {
        // A failed attempt: what it streamed is void; the next attempt starts over.
        text = '';
        toolCalls = [];
        attempts = event.attempt;
        this.emit({ type: 'retry', attempt: event.attempt, delay_ms: event.delayMs, reason: event.reason });
      }
    }
    this.emit({
      type: 'llm_end',
      turn,
      usage: usageJson(usage),
      duration_ms: Math.round(performance.now() - started),
      stop_reason: stopReason,
      attempts,
      purpose,
    });
    session.addUsage(usage);
    this.reportedTokens = usage.inputTokens + usage.outputTokens;
    return { text, toolCalls, usage, ...(reasoning ? { reasoning } : {}), ...(refusal !== undefined ? { refusal } : {}) };
  }

  private conversationTokens(): number {
    const estimate = estimateTokens(this.messages, this.options.system.length + JSON.stringify(this.toolSpecs).length);
    return Math.max(estimate, this.reportedTokens);
  }

  private async compactIfNeeded(signal: AbortSignal): Promise<void> {
    if (this.conversationTokens() <= COMPACTION_THRESHOLD * this.options.contextWindow) return;
    const split = compactionSplit(this.messages, Math.floor(KEEP_RECENT_FRACTION * this.options.contextWindow));
    if (split === null || estimateTokens(this.messages.slice(0, split)) < MIN_SUMMARISED_FRACTION * estimateTokens(this.messages)) return;
    await this.compactAt(split, signal);
  }

  /** /compact. A failure keeps the history as it was; every outcome but NOTHING_TO_COMPACT is also a `compact` event. */
  async compact(signal: AbortSignal): Promise<{ ok: boolean; message: string }> {
    const split = manualCompactionSplit(this.messages);
    if (split === null) return { ok: false, message: NOTHING_TO_COMPACT };
    return this.compactAt(split, signal);
  }

  private async compactAt(split: number, signal: AbortSignal): Promise<{ ok: boolean; message: string }> {
    const older = this.messages.slice(0, split);
    const kept = this.messages.slice(split);
    let summary: string;
    try {
      const turn = await this.modelTurn(0, signal, 'compaction', {
        system: SUMMARY_SYSTEM_PROMPT,
        messages: [
          {
            role: 'user',
            content: renderForSummary(
              this.marker.messages(older, (name) => this.options.workspace.registry.get(name), clipToolResult),
              true,
            ),
          },
        ],
        tools: [],
      });
      summary = turn.text.trim();
      if (!summary) throw new Error('the model returned an empty summary');
    } catch (error) {
      if (error instanceof CancelledError || signal.aborted) throw new CancelledError();
      const message = `compaction failed, keeping the full history: ${(error as Error).message}`;
      this.emit({ type: 'compact', ok: false, message });
      return { ok: false, message };
    }
    this.messages = compactedConversation(summary, kept);
    this.reportedTokens = 0;
    const message = `compacted ${older.length} earlier messages into a summary; kept the last ${kept.length}`;
    this.emit({ type: 'compact', ok: true, message, summarized_messages: older.length, kept_messages: kept.length, messages: this.messages });
    return { ok: true, message };
  }

  /**
   * Runs one message's calls: consecutive read-only calls together, the others one at a time;
   * results are added in call order, exactly one per call. Returns the explanation when the
   * repeated-call guard stopped the run.
   */
  private async runToolCalls(calls: ToolCall[], signal: AbortSignal): Promise<string | null> {
    const prepared = calls.map((call) => this.prepare(call));
    let stopAt = prepared.length;
    let stopReason: string | null = null;
    for (const [index, item] of prepared.entries()) {
      this.recentCalls.push(`${item.call.name}\u0000${item.args ? canonicalJson(item.args) : item.call.arguments}`);
      const lastCalls = this.recentCalls.slice(-REPEATED_CALL_LIMIT);
      if (lastCalls.length === REPEATED_CALL_LIMIT && lastCalls.every((key) => key === lastCalls[0])) {
        stopAt = index;
        stopReason =
          `stopped: the model called ${item.call.name} with the same arguments ${REPEATED_CALL_LIMIT} times in a row ` +
          `(${item.call.arguments.slice(0, 200)}), which usually means it is stuck; rephrase the question or give it more to go on`;
        break;
      }
    }
    const results: Message[] = new Array(prepared.length);
    let index = 0;
    while (index < stopAt) {
      const first = prepared[index] as PreparedCall;
      if (!first.concurrent) {
        results[index] = await this.runOne(first, signal);
        index++;
        continue;
      }
      let end = index;
      while (end < stopAt && (prepared[end] as PreparedCall).concurrent) end++;
      const group = prepared.slice(index, end);
      const groupResults = await Promise.all(group.map((item) => this.runOne(item, signal)));
      groupResults.forEach((result, offset) => {
        results[index + offset] = result;
      });
      index = end;
    }
    for (let i = stopAt; i < prepared.length; i++) {
      const { call } = prepared[i] as PreparedCall;
      const content =
        i === stopAt
          ? `not run: the same ${call.name} call ${REPEATED_CALL_LIMIT} times in a row; the run stops here`
          : 'not run: the run stopped before this call';
      this.emit({ type: 'tool_blocked', id: call.id, name: call.name, reason: content });
      const end: ToolEndEvent = {
        type: 'tool_end',
        id: call.id,
        name: call.name,
        arguments: prepared[i]?.args ?? null,
        ok: false,
        duration_ms: 0,
        output: content,
        metadata: { error: 'repeated_call' },
      };
      this.emit(end);
      results[i] = toolResultMessage(end);
    }
    // Each result went to the trace as its call finished (runOne); the conversation gets them in call order.
    this.messages.push(...results);
    return stopReason;
  }

  private prepare(call: ToolCall): PreparedCall {
    const { args, error } = parseArguments(call.arguments);
    const tool = this.options.workspace.registry.get(call.name);
    // Calls that will not run (unknown tool, bad JSON) cost nothing and may go with the readers.
    const concurrent = !tool || !args ? true : isReadOnlyCall(tool, args) || tool.concurrent === true;
    return { call, args, argsError: error, tool, concurrent };
  }

  private async runOne(item: PreparedCall, signal: AbortSignal): Promise<Message> {
    const { call } = item;
    const { workspace, approver } = this.options;
    // Reset once approval is given: the time spent waiting for the user is not the tool's.
    let started = performance.now();
    this.emit({ type: 'tool_start', id: call.id, name: call.name, arguments: call.arguments });
    // The trace writer puts the result in the trace the moment the call finishes, before its tool_end,
    // so a crash while other calls of the message still run cannot lose it (conversationFromTrace).
    const finish = (ok: boolean, output: string, metadata: Record<string, unknown>): Message => {
      const end: ToolEndEvent = {
        type: 'tool_end',
        id: call.id,
        name: call.name,
        arguments: item.args,
        ok,
        duration_ms: Math.round(performance.now() - started),
        output,
        metadata,
      };
      this.emit(end);
      return toolResultMessage(end);
    };
    if (item.argsError || !item.args) return finish(false, `${call.name}: ${item.argsError}`, { error: 'invalid_json' });
    if (signal.aborted) return finish(false, `${call.name}: cancelled by the user before it started`, { error: 'cancelled' });
    if (item.tool) {
      const gate = await gateCall(workspace.profile, approver, item.tool, item.args, this.untrusted.list(), signal);
      if (gate.blocked) {
        this.emit({ type: 'tool_blocked', id: call.id, name: call.name, reason: gate.message });
        return finish(false, gate.message, { error: gate.error });
      }
      if (gate.asked) started = performance.now();
    }
    const base: ToolContext = { workingDir: workspace.workingDir, backend: workspace.backend, signal, fileReads: this.fileReads };
    const tool = item.tool;
    if (tool) base.approve = (reason) => approver.decide(tool, item.args!, reason, signal);
    const context = this.options.extendToolContext ? this.options.extendToolContext(base, this.messages, this.untrusted.list()) : base;
    const result = await workspace.registry.run(call.name, item.args, context);
    this.untrusted.noteResult(item.tool, call.name, item.args);
    return finish(result.ok, result.output, result.metadata);
  }
}
