import { createHash } from 'node:crypto';
import { countOperation, type OperationCounts } from './operations.js';
import { DUCKDB_PROMPT_NOTE } from '../tools/database/drivers/duckdb-files.js';
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunEvent } from '../agent/events.js';
import { Agent } from '../agent/loop.js';
import { Approver } from '../agent/approver.js';
import { UserQuestionChannel, type AskPerson } from '../agent/ask-user.js';
import { automaticVariables, buildSystemPrompt, DEFAULT_SYSTEM_PROMPT } from '../agent/prompts.js';
import { Session } from '../agent/session.js';
import { openWorkspace, type Workspace } from '../agent/workspace.js';
import { knowledgePromptSection } from '../tools/knowledge/prompt.js';
import { UsageError } from '../errors.js';
import { createProvider, knownContextWindow, type ModelChoice } from '../model/resolve.js';
import { retryPolicyFromEnv } from '../model/retry.js';
import { usageJson } from '../model/types.js';
import { queryInTurn } from '../tools/database/connections.js';
import { checkReadOnlyStatement } from '../tools/database/sql/statement-check.js';
import { ENGINES, type DatabaseConfig } from '../tools/database/types.js';
import { canonicalValue, compareResults, resultSignature, type Canonical, type CompareRule } from './compare.js';
import type { EvalQuestion, Suite } from './suite.js';

/**
 * The `quarry eval` runner (docs/guide/eval.md): each question is one agent run (K runs with
 * --vote K) in its own session under the output directory; the final SQL is taken from the
 * answer's fenced sql block (or the last successful query call); gold and predicted SQL run
 * read-only against the same database and are compared by the suite's rule. Results are
 * appended to results.jsonl as questions finish, so --resume continues where a run stopped.
 */

/** How many rows of the expected and returned results the report shows for a wrong answer. */
export const REPORT_SAMPLE_ROWS = 3;

/** The first rows of a result in JSON-safe comparable form (numbers, text, null). */
function sampleRows(rows: readonly unknown[][]): Canonical[][] {
  return rows.slice(0, REPORT_SAMPLE_ROWS).map((row) => row.map(canonicalValue));
}

/** The most rows of a gold or predicted result that are fetched for scoring. */
export const MAX_SCORED_ROWS = 100_000;

export const EVAL_INSTRUCTIONS =
  `

You are answering one question of a text-to-SQL evaluation. Explore the schema and data as you need, run your SQL to check it, then end your answer with ` +
  `the final SQL statement that answers the question, in exactly one fenced block:

\`\`\`sql
SELECT ...
\`\`\`

The statement must return exactly the rows and columns the question asks for, nothing more.`;

export interface EvalRunOptions {
  suite: Suite;
  choice: ModelChoice;
  profile: string;
  /** BIRD/Spider layout: DIR/<db_id>/<db_id>.sqlite. */
  dbDir?: string;
  /** --db / --databases / config: aliases for quarry YAML suites, or one database for every question (Mini-Dev's MySQL/PostgreSQL). */
  databases: { dbFlags: string[]; databasesFile?: string };
  configFile?: string;
  systemPromptFile?: string;
  /** The knowledge folder every run uses (`--knowledge`, config.yaml or .quarry/knowledge/), and its hash for the report. */
  knowledge?: { dir: string; sha256: string };
  concurrency: number;
  timeoutMs: number;
  vote: number;
  maxTurns: number;
  /** Overrides the suite's rule. */
  compare?: CompareRule;
  outDir: string;
  resume: boolean;
  cwd: string;
  signal: AbortSignal;
  /** Called as each question finishes (and once at the start with the resumed ones). */
  onProgress?: (progress: EvalProgress) => void;
  version: string;
}

export interface EvalProgress {
  done: number;
  total: number;
  /** Finished questions whose expected result could be produced. */
  scored: number;
  correct: number;
  /** Questions finished in this process (not resumed), for the ETA. */
  finishedHere: number;
  elapsedMs: number;
  last?: QuestionResult;
}

