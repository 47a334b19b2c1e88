import { redactSecrets, sessionSecretValues } from './redact.js';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Marked, type Tokens } from 'marked';
import { DATABASE_TOOL_NAMES } from '../profiles/schema.js';
import type { SessionMeta, TimedTraceEvent } from '../agent/session.js';
import type { Message } from '../model/types.js';
import { escapeHtml, renderStepOutput } from './step-output.js';

export { escapeHtml, REPORT_PREVIEW_LINES } from './step-output.js';

/**
 * `quarry report`: one self-contained HTML page of a session (docs/guide/charts-and-reports.md "quarry report"): the
 * questions, the final answers (Markdown), every SQL statement with its result preview and
 * duration, charts inline, exports with their row counts, refusals, token usage, and delegated
 * children as sections. Nothing is fetched: CSS and images are inline, and a Content Security
 * Policy forbids scripts and every request. Text from tools and models is escaped.
 */

export interface SessionData {
  meta: SessionMeta;
  events: TimedTraceEvent[];
  dir: string;
}

/** Charts larger than this are listed, not inlined. */
export const MAX_INLINE_IMAGE_BYTES = 5 * 1024 * 1024;

/** Every engine's tool (ClickHouse's was missing: its queries were neither counted nor refreshed). */
export const DATABASE_TOOLS: ReadonlySet<string> = new Set<string>(DATABASE_TOOL_NAMES);

const markdown = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    // Raw HTML in model text is shown as text, never interpreted.
    html(token: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(token.text);
    },
    // Links are shown, never followed: the text and then the address as text, so a click cannot carry
    // data that a model wrote into an address out of the machine (docs/security.md); copy it to open it.
    link(token: Tokens.Link) {
      const text = this.parser.parseInline(token.tokens);
      if (!/^(https?:|mailto:)/i.test(token.href)) return text;
      // An address written bare (GFM autolinks user@host, also inside postgres://user:pw@host/db):
      // the text as written, not split by a "(mailto:…)" after the part that looked like one.
      if (token.href === `mailto:${token.text}` && token.raw === token.text) return text;
      const address = escapeHtml(token.href);
      return text === address ? `<span class="link-ref">${address}</span>` : `${text} <span class="link-ref">(${address})</span>`;
    },
    image(token: Tokens.Image) {
      return `<span class="image-ref">[image: ${escapeHtml(token.text || token.href)}]</span>`;
    },
  },
});

export function renderMarkdown(text: string): string {
  // Tables scroll inside a wrapper, so the table itself keeps its borders joined.
  return (markdown.parse(text, { async: false }) as string).replace(/<table>/g, '<div class="table-wrap"><table>').replace(/<\/table>/g, '</table></div>');
}

function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return '';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function formatNumber(value: number): string {
  return value.toLocaleString('en-US');
}

