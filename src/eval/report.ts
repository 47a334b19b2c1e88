import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import type { Canonical } from './compare.js';
import { readResults, RUN_FILE, type EvalRunConfig, type QuestionResult } from './runner.js';
import { operationsMarkdown, summariseOperations, type OperationsSummary } from './operations.js';

/**
 * `quarry eval`'s report: a table by difficulty (or tag) with count, accuracy (and accuracy with
 * voting), mean turns, tokens and time, plus the run's configuration so two reports can be
 * compared; and `quarry eval compare A B`, the per-question differences of two runs.
 */

export interface GroupRow {
  group: string;
  count: number;
  /** Questions whose gold SQL failed: not scored. */
  unscored: number;
  correct: number;
  accuracy: number;
  voted_correct?: number;
  voted_accuracy?: number;
  mean_turns: number;
  mean_tokens: number;
  mean_seconds: number;
  /** Attempts that called ask_user, and its calls in all. */
  ask_user_attempts: number;
  ask_user_calls: number;
}

export interface EvalReport {
  config: EvalRunConfig;
  compare_rule: string;
  questions: number;
  unfinished: number;
  cancelled: boolean;
  groups: GroupRow[];
  total: GroupRow;
  /** Mean time per question spent outside the agent runs (scoring, sessions, bookkeeping). */
  runner_overhead_ms: number;
  sql_sources: Record<string, number>;
  failures: Array<{ id: string; error: string }>;
  /** Database operations called, in all and per question. */
  operations: OperationsSummary;
  /** Every scored question whose first attempt was wrong, with why and a few rows of each side. */
  wrong: WrongAnswer[];
}

export interface WrongAnswer {
  id: string;
  question: string;
  reason: string;
  sql: string | null;
  expected_rows?: number;
  expected_sample?: Canonical[][];
  returned_rows?: number;
  returned_sample?: Canonical[][];
}

function wrongAnswers(results: readonly QuestionResult[]): WrongAnswer[] {
  return results
    .filter((result) => !result.gold_error && !result.correct && result.attempts[0])
    .map((result) => {
      const attempt = result.attempts[0]!;
      return {
        id: result.id,
        question: result.question,
        reason: attempt.error ?? attempt.mismatch ?? `the run ended ${attempt.status} without a matching result`,
        sql: attempt.sql,
        ...(result.expected_rows !== undefined ? { expected_rows: result.expected_rows, expected_sample: result.expected_sample ?? [] } : {}),
        ...(attempt.rows !== undefined ? { returned_rows: attempt.rows, returned_sample: attempt.returned_sample ?? [] } : {}),
      };
    });
}

/** A few rows as a Markdown table without header names (eval compares values only). */
function sampleTable(sample: readonly Canonical[][], total: number): string[] {
  if (total === 0) return ['  (no rows)'];
  const cell = (value: Canonical) => (value === null ? 'NULL' : String(value)).replace(/\|/g, '\\|').replace(/\n/g, '\\n');
  const width = Math.max(...sample.map((row) => row.length), 1);
  return [
    `  | ${Array.from({ length: width }, (_, index) => `c${index + 1}`).join(' | ')} |`,
    `  |${Array.from({ length: width }, () => '---').join('|')}|`,
    ...sample.map((row) => `  | ${row.map(cell).join(' | ')} |`),
    ...(total > sample.length ? [`  (${total - sample.length} more row${total - sample.length === 1 ? '' : 's'})`] : []),
  ];
}

const rowCount = (count: number) => `${count} row${count === 1 ? '' : 's'}`;

