import type { RunEvent, ToolEndEvent } from '../agent/events.js';
import type { RunResult } from '../agent/loop.js';
import { usageJson } from '../model/types.js';
import { formatBytes } from '../tools/core/paths.js';
import type { ResultObject, StreamJsonLine } from './stream-json-lines.js';
import { MarkdownStream } from './terminal-markdown.js';

/**
 * How a run shows itself (docs/guide/running.md): `text` streams the answer to stdout and one compact row per
 * tool call to stderr; `json` prints one result object at the end; `stream-json` prints every
 * event as a JSON line, then the result.
 */
export type OutputFormat = 'text' | 'json' | 'stream-json';

export interface RunInfo {
  sessionId: string;
  model: string;
  scripted: boolean;
  profile: string;
}

export interface Renderer {
  start(info: RunInfo): void;
  /** The renderer is a subscriber of the run's events (agent/events.ts). */
  event(event: RunEvent): void;
  /** A note for the user (REPL commands, cancellation); stderr in every format. */
  note(text: string): void;
  finish(result: RunResult, info: RunInfo): void;
  /** Stops a live line from drawing over a question to the user (text renderer on a terminal). */
  pauseLive?(paused: boolean): void;
}

export function resultObject(result: RunResult, info: RunInfo): ResultObject {
  return {
    status: result.status,
    text: result.text,
    ...(result.error ? { error: result.error } : {}),
    usage: usageJson(result.usage),
    session_id: info.sessionId,
    model: info.model,
    scripted: info.scripted,
    profile: info.profile,
    turns: result.turns,
    tool_calls: result.toolCalls,
  };
}

const TARGET_KEYS = ['path', 'operation', 'pattern', 'command', 'action', 'instruction'];
const TARGET_CHARS = 60;

