import { existsSync, readFileSync } from 'node:fs';
import { extname, isAbsolute, resolve } from 'node:path';
import type { Backend } from '../backends/types.js';
import { checkReadOnlyStatement } from '../tools/database/sql/statement-check.js';
import type { Engine } from '../tools/database/types.js';
import type { ToolRegistry } from '../tools/core/registry.js';
import { collectRuns, DATABASE_TOOLS, type SessionData, type ToolStep } from './html.js';

/**
 * A session's reads run again without the model (docs/guide/sessions.md "Refreshing a session"): every successful
 * query, export_query and chart drawn from a query (or from an export the session made) is re-run
 * against the same databases, and each new result is set beside the original: row counts, values
 * that changed (old, new, the change), rows that appeared or disappeared in the preview. Exports
 * and charts are written anew under new names; the session's own files are never touched. Only
 * statements that pass the read-only check are re-run, whatever the session's profile allowed.
 * The final answers come back with every figure a refreshed result changed marked (old → new).
 */

export type RefreshStatus = 'unchanged' | 'changed' | 'failed' | 'skipped';

export interface ValueChange {
  /** The row, by its non-numeric cells ("" for a one-row result). */
  row: string;
  column: string;
  old: string;
  new: string;
  /** new - old, and the change in percent of old (null when old is 0). */
  delta: number;
  percent: number | null;
}

export interface RefreshedStep {
  /** 1-based position among the re-run steps, and the question it belongs to. */
  index: number;
  question: number;
  tool: string;
  operation: 'query' | 'export_query' | 'chart';
  database?: string;
  sql?: string;
  status: RefreshStatus;
  /** Whether the change is more than the tolerance (always true for a failure). */
  beyondTolerance: boolean;
  /** Why it was skipped, or the error it now fails with. */
  message?: string;
  before: { rows?: number; more?: boolean; output: string; path?: string };
  after?: { rows?: number; more?: boolean; output: string; path?: string; files?: string[] };
  columns?: { old: string[]; new: string[] };
  values: ValueChange[];
  appeared: string[][];
  disappeared: string[][];
  durationMs: number;
}

export interface AnswerFigure {
  /** Where the figure is in the answer text. */
  start: number;
  end: number;
  old: string;
  new: string;
}

export interface RefreshedAnswer {
  question: number;
  prompt: string;
  text: string;
  figures: AnswerFigure[];
}

export interface RefreshResult {
  sessionId: string;
  steps: RefreshedStep[];
  answers: RefreshedAnswer[];
  /** Reads of other kinds (describe, sample, search ...) and other tools, not re-run. */
  notRerun: number;
  tolerancePercent: number;
  durationMs: number;
  /** The original runs' time from start to end (from the trace), for comparison. */
  originalDurationMs: number;
  startedAt: string;
  /** A step failed; a step changed beyond the tolerance. */
  failed: boolean;
  changed: boolean;
}

export interface RefreshWorkspace {
  registry: ToolRegistry;
  workingDir: string;
  backend: Backend;
}

export interface RefreshOptions {
  tolerancePercent?: number;
  now?: Date;
  signal?: AbortSignal;
}

/** The result table of a query or an export preview, as the tool printed it. */
export interface ParsedTable {
  columns: string[];
  rows: string[][];
}

/** Reads the box-drawn table (src/tools/database/format.ts) back into cells; undefined when the text holds none. */
export function parseResultTable(output: string): ParsedTable | undefined {
  const lines = output.split('\n').filter((line) => line.startsWith('│') && line.endsWith('│'));
  if (lines.length === 0) return undefined;
  const cells = (line: string) =>
    line
      .slice(1, -1)
      .split('│')
      .map((cell) => cell.trim());
  return { columns: cells(lines[0]!), rows: lines.slice(1).map(cells) };
}

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

function asNumber(cell: string): number | undefined {
  return NUMBER.test(cell) ? Number(cell) : undefined;
}

function rowKey(row: readonly string[]): string {
  return row.filter((cell) => asNumber(cell) === undefined).join(' | ');
}

function percentChange(before: number, after: number): number | null {
  if (before === 0) return after === 0 ? 0 : null;
  return ((after - before) / Math.abs(before)) * 100;
}