function wrongMarkdown(wrong: readonly WrongAnswer[]): string[] {
  if (!wrong.length) return [];
  return [
    '',
    `## Wrong answers (${wrong.length})`,
    '',
    ...wrong.flatMap((answer) => [
      `### ${answer.id}: ${answer.question.replace(/\s+/g, ' ')}`,
      '',
      `- reason: ${answer.reason}`,
      `- SQL: ${answer.sql ? `\`${answer.sql.replace(/\s+/g, ' ')}\`` : '(none)'}`,
      ...(answer.expected_rows !== undefined
        ? [`- expected (${rowCount(answer.expected_rows)}):`, '', ...sampleTable(answer.expected_sample ?? [], answer.expected_rows), '']
        : []),
      ...(answer.returned_rows !== undefined
        ? [`- returned (${rowCount(answer.returned_rows)}):`, '', ...sampleTable(answer.returned_sample ?? [], answer.returned_rows), '']
        : []),
      '',
    ]),
  ];
}

function mean(values: readonly number[]): number {
  return values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : 0;
}

function groupRow(group: string, results: readonly QuestionResult[], vote: number): GroupRow {
  const scored = results.filter((result) => !result.gold_error);
  const correct = scored.filter((result) => result.correct).length;
  const attempts = results.flatMap((result) => result.attempts);
  const row: GroupRow = {
    group,
    count: results.length,
    unscored: results.length - scored.length,
    correct,
    accuracy: scored.length ? correct / scored.length : 0,
    mean_turns: mean(attempts.map((attempt) => attempt.turns)),
    mean_tokens: mean(attempts.map((attempt) => attempt.usage.input_tokens + attempt.usage.output_tokens)),
    mean_seconds: mean(results.map((result) => result.duration_ms / 1000)),
    ask_user_attempts: attempts.filter((attempt) => attempt.ask_user_calls).length,
    ask_user_calls: attempts.reduce((sum, attempt) => sum + (attempt.ask_user_calls ?? 0), 0),
  };
  if (vote > 1) {
    const votedCorrect = scored.filter((result) => result.voted?.correct).length;
    row.voted_correct = votedCorrect;
    row.voted_accuracy = scored.length ? votedCorrect / scored.length : 0;
  }
  return row;
}

export function buildReport(config: EvalRunConfig, results: readonly QuestionResult[], unfinished: number, cancelled: boolean): EvalReport {
  const byDifficulty = results.some((result) => result.difficulty);
  const byTag = !byDifficulty && results.some((result) => result.tags.length > 0);
  const groups = new Map<string, QuestionResult[]>();
  for (const result of results) {
    const keys = byDifficulty ? [result.difficulty ?? '(none)'] : byTag ? (result.tags.length ? result.tags : ['(untagged)']) : [];
    for (const key of keys) groups.set(key, [...(groups.get(key) ?? []), result]);
  }
  const order = ['simple', 'easy', 'moderate', 'medium', 'hard', 'challenging', 'extra'];
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  const sortedGroups = [...groups.entries()].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
  const sources: Record<string, number> = {};
  for (const attempt of results.flatMap((result) => result.attempts)) sources[attempt.sql_source] = (sources[attempt.sql_source] ?? 0) + 1;
  return {
    config,
    compare_rule: config.compare,
    questions: results.length,
    unfinished,
    cancelled,
    groups: sortedGroups.map(([name, members]) => groupRow(name, members, config.vote)),
    total: groupRow('total', results, config.vote),
    runner_overhead_ms: mean(results.map((result) => result.duration_ms - result.attempts.reduce((sum, attempt) => sum + attempt.duration_ms, 0))),
    sql_sources: sources,
    failures: results.flatMap((result) => [
      ...(result.gold_error ? [{ id: result.id, error: `gold: ${result.gold_error}` }] : []),
      ...result.attempts.filter((attempt) => attempt.error).map((attempt) => ({ id: result.id, error: attempt.error! })),
    ]),
    wrong: wrongAnswers(results),
    operations: summariseOperations(results),
  };
}

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;

export function reportMarkdown(report: EvalReport): string {
  const voting = report.config.vote > 1;
  const header = ['group', 'questions', 'accuracy', ...(voting ? [`voted (k=${report.config.vote})`] : []), 'mean turns', 'mean tokens', 'mean time'];
  const line = (row: GroupRow) => [
    row.group,
    String(row.count) + (row.unscored ? ` (${row.unscored} unscored)` : ''),
    `${percent(row.accuracy)} (${row.correct})`,
    ...(voting ? [`${percent(row.voted_accuracy ?? 0)} (${row.voted_correct ?? 0})`] : []),
    row.mean_turns.toFixed(1),
    Math.round(row.mean_tokens).toLocaleString('en-US'),
    `${row.mean_seconds.toFixed(1)} s`,
  ];
  const rows = [...report.groups, report.total].map(line);
  const table = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((cells) => `| ${cells.join(' | ')} |`)];
  const c = report.config;
  return [
    `# quarry eval: ${c.suite}`,
    '',
    report.cancelled ? `**Stopped early**: ${report.unfinished} question(s) did not finish (resume with --resume).\n` : '',
    ...table,
    '',
    `Scoring rule: ${report.compare_rule === 'per question' ? 'multiset, or ordered where order_matters (quarry YAML)' : report.compare_rule}. ` +
      `SQL taken from: ${
        Object.entries(report.sql_sources)
          .map(([source, count]) => `${source} ${count}`)
          .join(', ') || 'none'
      }.`,
    `Runner overhead: ${report.runner_overhead_ms.toFixed(0)} ms per question (scoring and bookkeeping outside the agent runs).`,
    `ask_user: called ${report.total.ask_user_calls} time${report.total.ask_user_calls === 1 ? '' : 's'}, in ${report.total.ask_user_attempts} ` +
      `attempt${report.total.ask_user_attempts === 1 ? '' : 's'} (answered from the questions' clarifications, else told no one can be asked).`,
    '',
    '| setting | value |',
    '|---|---|',
    ...Object.entries(c).map(([key, value]) => `| ${key} | ${String(value)} |`),
    ...wrongMarkdown(report.wrong ?? []),
    ...(report.operations ? ['', ...operationsMarkdown(report.operations)] : []),
    ...(report.failures.length ? ['', '## Errors', '', ...report.failures.map((failure) => `- ${failure.id}: ${failure.error}`)] : []),
    '',
  ]
    .filter((part, index, all) => !(part === '' && all[index - 1] === ''))
    .join('\n');
}

export function writeReport(outDir: string, report: EvalReport): { markdown: string; json: string } {
  const markdown = join(outDir, 'report.md');
  const json = join(outDir, 'report.json');
  writeFileSync(markdown, reportMarkdown(report));
  writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
  return { markdown, json };
}

function loadRun(path: string): { config: EvalRunConfig | undefined; results: QuestionResult[] } {
  const dir = existsSync(path) && statSync(path).isDirectory() ? path : join(path, '..');
  if (!existsSync(join(dir, 'results.jsonl'))) throw new UsageError(`${path}: not an eval output directory (no results.jsonl)`);
  const runFile = join(dir, RUN_FILE);
  const config = existsSync(runFile) ? (JSON.parse(readFileSync(runFile, 'utf8')) as EvalRunConfig) : undefined;
  return { config, results: readResults(dir) };
}

export interface CompareSummary {
  both_correct: number;
  both_wrong: number;
  only_a: string[];
  only_b: string[];
  only_in_a: string[];
  only_in_b: string[];
  config_differences: Array<{ setting: string; a: unknown; b: unknown }>;
}

export function compareRuns(a: string, b: string): CompareSummary {
  const left = loadRun(a);
  const right = loadRun(b);
  const rightById = new Map(right.results.map((result) => [result.id, result]));
  const leftIds = new Set(left.results.map((result) => result.id));
  const summary: CompareSummary = { both_correct: 0, both_wrong: 0, only_a: [], only_b: [], only_in_a: [], only_in_b: [], config_differences: [] };
  for (const result of left.results) {
    const other = rightById.get(result.id);
    if (!other) {
      summary.only_in_a.push(result.id);
      continue;
    }
    if (result.correct && other.correct) summary.both_correct++;
    else if (!result.correct && !other.correct) summary.both_wrong++;
    else if (result.correct) summary.only_a.push(result.id);
    else summary.only_b.push(result.id);
  }
  summary.only_in_b = right.results.filter((result) => !leftIds.has(result.id)).map((result) => result.id);
  for (const key of ['model', 'profile', 'prompt_sha256', 'suite_sha256', 'quarry_version', 'compare', 'vote'] as const) {
    if (left.config?.[key] !== right.config?.[key]) summary.config_differences.push({ setting: key, a: left.config?.[key], b: right.config?.[key] });
  }
  return summary;
}

export function compareText(a: string, b: string, summary: CompareSummary): string {
  const list = (ids: string[]) => (ids.length ? ids.join(', ') : '(none)');
  return [
    `A: ${a}`,
    `B: ${b}`,
    ...summary.config_differences.map((difference) => `  differs: ${difference.setting}: A ${String(difference.a)}, B ${String(difference.b)}`),
    `both correct: ${summary.both_correct}`,
    `both wrong: ${summary.both_wrong}`,
    `correct only in A (${summary.only_a.length}): ${list(summary.only_a)}`,
    `correct only in B (${summary.only_b.length}): ${list(summary.only_b)}`,
    ...(summary.only_in_a.length ? [`run only in A: ${list(summary.only_in_a)}`] : []),
    ...(summary.only_in_b.length ? [`run only in B: ${list(summary.only_in_b)}`] : []),
    '',
  ].join('\n');
}