export interface AttemptResult {
  status: string;
  sql: string | null;
  /** Where the SQL came from: the answer's fenced block, the last successful query call, or nowhere. */
  sql_source: 'answer' | 'last_query' | 'none';
  correct: boolean;
  error?: string;
  /** Why the result differs from the expected one. */
  mismatch?: string;
  turns: number;
  tool_calls: number;
  /** Database tool calls by operation (operations.ts). */
  operations?: OperationCounts;
  /** ask_user calls (answered from the question's clarifications, or told no one can be asked). */
  ask_user_calls?: number;
  usage: { input_tokens: number; output_tokens: number; cached_tokens: number };
  duration_ms: number;
  session_id: string;
  /** The executed result's identity (for voting); absent when it did not execute. */
  signature?: string;
  rows?: number;
  /** The first rows of the executed result (REPORT_SAMPLE_ROWS), for the report's list of wrong answers. */
  returned_sample?: Canonical[][];
}

export interface QuestionResult {
  id: string;
  database: string;
  difficulty?: string;
  tags: string[];
  question: string;
  expected: string;
  /** The expected result could not be produced (gold SQL failed): excluded from accuracy. */
  gold_error?: string;
  /** The first rows of the expected result (REPORT_SAMPLE_ROWS), for the report's list of wrong answers. */
  expected_sample?: Canonical[][];
  /** How many rows the expected result has. */
  expected_rows?: number;
  attempts: AttemptResult[];
  /** The first attempt's correctness: accuracy without voting. */
  correct: boolean;
  voted?: { sql: string | null; correct: boolean; votes: number; groups: number };
  duration_ms: number;
  /** Time spent running gold and predicted SQL. */
  scoring_ms: number;
}

export interface EvalRunConfig {
  quarry_version: string;
  suite: string;
  suite_format: string;
  suite_sha256: string;
  model: string;
  profile: string;
  prompt_sha256: string;
  /** The knowledge folder the runs used and the hash of its files (docs/guide/knowledge.md). */
  knowledge_dir?: string;
  knowledge_sha256?: string;
  compare: CompareRule | 'per question';
  vote: number;
  concurrency: number;
  timeout_s: number;
  max_turns: number;
  started_at: string;
}

export interface EvalOutcome {
  config: EvalRunConfig;
  results: QuestionResult[];
  /** Questions of the selection that did not finish (cancelled). */
  unfinished: number;
  cancelled: boolean;
}

export const RESULTS_FILE = 'results.jsonl';
export const RUN_FILE = 'run.json';

/** Reads results.jsonl, ignoring a torn last line (a crash while appending). */
export function readResults(outDir: string): QuestionResult[] {
  const path = join(outDir, RESULTS_FILE);
  if (!existsSync(path)) return [];
  const results: QuestionResult[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      results.push(JSON.parse(line) as QuestionResult);
    } catch {
      // a partial line left by a crash: that question runs again
    }
  }
  return results;
}

/** The last ```sql fenced block of an answer. */
export function extractFinalSql(text: string): string | null {
  const blocks = [...text.matchAll(/```[ \t]*sql[^\n]*\n([\s\S]*?)```/gi)].map((match) => match[1]!.trim()).filter(Boolean);
  return blocks.length ? blocks[blocks.length - 1]! : null;
}

interface DatabaseTarget {
  workspace: Workspace;
  config: DatabaseConfig;
}

/** Where each question's database comes from, opened once per database and shared by its runs. */
class Databases {
  private readonly targets = new Map<string, Promise<DatabaseTarget>>();
  private configured?: Workspace;

  constructor(private readonly options: EvalRunOptions) {}

  private usesConfigured(): boolean {
    return this.options.databases.dbFlags.length > 0 || this.options.databases.databasesFile !== undefined || this.options.suite.format === 'quarry';
  }