function parseArgs(text: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function inlineImage(path: unknown): string {
  if (typeof path !== 'string' || !path.endsWith('.png')) return '';
  if (!existsSync(path)) return `<p class="note">The chart ${escapeHtml(path)} no longer exists.</p>`;
  const size = statSync(path).size;
  if (size > MAX_INLINE_IMAGE_BYTES) return `<p class="note">Chart ${escapeHtml(path)} (${formatNumber(size)} bytes) is too large to inline.</p>`;
  return `<img class="chart" alt="chart ${escapeHtml(path)}" src="data:image/png;base64,${readFileSync(path).toString('base64')}">`;
}

export interface ToolStep {
  id: string;
  name: string;
  args: Record<string, unknown>;
  ok?: boolean;
  durationMs?: number;
  metadata: Record<string, unknown>;
  output?: string;
  blocked?: string;
}

export interface Run {
  prompt: string;
  steps: Array<{ kind: 'text'; text: string } | { kind: 'tool'; step: ToolStep }>;
  answer: string;
  status?: string;
  error?: string;
}

/** Walks the trace into runs: each question, its steps in order, its final answer. */
export function collectRuns(events: readonly TimedTraceEvent[]): Run[] {
  const runs: Run[] = [];
  const steps = new Map<string, ToolStep>();
  let run: Run | undefined;
  const current = (): Run => {
    if (!run) {
      run = { prompt: '(no prompt recorded)', steps: [], answer: '' };
      runs.push(run);
    }
    return run;
  };
  for (const event of events) {
    switch (event.type) {
      case 'run_start':
        run = { prompt: event.prompt, steps: [], answer: '' };
        runs.push(run);
        break;
      case 'message': {
        const message: Message = event.message;
        if (message.role === 'assistant') {
          const target = current();
          if (message.content.trim()) {
            target.steps.push({ kind: 'text', text: message.content });
            target.answer = message.content;
          }
          for (const call of message.toolCalls ?? []) {
            const step: ToolStep = { id: call.id, name: call.name, args: parseArgs(call.arguments), metadata: {} };
            steps.set(call.id, step);
            target.steps.push({ kind: 'tool', step });
          }
        } else if (message.role === 'tool') {
          const step = steps.get(message.toolCallId);
          if (step) {
            step.output = message.content;
            if (step.ok === undefined) step.ok = !message.isError;
          }
        } else if (message.role === 'user' && run && run.steps.length > 0) {
          // A later user message in the same run (the REPL): a new question.
          run = { prompt: message.content, steps: [], answer: '' };
          runs.push(run);
        }
        break;
      }
      case 'tool_end': {
        const step = steps.get(event.id);
        if (step) {
          step.ok = event.ok;
          step.durationMs = event.duration_ms;
          step.metadata = event.metadata ?? {};
        }
        break;
      }
      case 'tool_blocked': {
        const step = steps.get(event.id);
        if (step) {
          step.ok = false;
          step.blocked = event.reason;
        }
        break;
      }
      case 'run_end':
        current().status = event.status;
        if (event.error) current().error = event.error;
        break;
      default:
        break;
    }
  }
  return runs;
}

function isRefusal(step: ToolStep): boolean {
  return Boolean(step.blocked) || (step.ok === false && /^(refused|[a-z_]+: refused)/i.test(step.output ?? ''));
}

function renderStep(step: ToolStep): string {
  const classes = ['step', step.ok === false ? 'failed' : 'ok', isRefusal(step) ? 'refused' : ''].filter(Boolean).join(' ');
  const operation = typeof step.args.operation === 'string' ? ` ${step.args.operation}` : '';
  const badge = isRefusal(step)
    ? '<span class="badge refused">refused</span>'
    : step.ok === false
      ? '<span class="badge failed">error</span>'
      : '<span class="badge">ok</span>';
  const parts = [
    `<div class="${classes}"><div class="step-head">${badge} <code>${escapeHtml(step.name + operation)}</code> <span ` +
      `class="muted">${formatDuration(step.durationMs)}</span></div>`,
  ];
  if (typeof step.args.sql === 'string') parts.push(`<pre class="sql">${escapeHtml(step.args.sql)}</pre>`);
  else if (typeof step.args.command === 'string') parts.push(`<pre class="sql">$ ${escapeHtml(step.args.command)}</pre>`);
  else if (Object.keys(step.args).length) parts.push(`<pre class="args">${escapeHtml(JSON.stringify(step.args, null, 1))}</pre>`);
  if (step.blocked) parts.push(`<p class="note">Not run: ${escapeHtml(step.blocked)}</p>`);
  if (step.name === 'chart' && step.ok) parts.push(inlineImage(step.metadata.path));
  if (step.output !== undefined)
    parts.push(`<details${step.name === 'chart' ? '' : ' open'}><summary>result</summary>${renderStepOutput(step.name, step.output)}</details>`);
  parts.push('</div>');
  return parts.join('\n');
}

interface Summary {
  queries: number;
  exports: Array<{ path: string; rows: unknown; bytes: unknown }>;
  charts: string[];
  chartCount: number;
  refusals: number;
}

function summarise(runs: readonly Run[]): Summary {
  const summary: Summary = { queries: 0, exports: [], charts: [], chartCount: 0, refusals: 0 };
  for (const run of runs) {
    for (const entry of run.steps) {
      if (entry.kind !== 'tool') continue;
      const { step } = entry;
      if (isRefusal(step)) summary.refusals++;
      if (DATABASE_TOOLS.has(step.name) && step.args.operation === 'query') summary.queries++;
      if (DATABASE_TOOLS.has(step.name) && step.args.operation === 'export_query' && step.ok)
        summary.exports.push({ path: String(step.metadata.path ?? step.args.output_path), rows: step.metadata.rows, bytes: step.metadata.bytes });
      if (step.name === 'chart' && step.ok && Array.isArray(step.metadata.files)) {
        summary.chartCount++;
        summary.charts.push(...(step.metadata.files as string[]));
      }
    }
  }
  return summary;
}

function renderSession(session: SessionData, level: number): string {
  const runs = collectRuns(session.events);
  const summary = summarise(runs);
  const meta = session.meta;
  const heading = `h${Math.min(level, 6)}`;
  const out: string[] = [];
  runs.forEach((run, index) => {
    out.push(
      `<section class="run"><${heading}>Question ${runs.length > 1 ? index + 1 : ''}</${heading}><blockquote ` +
        `class="question">${escapeHtml(run.prompt)}</blockquote>`,
    );
    const status = run.status && run.status !== 'completed' ? ` (${escapeHtml(run.status)})` : '';
    const answer = run.answer ? renderMarkdown(run.answer) : '<p class="muted">(no answer)</p>';
    const error = run.error ? `<p class="note">${escapeHtml(run.error)}</p>` : '';
    out.push(`<div class="answer"><div class="answer-label">Answer${status}</div>${answer}${error}</div>`);
    const work = run.steps.filter((entry) => !(entry.kind === 'text' && entry.text === run.answer));
    if (work.length) {
      out.push('<details class="work" open><summary>How it was answered</summary>');
      for (const entry of work) out.push(entry.kind === 'text' ? `<div class="thought">${renderMarkdown(entry.text)}</div>` : renderStep(entry.step));
      out.push('</details>');
    }
    out.push('</section>');
  });
  const facts = [
    `${formatNumber(summary.queries)} quer${summary.queries === 1 ? 'y' : 'ies'}`,
    `${summary.exports.length} export${summary.exports.length === 1 ? '' : 's'}`,
    `${summary.chartCount} chart${summary.chartCount === 1 ? '' : 's'}`,
    `${summary.refusals} refus${summary.refusals === 1 ? 'al' : 'als'}`,
  ];
  out.push(`<section class="summary"><${heading}>Summary</${heading}><p>${facts.join(' · ')}</p>`);
  if (summary.exports.length) {
    out.push(
      `<table><thead><tr><th>export</th><th>rows</th><th>bytes</th></tr></thead><tbody>${summary.exports
        .map(
          (entry) =>
            `<tr><td>${escapeHtml(entry.path)}</td><td class="num">${typeof entry.rows === 'number' ? formatNumber(entry.rows) : ''}</td><td ` +
            `class="num">${typeof entry.bytes === 'number' ? formatNumber(entry.bytes) : ''}</td></tr>`,
        )
        .join('')}</tbody></table>`,
    );
  }
  if (summary.charts.length) out.push(`<p>Chart files: ${summary.charts.map((path) => `<code>${escapeHtml(path)}</code>`).join(', ')}</p>`);
  out.push(
    `<p>Tokens: ${formatNumber(meta.usage.input_tokens)} in (${formatNumber(meta.usage.cached_tokens)} cached), ${formatNumber(meta.usage.output_tokens)} ` +
      `out. Cost: not computed (quarry keeps no price list; multiply the tokens by your provider's prices).</p></section>`,
  );
  for (const child of childSessions(session.dir)) {
    out.push(
      `<section class="child"><${heading}>Delegated task</${heading}><p class="muted">child session ${escapeHtml(child.meta.id)}, ` +
        `${escapeHtml(child.meta.status)}</p>${renderSession(child, level + 1)}</section>`,
    );
  }
  return out.join('\n');
}

function childSessions(dir: string): SessionData[] {
  const childrenDir = join(dir, 'children');
  if (!existsSync(childrenDir)) return [];
  return readdirSync(childrenDir)
    .sort()
    .flatMap((id) => {
      const child = loadSessionDir(join(childrenDir, id));
      return child ? [child] : [];
    });
}

/** A session directory's meta and trace (a torn last trace line is skipped). */
export function loadSessionDir(dir: string): SessionData | undefined {
  let meta: SessionMeta;
  try {
    meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as SessionMeta;
  } catch {
    return undefined;
  }
  const events: TimedTraceEvent[] = [];
  let text = '';
  try {
    text = readFileSync(join(dir, 'trace.jsonl'), 'utf8');
  } catch {
    // no trace yet
  }
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      events.push(JSON.parse(line) as TimedTraceEvent);
    } catch {
      // a line cut short by a crash
    }
  }
  return { meta, events, dir };
}