function beyond(percent: number | null, tolerance: number): boolean {
  return percent === null || Math.abs(percent) > tolerance + 1e-9;
}

/**
 * Rows are matched by their non-numeric cells (a region, a date, a name), in order among rows
 * with the same ones; numbers of matched rows are compared one by one. Unmatched rows appeared or
 * disappeared. A result of numbers only (an aggregate) is matched by position.
 */
export function compareTables(before: ParsedTable, after: ParsedTable): Pick<RefreshedStep, 'values' | 'appeared' | 'disappeared' | 'columns'> {
  const sameColumns = before.columns.length === after.columns.length && before.columns.every((column, i) => column === after.columns[i]);
  const columns = sameColumns ? undefined : { old: before.columns, new: after.columns };
  const values: ValueChange[] = [];
  const unmatched = after.rows.map((row) => ({ row, key: rowKey(row), used: false }));
  const disappeared: string[][] = [];
  for (const row of before.rows) {
    const key = rowKey(row);
    const match = unmatched.find((candidate) => !candidate.used && candidate.key === key && candidate.row.length === row.length);
    if (!match) {
      disappeared.push(row);
      continue;
    }
    match.used = true;
    row.forEach((cell, i) => {
      const next = match.row[i]!;
      if (cell === next) return;
      const a = asNumber(cell);
      const b = asNumber(next);
      if (a === undefined || b === undefined) return;
      values.push({ row: key, column: after.columns[i] ?? before.columns[i] ?? `#${i + 1}`, old: cell, new: next, delta: b - a, percent: percentChange(a, b) });
    });
  }
  const appeared = unmatched.filter((candidate) => !candidate.used).map((candidate) => candidate.row);
  return { ...(columns ? { columns } : {}), values, appeared, disappeared };
}

/** A file name beside the original that does not exist yet: NAME.refreshed-STAMP[-N].EXT. */
export function refreshedName(path: string, stamp: string, taken: ReadonlySet<string> = new Set()): string {
  const lower = path.toLowerCase();
  const extension = lower.endsWith('.vl.json') ? '.vl.json' : extname(path);
  const base = extension ? path.slice(0, -extension.length) : path;
  for (let n = 1; ; n++) {
    const candidate = `${base}.refreshed-${stamp}${n > 1 ? `-${n}` : ''}${extension}`;
    const siblings =
      extension === '.png' || extension === '.svg' ? ['.png', '.svg', '.vl.json'].map((ext) => candidate.slice(0, -extension.length) + ext) : [candidate];
    if (siblings.every((sibling) => !existsSync(sibling) && !taken.has(sibling))) return candidate;
  }
}