  /** Checks before any run that every question's database can be found. */
  async check(questions: readonly EvalQuestion[]): Promise<void> {
    if (this.usesConfigured()) {
      const workspace = await this.configuredWorkspace();
      const configs = this.configuredDatabases(workspace);
      if (configs.length === 0)
        throw new UsageError('no databases configured for this suite: pass --db (or --databases FILE), or --db-dir for BIRD/Spider suites');
      if (configs.length > 1) {
        const missing = [...new Set(questions.map((question) => question.database))].filter((name) => !configs.some((config) => config.alias === name));
        if (missing.length)
          throw new UsageError(
            `the suite names databases that are not configured: ${missing.join(', ')} (configured: ${configs.map((config) => config.alias).join(', ')})`,
          );
      }
      return;
    }
    if (!this.options.dbDir)
      throw new UsageError(
        `a ${this.options.suite.format === 'bird' ? 'BIRD' : 'Spider'} suite needs --db-dir DIR (databases at DIR/<db_id>/<db_id>.sqlite) or --db for one ` +
          `database`,
      );
    const dir = resolve(this.options.cwd, this.options.dbDir);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`--db-dir ${dir}: no such directory`);
    for (const name of new Set(questions.map((question) => question.database))) {
      const path = this.sqlitePath(name);
      if (!existsSync(path)) throw new UsageError(`database "${name}" not found: expected ${path} (BIRD's layout, DIR/<db_id>/<db_id>.sqlite)`);
    }
  }

  private sqlitePath(dbId: string): string {
    return join(resolve(this.options.cwd, this.options.dbDir!), dbId, `${dbId}.sqlite`);
  }

  private async configuredWorkspace(): Promise<Workspace> {
    this.configured ??= await openWorkspace({
      profile: this.options.profile,
      cwd: this.options.cwd,
      databases: this.options.databases,
      ...(this.options.configFile ? { configFile: this.options.configFile } : {}),
      ...(this.options.knowledge ? { knowledge: this.options.knowledge.dir } : {}),
      mcp: false,
    });
    return this.configured;
  }

  private configuredDatabases(workspace: Workspace): readonly DatabaseConfig[] {
    return workspace.databases;
  }

  target(question: EvalQuestion): Promise<DatabaseTarget> {
    const key = this.usesConfigured() ? `configured\0${question.database}` : `dir\0${question.database}`;
    let target = this.targets.get(key);
    if (!target) {
      target = this.open(question);
      this.targets.set(key, target);
    }
    return target;
  }

  private async open(question: EvalQuestion): Promise<DatabaseTarget> {
    if (this.usesConfigured()) {
      const workspace = await this.configuredWorkspace();
      const configs = this.configuredDatabases(workspace);
      const config = configs.length === 1 ? configs[0]! : configs.find((candidate) => candidate.alias === question.database)!;
      return { workspace, config };
    }
    const workspace = await openWorkspace({
      profile: this.options.profile,
      cwd: this.options.cwd,
      databases: { dbFlags: [`${question.database}=sqlite:${this.sqlitePath(question.database)}`] },
      ...(this.options.configFile ? { configFile: this.options.configFile } : {}),
      ...(this.options.knowledge ? { knowledge: this.options.knowledge.dir } : {}),
      mcp: false,
    });
    const config = workspace.databases.find((candidate) => candidate.alias === question.database)!;
    return { workspace, config };
  }

  async close(): Promise<void> {
    const opened = await Promise.allSettled([...this.targets.values()]);
    const workspaces = new Set<Workspace>(opened.flatMap((entry) => (entry.status === 'fulfilled' ? [entry.value.workspace] : [])));
    if (this.configured) workspaces.add(this.configured);
    await Promise.allSettled([...workspaces].map((workspace) => workspace.close()));
  }
}

/** Runs one statement read-only (the statement check, then the engine's read-only transaction) and returns all its rows. */
async function executeForScoring(config: DatabaseConfig, sql: string, signal: AbortSignal): Promise<unknown[][]> {
  const checked = checkReadOnlyStatement(sql, config.engine).sql;
  // In its turn on the connection, with the agent runs' own calls (connections.ts).
  const result = await queryInTurn(config, checked, MAX_SCORED_ROWS, true, signal);
  if (result.more) throw new Error(`the result has more than ${MAX_SCORED_ROWS.toLocaleString('en-US')} rows; not scored`);
  return result.rows as unknown[][];
}