const STYLE =
  `
:root { color-scheme: light; --fg: #1b1f24; --muted: #5d6670; --line: #d9dee3; --accent: #2f5d8a; --bad: #a12a2a; --bg-soft: #f5f7f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", Roboto, Helvetica, Arial, sans-serif; color: var(--fg); background: #fff; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem; }
header.top { border-bottom: 2px solid var(--accent); margin-bottom: 1rem; }
h1 { font-size: 1.5rem; margin: 0.5rem 0; } h2, h3, h4 { margin: 1.5rem 0 0.5rem; }
.muted, .meta { color: var(--muted); font-size: 0.9rem; }
blockquote.question { margin: 0 0 1rem; padding: 0.5rem 1rem; border-left: 4px solid var(--accent); background: var(--bg-soft); white-space: pre-wrap; }
.answer { border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem 1rem; margin: 1rem 0; }
.answer-label { font-weight: bold; color: var(--accent); }
.step { border: 1px solid var(--line); border-radius: 6px; padding: 0.5rem; margin: 0.5rem 0; break-inside: avoid; }
.step.failed { border-color: var(--bad); }
.badge { display: inline-block; font-size: 0.75rem; padding: 0 0.4rem; border-radius: 3px; background: #e3ecf5; color: var(--accent); }
.badge.failed, .badge.refused { background: #f7e1e1; color: var(--bad); }
pre { overflow-x: auto; background: var(--bg-soft); padding: 0.5rem; border-radius: 4px; font: 0.8rem/1.35 "DejaVu Sans Mono", Menlo, Consolas, monospace; ` +
  `margin: 0.4rem 0; }
pre.sql { border-left: 3px solid var(--accent); }
.cut, .note { color: var(--muted); font-style: italic; }
img.chart { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; margin: 0.5rem 0; }
/* A table keeps display: table (display: block breaks border-collapse: gaps between cell borders); a wrapper scrolls it. */
.table-wrap { overflow-x: auto; max-width: 100%; margin: 0.4rem 0; }
table { border-collapse: collapse; border-spacing: 0; }
th, td { border: 1px solid var(--line); padding: 0.2rem 0.5rem; text-align: left; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
th[align="right"], td[align="right"] { text-align: right; } th[align="center"], td[align="center"] { text-align: center; }
table.result { font: 0.8rem/1.35 "DejaVu Sans Mono", Menlo, Consolas, monospace; } table.result th { background: var(--bg-soft); }
details > summary { cursor: pointer; color: var(--muted); }
.child { border-left: 3px solid var(--line); padding-left: 1rem; margin-top: 2rem; }
@media (max-width: 40rem) { body { font-size: 15px; } main { padding: 0.5rem; } }
@media print { details { display: block; } details > summary { display: none; } .step, .answer, img.chart { break-inside: avoid; } a { color: inherit; } }
`;