function stampOf(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

function originalDuration(session: SessionData): number {
  let total = 0;
  let start: number | undefined;
  for (const event of session.events) {
    if (event.type === 'run_start') start = Date.parse(event.ts);
    else if (event.type === 'run_end' && start !== undefined) {
      total += Date.parse(event.ts) - start;
      start = undefined;
    }
  }
  return total;
}

interface Planned {
  step: ToolStep;
  question: number;
  operation: RefreshedStep['operation'];
}

/** The steps to re-run, in order, and how many successful steps are not re-run. */
function plan(session: SessionData): { planned: Planned[]; notRerun: number; runs: ReturnType<typeof collectRuns> } {
  const runs = collectRuns(session.events);
  const planned: Planned[] = [];
  let notRerun = 0;
  runs.forEach((run, question) => {
    for (const entry of run.steps) {
      if (entry.kind !== 'tool' || entry.step.ok !== true) continue;
      const { step } = entry;
      const operation = step.args.operation;
      if (DATABASE_TOOLS.has(step.name) && (operation === 'query' || operation === 'export_query')) planned.push({ step, question, operation });
      else if (step.name === 'chart') planned.push({ step, question, operation: 'chart' });
      else notRerun++;
    }
  });
  return { planned, notRerun, runs };
}

function absolute(workingDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(workingDir, path);
}

export async function refreshSession(session: SessionData, workspace: RefreshWorkspace, options: RefreshOptions = {}): Promise<RefreshResult> {
  const started = Date.now();
  const now = options.now ?? new Date();
  const stamp = stampOf(now);
  const tolerance = options.tolerancePercent ?? 0;
  const signal = options.signal ?? new AbortController().signal;
  const { planned, notRerun, runs } = plan(session);
  const taken = new Set<string>();
  /** Exports of the session (absolute path) and where the refresh wrote them anew. */
  const exported = new Map<string, string>();
  const steps: RefreshedStep[] = [];
  for (const [i, { step, question, operation }] of planned.entries()) {
    const stepStarted = Date.now();
    const sql = typeof step.args.sql === 'string' ? step.args.sql : undefined;
    const database = typeof step.args.database === 'string' ? step.args.database : undefined;
    const base: RefreshedStep = {
      index: i + 1,
      question: question + 1,
      tool: step.name,
      operation,
      ...(database ? { database } : {}),
      ...(sql !== undefined ? { sql } : {}),
      status: 'unchanged',
      beyondTolerance: false,
      before: {
        output: step.output ?? '',
        ...(typeof step.metadata.rows === 'number' ? { rows: step.metadata.rows } : {}),
        ...(typeof step.metadata.more === 'boolean' ? { more: step.metadata.more } : {}),
        ...(typeof step.metadata.path === 'string' ? { path: step.metadata.path } : {}),
      },
      values: [],
      appeared: [],
      disappeared: [],
      durationMs: 0,
    };
    const args: Record<string, unknown> = { ...step.args };
    const skip = (message: string) => steps.push({ ...base, status: 'skipped', message, durationMs: Date.now() - stepStarted });
    // Only reads are re-run: a session under a mutations profile may hold writes among its queries.
    // (chart checks its statement itself, on the database it names.)
    if (sql !== undefined && step.name !== 'chart') {
      try {
        checkReadOnlyStatement(sql, step.name as Engine);
      } catch (error) {
        skip(`not re-run: not a read (${(error as Error).message})`);
        continue;
      }
    }
    if (operation !== 'query') {
      const original = typeof step.metadata.path === 'string' ? step.metadata.path : absolute(session.meta.working_dir, String(step.args.output_path ?? ''));
      const target = refreshedName(original, stamp, taken);
      for (const ext of operation === 'chart' ? ['.svg', '.png', '.vl.json'] : ['']) taken.add(ext ? target.replace(/\.(png|svg|vl\.json)$/i, ext) : target);
      args.output_path = target;
      if (operation === 'chart' && typeof step.args.csv_path === 'string') {
        const refreshedCsv = exported.get(absolute(session.meta.working_dir, step.args.csv_path));
        if (!refreshedCsv) {
          skip('not re-run: drawn from a file this session did not export');
          continue;
        }
        args.csv_path = refreshedCsv;
      }
    }
    const result = await workspace.registry.run(step.name, args, { workingDir: workspace.workingDir, backend: workspace.backend, signal });
    const durationMs = Date.now() - stepStarted;
    if (!result.ok) {
      const hint = await nameSuggestions(workspace, step.name, database, sql ?? '', result.output, signal);
      steps.push({ ...base, status: 'failed', beyondTolerance: true, message: hint ? `${result.output}\n${hint}` : result.output, durationMs });
      continue;
    }
    const after: NonNullable<RefreshedStep['after']> = {
      output: result.output,
      ...(typeof result.metadata.rows === 'number' ? { rows: result.metadata.rows } : {}),
      ...(typeof result.metadata.more === 'boolean' ? { more: result.metadata.more } : {}),
      ...(typeof result.metadata.path === 'string' ? { path: result.metadata.path } : {}),
      ...(Array.isArray(result.metadata.files) ? { files: result.metadata.files as string[] } : {}),
    };
    if (operation === 'export_query' && base.before.path && after.path) exported.set(base.before.path, after.path);
    const oldTable = operation === 'chart' ? chartTable(step.metadata.files) : parseResultTable(base.before.output);
    const newTable = operation === 'chart' ? chartTable(result.metadata.files) : parseResultTable(result.output);
    const compared = oldTable && newTable ? compareTables(oldTable, newTable) : { values: [], appeared: [], disappeared: [] };
    const done: RefreshedStep = { ...base, ...compared, after, durationMs };
    done.status = isChanged(done) ? 'changed' : 'unchanged';
    done.beyondTolerance = done.status === 'changed' && isBeyond(done, tolerance);
    steps.push(done);
  }
  return {
    sessionId: session.meta.id,
    steps,
    answers: runs.map((run, question) => ({
      question: question + 1,
      prompt: run.prompt,
      text: run.answer,
      figures: markFigures(
        run.answer,
        steps.filter((step) => step.question === question + 1),
      ),
    })),
    notRerun,
    tolerancePercent: tolerance,
    durationMs: Date.now() - started,
    originalDurationMs: originalDuration(session),
    startedAt: now.toISOString(),
    failed: steps.some((step) => step.status === 'failed'),
    changed: steps.some((step) => step.status === 'changed' && step.beyondTolerance),
  };
}

/** The rows a chart drew, from the data in its Vega-Lite specification (NAME.vl.json); undefined when it is gone. */
function chartTable(files: unknown): ParsedTable | undefined {
  const spec = Array.isArray(files) ? files.find((file): file is string => typeof file === 'string' && file.endsWith('.vl.json')) : undefined;
  if (!spec) return undefined;
  let values: unknown;
  try {
    values = (JSON.parse(readFileSync(spec, 'utf8')) as { data?: { values?: unknown } }).data?.values;
  } catch {
    return undefined;
  }
  if (!Array.isArray(values) || values.length === 0) return undefined;
  const columns = Object.keys(values[0] as object);
  const text = (value: unknown) => (value === null || value === undefined ? 'NULL' : String(value));
  return { columns, rows: values.map((row) => columns.map((column) => text((row as Record<string, unknown>)[column]))) };
}

/** The missing name in an engine's error (SQLite, PostgreSQL, MariaDB, Oracle, DuckDB wordings). */
const MISSING_NAME = [
  /no such (?:column|table): (?:\w+\.)?([\w$]+)/i,
  /(?:column|relation) "(?:[\w$]+\.)?([\w$]+)" does not exist/i,
  /Unknown column '(?:[\w$]+\.)?([\w$]+)'/i,
  /Table '[\w$]+\.([\w$]+)' doesn't exist/i,
  /"([\w$]+)": invalid identifier/i,
  /Referenced column "?([\w$]+)"? not found/i,
];

/** For a statement that now fails on a name: the tables and columns now named like it (the catalog search). */
async function nameSuggestions(
  workspace: RefreshWorkspace,
  tool: string,
  database: string | undefined,
  sql: string,
  error: string,
  signal: AbortSignal,
): Promise<string> {
  const context = { workingDir: workspace.workingDir, backend: workspace.backend, signal };
  if (!DATABASE_TOOLS.has(tool)) return '';
  const name = MISSING_NAME.map((pattern) => pattern.exec(error)?.[1]).find(Boolean);
  if (!name) return '';
  // The name's stem (amount of "amount", cust of "cust_id") finds renamed forms of it.
  const stem = name.length > 4 ? name.slice(0, Math.max(4, Math.ceil(name.length * 0.6))) : name;
  const found = await workspace.registry.run(tool, { operation: 'search', pattern: stem, ...(database ? { database } : {}) }, context);
  const table = found.ok ? parseResultTable(found.output) : undefined;
  const at = (column: string) => table?.columns.indexOf(column) ?? -1;
  const names = (table?.rows ?? []).slice(0, 10).map((row) => [row[at('table')], row[at('column')]].filter(Boolean).join('.'));
  if (names.length) return `names like "${name}" now: ${[...new Set(names)].join(', ')}`;
  // A name renamed beyond its stem (city to town): the columns the statement's tables have now.
  const tables = [...new Set([...sql.matchAll(/\b(?:FROM|JOIN)\s+([\w$.]+)/gi)].map((match) => match[1]!))].slice(0, 3);
  const listed: string[] = [];
  for (const tableName of tables) {
    const described = await workspace.registry.run(tool, { operation: 'describe', table_name: tableName, ...(database ? { database } : {}) }, context);
    const columns = described.ok ? parseResultTable(described.output) : undefined;
    if (columns) listed.push(`${tableName} (${columns.rows.map((row) => row[0]).join(', ')})`);
  }
  return listed.length ? `no name like "${name}" now; columns now: ${listed.join('; ')}` : '';
}

function rowCountChanged(step: RefreshedStep): boolean {
  return step.before.rows !== undefined && step.after?.rows !== undefined && (step.before.rows !== step.after.rows || step.before.more !== step.after.more);
}

function isChanged(step: RefreshedStep): boolean {
  return Boolean(step.columns) || step.values.length > 0 || step.appeared.length > 0 || step.disappeared.length > 0 || rowCountChanged(step);
}

/**
 * More than the tolerance: other columns, a value or the row count off by more than that many
 * percent, or more rows appeared and disappeared than that share of the old rows.
 */
function isBeyond(step: RefreshedStep, tolerance: number): boolean {
  if (step.columns) return true;
  if (step.values.some((value) => beyond(value.percent, tolerance))) return true;
  const oldRows = step.before.rows ?? 0;
  if (rowCountChanged(step) && beyond(percentChange(oldRows, step.after!.rows ?? 0), tolerance)) return true;
  const moved = step.appeared.length + step.disappeared.length;
  return moved > 0 && beyond(percentChange(Math.max(oldRows, 1), Math.max(oldRows, 1) + moved), tolerance);
}

const FIGURE = /(?<![\w.,])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])-?\d+(?:\.\d+)?(?![\w])/g;