function errorText(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).split('\n')[0]!;
}

function prompt(question: EvalQuestion, databaseNote: string): string {
  return [question.question, question.evidence ? `\nExternal knowledge (evidence): ${question.evidence}` : '', `\n${databaseNote}`].join('');
}

function expectedText(question: EvalQuestion): string {
  switch (question.expected.kind) {
    case 'sql':
      return question.expected.sql;
    case 'rows':
      return `${question.expected.rows.length} expected rows`;
    case 'csv':
      return `${question.expected.rows.length} expected CSV rows`;
  }
}

function ruleFor(question: EvalQuestion, options: EvalRunOptions): CompareRule {
  if (options.compare) return options.compare;
  if (options.suite.format !== 'quarry') return 'set';
  return question.orderMatters ? 'ordered' : 'multiset';
}

function promptHash(options: EvalRunOptions): string {
  const base = options.systemPromptFile ? readFileSync(resolve(options.cwd, options.systemPromptFile), 'utf8') : DEFAULT_SYSTEM_PROMPT;
  return createHash('sha256')
    .update(base + EVAL_INSTRUCTIONS)
    .digest('hex');
}

/** At most `limit` tasks at once; stops taking new ones when the signal aborts. */
async function pool<T>(items: readonly T[], limit: number, signal: AbortSignal, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (!signal.aborted && next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}

export async function runEval(options: EvalRunOptions, selection: readonly EvalQuestion[]): Promise<EvalOutcome> {
  mkdirSync(options.outDir, { recursive: true });
  const config: EvalRunConfig = {
    quarry_version: options.version,
    suite: options.suite.path,
    suite_format: options.suite.format,
    suite_sha256: options.suite.sha256,
    model: options.choice.label,
    profile: options.profile,
    prompt_sha256: promptHash(options),
    ...(options.knowledge ? { knowledge_dir: options.knowledge.dir, knowledge_sha256: options.knowledge.sha256 } : {}),
    compare: options.compare ?? (options.suite.format === 'quarry' ? 'per question' : 'set'),
    vote: options.vote,
    concurrency: options.concurrency,
    timeout_s: options.timeoutMs / 1000,
    max_turns: options.maxTurns,
    started_at: new Date().toISOString(),
  };
  const runFile = join(options.outDir, RUN_FILE);
  if (options.resume) {
    if (existsSync(runFile)) {
      const previous = JSON.parse(readFileSync(runFile, 'utf8')) as EvalRunConfig;
      if (previous.suite_sha256 !== config.suite_sha256)
        throw new UsageError(`--resume: ${options.outDir} holds results of a different suite (or the suite file changed); use a new --out`);
      config.started_at = previous.started_at;
    }
  } else if (existsSync(join(options.outDir, RESULTS_FILE)) && readResults(options.outDir).length > 0) {
    throw new UsageError(`${options.outDir} already holds results: pass --resume to continue that run, or choose a new --out`);
  }
  writeFileSync(runFile, `${JSON.stringify(config, null, 2)}\n`);

  const finished = new Map(readResults(options.outDir).map((result) => [result.id, result]));
  const todo = selection.filter((question) => !finished.has(question.id));
  const databases = new Databases(options);
  const results: QuestionResult[] = selection.flatMap((question) => (finished.has(question.id) ? [finished.get(question.id)!] : []));
  const started = Date.now();
  let finishedHere = 0;
  const progress = (last?: QuestionResult) =>
    options.onProgress?.({
      done: results.length,
      total: selection.length,
      scored: results.filter((result) => !result.gold_error).length,
      correct: results.filter((result) => !result.gold_error && (options.vote > 1 ? result.voted?.correct : result.correct)).length,
      finishedHere,
      elapsedMs: Date.now() - started,
      ...(last ? { last } : {}),
    });
  try {
    await databases.check(todo);
    progress();
    const sessionEnv = { ...process.env, QUARRY_HOME: options.outDir };
    await pool(todo, options.concurrency, options.signal, async (question) => {
      const result = await runQuestion(question, options, databases, sessionEnv);
      if (!result) return; // cancelled: not recorded, so --resume runs it again
      appendFileSync(join(options.outDir, RESULTS_FILE), `${JSON.stringify(result)}\n`);
      results.push(result);
      finishedHere++;
      progress(result);
    });
  } finally {
    await databases.close();
  }
  const order = new Map(selection.map((question, index) => [question.id, index]));
  results.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
  return { config, results, unfinished: selection.length - results.length, cancelled: options.signal.aborted };
}

async function runQuestion(
  question: EvalQuestion,
  options: EvalRunOptions,
  databases: Databases,
  sessionEnv: NodeJS.ProcessEnv,
): Promise<QuestionResult | undefined> {
  const started = Date.now();
  const target = await databases.target(question);
  const rule = ruleFor(question, options);
  let scoringMs = 0;
  let expectedRows: unknown[][] | undefined;
  let goldError: string | undefined;
  const scoringStart = Date.now();
  try {
    expectedRows = question.expected.kind === 'sql' ? await executeForScoring(target.config, question.expected.sql, options.signal) : question.expected.rows;
  } catch (error) {
    if (options.signal.aborted) return undefined;
    goldError = errorText(error);
  }
  scoringMs += Date.now() - scoringStart;

  // Attempts of one question run one after another, each in a fresh session with a fresh provider.
  const attempts: AttemptResult[] = [];
  for (let attempt = 0; attempt < options.vote; attempt++) {
    const result = await runAttempt(question, options, target, sessionEnv);
    if (!result) return undefined;
    const scoreStart = Date.now();
    if (result.sql && expectedRows) {
      try {
        const rows = await executeForScoring(target.config, result.sql, options.signal);
        const comparison = compareResults(rows, expectedRows, rule, question.tolerance ?? 0);
        result.correct = comparison.equal;
        if (comparison.reason) result.mismatch = comparison.reason;
        result.signature = resultSignature(rows);
        result.rows = rows.length;
        result.returned_sample = sampleRows(rows);
      } catch (error) {
        if (options.signal.aborted) return undefined;
        result.error = `predicted SQL failed: ${errorText(error)}`;
      }
    } else if (!result.sql && !result.error) result.error = 'no SQL in the answer and no successful query call';
    scoringMs += Date.now() - scoreStart;
    attempts.push(result);
  }
  return {
    id: question.id,
    database: question.database,
    ...(question.difficulty ? { difficulty: question.difficulty } : {}),
    tags: question.tags,
    question: question.question,
    expected: expectedText(question),
    ...(goldError ? { gold_error: goldError } : {}),
    ...(expectedRows ? { expected_sample: sampleRows(expectedRows), expected_rows: expectedRows.length } : {}),
    attempts,
    correct: attempts[0]!.correct,
    ...(options.vote > 1 ? { voted: vote(attempts) } : {}),
    duration_ms: Date.now() - started,
    scoring_ms: scoringMs,
  };
}

/** Execution-guided self-consistency: the largest group of equal results wins (ties: the earliest attempt). */
export function vote(attempts: readonly AttemptResult[]): { sql: string | null; correct: boolean; votes: number; groups: number } {
  const groups = new Map<string, AttemptResult[]>();
  for (const attempt of attempts) {
    if (attempt.signature === undefined) continue;
    const group = groups.get(attempt.signature) ?? [];
    group.push(attempt);
    groups.set(attempt.signature, group);
  }
  let best: AttemptResult[] | undefined;
  for (const group of groups.values()) if (!best || group.length > best.length) best = group;
  if (!best) return { sql: null, correct: false, votes: 0, groups: 0 };
  return { sql: best[0]!.sql, correct: best[0]!.correct, votes: best.length, groups: groups.size };
}

/** ask_user answered from the question's clarifications, one per question in order; without them no one can be asked. */
function clarificationAnswers(clarifications: readonly string[] | undefined): AskPerson | undefined {
  if (!clarifications?.length) return undefined;
  let next = 0;
  return async () => clarifications[next++] ?? null;
}

async function runAttempt(
  question: EvalQuestion,
  options: EvalRunOptions,
  target: DatabaseTarget,
  sessionEnv: NodeJS.ProcessEnv,
): Promise<AttemptResult | undefined> {
  const { workspace, config } = target;
  const started = Date.now();
  const provider = await createProvider(options.choice, options.cwd);
  const databaseTools = workspace.registry.names().filter((name) => (ENGINES as readonly string[]).includes(name));
  const built = buildSystemPrompt({
    ...(options.systemPromptFile ? { file: options.systemPromptFile } : {}),
    vars: {},
    automatic: automaticVariables({
      profile: workspace.profile,
      workingDir: workspace.workingDir,
      databases: databaseTools.map((tool) => (tool === 'duckdb' ? `reachable with the duckdb tool; ${DUCKDB_PROMPT_NOTE}` : `reachable with the ${tool} tool`)),
    }),
    cwd: options.cwd,
  });
  const session = Session.create({ profile: workspace.profile.name, model: provider.label, workingDir: workspace.workingDir }, sessionEnv);
  let lastQuery: string | null = null;
  const operations: OperationCounts = {};
  let askUserCalls = 0;
  const onEvent = (event: RunEvent) => {
    if (event.type === 'tool_end' && event.name === 'ask_user') askUserCalls++;
    if (event.type !== 'tool_end' || !databaseTools.includes(event.name)) return;
    const args = event.arguments;
    countOperation(operations, args);
    if (!event.ok) return;
    if (args && args.operation === 'query' && typeof args.sql === 'string') lastQuery = args.sql;
  };
  const questions = new UserQuestionChannel(clarificationAnswers(question.clarifications));
  const agent = new Agent({
    provider,
    system: built.system + (workspace.knowledge ? knowledgePromptSection(workspace.knowledge) : '') + EVAL_INSTRUCTIONS,
    workspace,
    session,
    approver: new Approver({ autoApprove: false }),
    maxTurns: options.maxTurns,
    contextWindow: knownContextWindow(options.choice.model),
    retryPolicy: retryPolicyFromEnv(),
    onEvent,
    extendToolContext: (context, conversation) => questions.extend(context, conversation),
    // A suite's questions and evidence were written by someone else (a benchmark, a colleague): the
    // outward-tool rule treats them as untrusted from the first call (docs/security.md).
    untrustedSources: [`the eval question ${question.id}`],
  });
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const note =
    `Database: "${config.alias}" (${config.engine}; use the ${config.engine} ` +
    `tool${databaseTools.length > 1 || workspace.databases.length > 1 ? ` with database "${config.alias}"` : ''}).`;
  const result = await agent.run(prompt(question, note), AbortSignal.any([options.signal, timeout]));
  if (options.signal.aborted) return undefined;
  const fromAnswer = result.status === 'completed' ? extractFinalSql(result.text) : null;
  const sql = fromAnswer ?? lastQuery;
  const timedOut = timeout.aborted && result.status === 'cancelled';
  return {
    status: timedOut ? 'timeout' : result.status,
    sql,
    sql_source: fromAnswer ? 'answer' : lastQuery ? 'last_query' : 'none',
    correct: false,
    ...(timedOut ? { error: `timed out after ${options.timeoutMs / 1000} s` } : result.status === 'failed' ? { error: result.error ?? 'the run failed' } : {}),
    turns: result.turns,
    tool_calls: result.toolCalls,
    operations,
    ...(askUserCalls ? { ask_user_calls: askUserCalls } : {}),
    usage: usageJson(result.usage),
    duration_ms: Date.now() - started,
    session_id: session.id,
  };
}
