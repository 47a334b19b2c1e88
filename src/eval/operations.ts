import type { QuestionResult } from './runner.js';

/**
 * Which database operations (query, find_values, search, describe, ...) the model called per
 * question, so a team can measure what a prompt or a new operation changes with its own model
 * (docs/guide/eval.md): counted per attempt, summed per question, shown in report.json and
 * report.md.
 */

export type OperationCounts = Record<string, number>;

/** Counts one database tool call by its operation (every call, whether it succeeded or not). */
export function countOperation(counts: OperationCounts, args: Record<string, unknown> | null | undefined): void {
  const operation = typeof args?.operation === 'string' ? args.operation : '(none)';
  counts[operation] = (counts[operation] ?? 0) + 1;
}

/** A question's calls: the sum over its attempts (results written before this existed have none). */
export function questionOperations(result: QuestionResult): OperationCounts {
  const total: OperationCounts = {};
  for (const attempt of result.attempts)
    for (const [operation, calls] of Object.entries(attempt.operations ?? {})) total[operation] = (total[operation] ?? 0) + calls;
  return total;
}

export interface OperationsSummary {
  /** Per operation: calls in all, and the questions that called it at least once. */
  totals: Record<string, { calls: number; questions: number }>;
  per_question: Array<{ id: string; operations: OperationCounts }>;
}

export function summariseOperations(results: readonly QuestionResult[]): OperationsSummary {
  const totals: OperationsSummary['totals'] = {};
  const perQuestion = results.map((result) => {
    const operations = questionOperations(result);
    for (const [operation, calls] of Object.entries(operations)) {
      const entry = totals[operation] ?? { calls: 0, questions: 0 };
      entry.calls += calls;
      entry.questions++;
      totals[operation] = entry;
    }
    return { id: result.id, operations };
  });
  return { totals, per_question: perQuestion };
}

/** The report.md section: the totals, then one row per question with a column per operation used. */
export function operationsMarkdown(summary: OperationsSummary): string[] {
  const names = Object.keys(summary.totals).sort((a, b) => summary.totals[b]!.calls - summary.totals[a]!.calls || a.localeCompare(b));
  if (names.length === 0) return [];
  const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [
    '## Database operations',
    '',
    `Calls in all: ${names.map((name) => `${name} ${summary.totals[name]!.calls} (in ${summary.totals[name]!.questions} questions)`).join(', ')}.`,
    '',
    row(['question', ...names]),
    `|${['question', ...names].map(() => '---').join('|')}|`,
    ...summary.per_question.map((question) => row([question.id, ...names.map((name) => String(question.operations[name] ?? 0))])),
  ];
}