function decimalsOf(text: string): number {
  const dot = text.indexOf('.');
  return dot < 0 ? 0 : text.length - dot - 1;
}

function withSeparators(figure: string, text: string): string {
  if (!figure.includes(',')) return text;
  const [whole, fraction] = text.split('.');
  return `${whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${fraction ? `.${fraction}` : ''}`;
}

function formatLike(figure: string, value: number): string {
  return withSeparators(figure, value.toFixed(decimalsOf(figure)));
}

/**
 * The figures of an answer that a refreshed result changed: a number in the text equal to an old
 * value (as written, or rounded to the figure's decimals; thousands separators allowed) whose
 * step now gives another, or an old row count that changed; numbers in code are left alone.
 */
export function markFigures(text: string, steps: readonly RefreshedStep[]): AnswerFigure[] {
  const changes: Array<{ old: number; new: number; newText: string }> = [];
  for (const step of steps) {
    for (const value of step.values) changes.push({ old: Number(value.old), new: Number(value.new), newText: value.new });
    if (rowCountChanged(step) && !step.before.more && !step.after!.more)
      changes.push({ old: step.before.rows!, new: step.after!.rows!, newText: String(step.after!.rows) });
  }
  if (changes.length === 0) return [];
  const figures: AnswerFigure[] = [];
  // Numbers in code (the SQL shown in fenced blocks, `LIMIT 10`) are no figures of the answer.
  const code = [...text.matchAll(/```[\s\S]*?(```|$)|`[^`\n]*`/g)].map((block) => [block.index, block.index + block[0].length] as const);
  for (const match of text.matchAll(FIGURE)) {
    if (code.some(([start, end]) => match.index >= start && match.index < end)) continue;
    const figure = match[0];
    const value = Number(figure.replace(/,/g, ''));
    const decimals = decimalsOf(figure);
    const change = changes.find((candidate) => candidate.old === value || Number(candidate.old.toFixed(decimals)) === value);
    if (!change) continue;
    // The figure as the result wrote it gets the new value as the result writes it; a rounded one, rounded alike.
    const next =
      change.old === value && decimalsOf(figure) === decimalsOf(String(change.old)) ? withSeparators(figure, change.newText) : formatLike(figure, change.new);
    if (next === figure) continue;
    figures.push({ start: match.index, end: match.index + figure.length, old: figure, new: next });
  }
  return figures;
}

/** The answer as text with each changed figure written "old → new". */
export function answerWithChanges(answer: RefreshedAnswer, mark: (figure: AnswerFigure) => string = (f) => `${f.old} → ${f.new}`): string {
  let out = '';
  let at = 0;
  for (const figure of answer.figures) {
    out += answer.text.slice(at, figure.start) + mark(figure);
    at = figure.end;
  }
  return out + answer.text.slice(at);
}