/** The page's start up to <body>: no scripts, no requests (the Content Security Policy), inline styles only. */
export function pageHead(title: string, extraStyle = ''): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}${extraStyle}</style>
</head>
<body>`;
}

export function renderReport(session: SessionData, generatedAt = new Date(), secrets: readonly string[] = sessionSecretValues(session.meta.databases)): string {
  return redactSecrets(reportPage(session, generatedAt), secrets);
}

function reportPage(session: SessionData, generatedAt: Date): string {
  const meta = session.meta;
  const title = `quarry session ${meta.id}`;
  return (
    `${pageHead(title)}
<main>
<header class="top">
<h1>${escapeHtml(meta.first_prompt ? meta.first_prompt.split('\n')[0]!.slice(0, 120) : title)}</h1>
<p class="meta">Session ${escapeHtml(meta.id)} · ${escapeHtml(meta.status)} · model ${escapeHtml(meta.model)} · profile ${escapeHtml(meta.profile)} · ` +
    `started ${escapeHtml(meta.created_at.replace('T', ' ').slice(0, 19))} UTC · report made ` +
    `${escapeHtml(generatedAt.toISOString().replace('T', ' ').slice(0, 19))} UTC</p>
</header>
${renderSession(session, 2)}
</main>
</body>
</html>
`
  );
}