function oneLine(text: string, limit: number): string {
  const flat = text.replace(/\s*\n\s*/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit - 3)}...` : flat;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** `ok read README.md (42 lines, 3.1 KB)`, `err sqlite query (0.2 s): no such table: x`. */
export function toolRow(event: ToolEndEvent): string {
  const args = event.arguments ?? {};
  const key = TARGET_KEYS.find((name) => typeof args[name] === 'string' && args[name] !== '');
  // A database call names its table too: `sqlite describe orders`.
  const detail = key === 'operation' && typeof args.table_name === 'string' ? ` ${args.table_name}` : '';
  const target = key ? ` ${oneLine(`${String(args[key])}${detail}`, TARGET_CHARS)}` : '';
  if (event.ok && event.name === 'chart' && Array.isArray(event.metadata.files)) {
    // `ok chart bar: sales.svg, sales.png, sales.vl.json (1.2 s)`
    const files = (event.metadata.files as string[]).map((file) => file.split('/').pop()).join(', ');
    return `ok chart ${String(event.metadata.type ?? '')}: ${files} (${seconds(event.duration_ms)})`;
  }
  if (event.ok) {
    const lines = event.output === '' ? 0 : event.output.split('\n').length - (event.output.endsWith('\n') ? 1 : 0);
    const details = [`${lines} line${lines === 1 ? '' : 's'}`, formatBytes(Buffer.byteLength(event.output))];
    if (event.duration_ms >= 100) details.push(seconds(event.duration_ms));
    return `ok ${event.name}${target} (${details.join(', ')})`;
  }
  const label = event.metadata.error === 'approval_refused' ? 'refused' : 'err';
  return `${label} ${event.name}${target} (${seconds(event.duration_ms)}): ${oneLine(event.output, 200)}`;
}

const ANSI = { green: '\u001b[32m', red: '\u001b[31m', yellow: '\u001b[33m', dim: '\u001b[2m', reset: '\u001b[0m' };

/** What the REPL adds on a terminal: the answer's Markdown rendered, and a live line while tools run. */
export interface TerminalOptions {
  markdown?: boolean;
  liveToolLine?: boolean;
}

/** How often the live line's seconds are redrawn. */
const LIVE_LINE_INTERVAL_MS = 250;

class TextRenderer implements Renderer {
  private atLineStart = true;
  private readonly markdown: MarkdownStream | null;
  /** Tools running now (id → label and start), shown on one live line on stderr. */
  private readonly running = new Map<string, { label: string; started: number }>();
  private liveTimer: NodeJS.Timeout | null = null;
  private liveShown = false;
  private livePaused = false;

  constructor(
    private readonly color: boolean,
    private readonly terminal: TerminalOptions = {},
  ) {
    this.markdown = terminal.markdown ? new MarkdownStream(color) : null;
  }

  /** Stops redrawing the live line (while the user is asked a question), or starts again. */
  pauseLive(paused: boolean): void {
    this.livePaused = paused;
    if (paused) this.clearLive();
    else this.drawLive();
  }

  private clearLive(): void {
    if (!this.liveShown) return;
    process.stderr.write('\r\u001b[K');
    this.liveShown = false;
  }

  private drawLive(): void {
    if (this.livePaused || this.running.size === 0 || !this.atLineStart) return;
    const now = Date.now();
    const parts = [...this.running.values()].map((tool) => `${tool.label} ${((now - tool.started) / 1000).toFixed(1)} s`);
    process.stderr.write(`\r\u001b[K${this.paint('dim', `… ${parts.join(' · ')}`)}`);
    this.liveShown = true;
  }

  private toolStarted(id: string, name: string, argumentsText: string): void {
    if (!this.terminal.liveToolLine) return;
    let operation = '';
    try {
      const args = JSON.parse(argumentsText) as { operation?: unknown };
      if (typeof args.operation === 'string') operation = ` ${args.operation}`;
    } catch {
      // The row at the end says what was wrong with the arguments.
    }
    this.running.set(id, { label: `${name}${operation}`, started: Date.now() });
    if (!this.liveTimer) {
      this.liveTimer = setInterval(() => this.drawLive(), LIVE_LINE_INTERVAL_MS);
      this.liveTimer.unref();
    }
  }

  private toolEnded(id: string): void {
    this.running.delete(id);
    if (this.running.size === 0 && this.liveTimer) {
      clearInterval(this.liveTimer);
      this.liveTimer = null;
    }
  }

  private paint(code: keyof typeof ANSI, text: string): string {
    return this.color ? `${ANSI[code]}${text}${ANSI.reset}` : text;
  }

  private out(text: string): void {
    if (!text) return;
    this.clearLive();
    process.stdout.write(text);
    this.atLineStart = text.endsWith('\n');
  }

  /** Stderr rows must not glue onto a half-written answer line when both go to one terminal. */
  private err(text: string): void {
    if (!this.atLineStart) this.out('\n');
    this.clearLive();
    process.stderr.write(`${text}\n`);
  }

  /** The rest of a Markdown answer (an unfinished last line or table). */
  private flushMarkdown(): void {
    if (this.markdown) this.out(this.markdown.flush());
  }

  start(info: RunInfo): void {
    if (info.scripted) this.err(this.paint('yellow', `[scripted model ${info.model}: replaying a script, no LLM is called]`));
  }

  note(text: string): void {
    this.err(text);
  }

  event(event: RunEvent): void {
    switch (event.type) {
      case 'text':
        this.out(this.markdown ? this.markdown.push(event.text) : event.text);
        break;
      case 'assistant_message':
        this.flushMarkdown();
        if (event.message.toolCalls?.length) this.out(this.atLineStart ? '' : '\n');
        break;
      case 'tool_start':
        this.toolStarted(event.id, event.name, event.arguments);
        break;
      case 'tool_end': {
        this.toolEnded(event.id);
        const row = toolRow(event);
        this.err(this.paint(event.ok ? 'green' : event.metadata.error === 'approval_refused' ? 'yellow' : 'red', row));
        break;
      }
      case 'retry':
        this.err(this.paint('yellow', `quarry: model call failed (${event.reason}); retrying in ${seconds(event.delay_ms)} (attempt ${event.attempt})`));
        break;
      case 'compact':
        this.err(this.paint('dim', `quarry: ${event.message}`));
        break;
      case 'error':
        this.err(this.paint('red', `quarry: ${event.message}`));
        break;
      default:
        break;
    }
  }

  finish(result: RunResult, info: RunInfo): void {
    this.flushMarkdown();
    for (const id of [...this.running.keys()]) this.toolEnded(id);
    this.clearLive();
    if (!this.atLineStart) this.out('\n');
    if (result.status === 'cancelled') this.err(this.paint('yellow', 'quarry: cancelled'));
    const u = result.usage;
    this.err(
      this.paint(
        'dim',
        `[session ${info.sessionId} · ${result.status} · ${u.inputTokens} in / ${u.outputTokens} out ` +
          `tokens${u.cachedTokens ? ` (${u.cachedTokens} cached)` : ''}]`,
      ),
    );
  }
}

class JsonRenderer implements Renderer {
  start(): void {}
  event(): void {}
  note(text: string): void {
    process.stderr.write(`${text}\n`);
  }
  finish(result: RunResult, info: RunInfo): void {
    process.stdout.write(`${JSON.stringify(resultObject(result, info))}\n`);
  }
}

/**
 * What `--format stream-json` prints for an event (docs/guide/running.md), or undefined for those
 * only the trace keeps (run_start, messages, llm_end, clear, run_end: the stream has its own start and result lines).
 */
export function streamEvent(event: RunEvent): StreamJsonLine | undefined {
  switch (event.type) {
    case 'llm_start':
      return event.purpose === 'turn' ? { type: 'turn_start', turn: event.turn } : undefined;
    case 'assistant_message':
      return { type: 'assistant_message', turn: event.turn, text: event.message.content, tool_calls: event.message.toolCalls ?? [], usage: event.usage };
    case 'compact':
      return event.ok
        ? { type: 'compact', ok: true, message: event.message, summarized_messages: event.summarized_messages, kept_messages: event.kept_messages }
        : { type: 'compact', ok: false, message: event.message };
    case 'text':
    case 'retry':
    case 'tool_start':
    case 'tool_blocked':
    case 'tool_end':
    case 'error':
      return event;
    default:
      return undefined;
  }
}

class StreamJsonRenderer implements Renderer {
  private line(value: StreamJsonLine): void {
    process.stdout.write(`${JSON.stringify(value)}\n`);
  }
  start(info: RunInfo): void {
    this.line({ type: 'run_start', session_id: info.sessionId, model: info.model, scripted: info.scripted, profile: info.profile });
  }
  event(event: RunEvent): void {
    const line = streamEvent(event);
    if (line) this.line(line);
  }
  note(text: string): void {
    process.stderr.write(`${text}\n`);
  }
  finish(result: RunResult, info: RunInfo): void {
    this.line({ type: 'result', ...resultObject(result, info) });
  }
}

export function createRenderer(format: OutputFormat, color: boolean, terminal: TerminalOptions = {}): Renderer {
  if (format === 'json') return new JsonRenderer();
  if (format === 'stream-json') return new StreamJsonRenderer();
  return new TextRenderer(color, terminal);
}
