import { redactSecrets, sessionSecretValues } from './redact.js';
import { escapeHtml, inlineImage, pageHead, renderMarkdown, REPORT_PREVIEW_LINES, type SessionData } from './html.js';
import { answerWithChanges, type RefreshedStep, type RefreshResult } from './refresh.js';

/**
 * `quarry report SESSION --refresh` (docs/guide/sessions.md "Refreshing a session"): the refreshed session as one
 * self-contained page, with the same rules as the report (inline CSS and images, no scripts, no
 * requests, all text escaped): each answer with the figures that changed marked old → new, and
 * each re-run step with the original result beside the new one.
 */

const REFRESH_STYLE = `
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 0.5rem; } .pair > div { min-width: 0; }
.pair h5 { margin: 0.2rem 0; font-size: 0.8rem; color: var(--muted); }
mark.changed { background: #fff1b8; padding: 0 0.15rem; } mark.changed del { color: var(--bad); } mark.changed ins { text-decoration: none; font-weight: bold; }
ul.changes { margin: 0.3rem 0; } .badge.changed { background: #fff1b8; color: #6b4e00; } .badge.skipped { background: #eee; color: var(--muted); }
@media (max-width: 40rem) { .pair { grid-template-columns: 1fr; } }
`;

/** A letters-only token that Markdown leaves alone, replaced by the marked figure after rendering. */
const token = (n: number) => `QRFIGURE${n}X`;

function cut(output: string): string {
  const lines = output.split('\n');
  if (lines.length <= REPORT_PREVIEW_LINES) return escapeHtml(output);
  return `${escapeHtml(lines.slice(0, REPORT_PREVIEW_LINES).join('\n'))}\n<span class="cut">… ${lines.length - REPORT_PREVIEW_LINES} more lines</span>`;
}

function rowsText(side: { rows?: number; more?: boolean } | undefined): string {
  return side?.rows === undefined ? '?' : `${side.rows.toLocaleString('en-US')}${side.more ? '+' : ''}`;
}

function changeList(step: RefreshedStep): string {
  const items: string[] = [];
  if (step.after && (step.before.rows !== undefined || step.after.rows !== undefined)) {
    const before = rowsText(step.before);
    const after = rowsText(step.after);
    items.push(before === after ? `rows: ${escapeHtml(before)}` : `rows: <del>${escapeHtml(before)}</del> → <ins>${escapeHtml(after)}</ins>`);
  }
  if (step.columns) items.push(`columns: <del>${escapeHtml(step.columns.old.join(', '))}</del> → <ins>${escapeHtml(step.columns.new.join(', '))}</ins>`);
  for (const value of step.values) {
    const change = `${value.delta >= 0 ? '+' : ''}${Number(value.delta.toPrecision(12))}${value.percent === null ? '' : `, ${value.percent >= 0 ? '+' : ''}${value.percent.toFixed(1)}%`}`;
    items.push(
      `${value.row ? `${escapeHtml(value.row)}: ` : ''}<code>${escapeHtml(value.column)}</code> <del>${escapeHtml(value.old)}</del> → <ins>${escapeHtml(value.new)}</ins> (${escapeHtml(change)})`,
    );
  }
  for (const row of step.appeared) items.push(`appeared: <ins>${escapeHtml(row.join(' | '))}</ins>`);
  for (const row of step.disappeared) items.push(`disappeared: <del>${escapeHtml(row.join(' | '))}</del>`);
  if (step.after?.path) items.push(`written anew: <code>${escapeHtml(step.after.path)}</code>`);
  if (step.status === 'changed' && !step.beyondTolerance) items.push('within the tolerance');
  return items.length ? `<ul class="changes">${items.map((item) => `<li>${item}</li>`).join('')}</ul>` : '';
}

function renderRefreshedStep(step: RefreshedStep): string {
  const badge = `<span class="badge ${step.status === 'unchanged' ? '' : step.status}">${step.status}</span>`;
  const name = `${step.tool}${step.operation === 'chart' ? '' : ` ${step.operation}`}${step.database ? ` (${step.database})` : ''}`;
  const parts = [`<div class="step ${step.status === 'failed' ? 'failed' : 'ok'}"><div class="step-head">${badge} <code>${escapeHtml(name)}</code></div>`];
  if (step.sql !== undefined) parts.push(`<pre class="sql">${escapeHtml(step.sql)}</pre>`);
  if (step.status === 'failed' || step.status === 'skipped') parts.push(`<pre class="output">${escapeHtml(step.message ?? '')}</pre>`);
  parts.push(changeList(step));
  const image = (path: string | undefined) => (step.operation === 'chart' && path ? inlineImage(path) : '');
  const newPng = step.after?.files?.find((file) => file.endsWith('.png')) ?? step.after?.path;
  parts.push(
    `<div class="pair"><div><h5>Original</h5>${image(step.before.path)}<pre class="output">${cut(step.before.output)}</pre></div>` +
      `<div><h5>Now</h5>${step.after ? `${image(newPng)}<pre class="output">${cut(step.after.output)}</pre>` : '<p class="note">no new result</p>'}</div></div>`,
  );
  parts.push('</div>');
  return parts.join('\n');
}

export function renderRefreshReport(
  session: SessionData,
  result: RefreshResult,
  secrets: readonly string[] = sessionSecretValues(session.meta.databases),
): string {
  return redactSecrets(refreshPage(session, result), secrets);
}

function refreshPage(session: SessionData, result: RefreshResult): string {
  const meta = session.meta;
  const title = `quarry session ${meta.id}, refreshed`;
  const counts = (['changed', 'unchanged', 'failed', 'skipped'] as const)
    .map((status) => [status, result.steps.filter((step) => step.status === status).length] as const)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status}`);
  const out: string[] = [];
  for (const answer of result.answers) {
    const steps = result.steps.filter((step) => step.question === answer.question);
    out.push(
      `<section class="run"><h2>Question ${result.answers.length > 1 ? answer.question : ''}</h2><blockquote class="question">${escapeHtml(answer.prompt)}</blockquote>`,
    );
    const marks = new Map<string, string>();
    const text = answerWithChanges(answer, (figure) => {
      const key = token(marks.size);
      marks.set(key, `<mark class="changed" title="changed by the refresh"><del>${escapeHtml(figure.old)}</del> → <ins>${escapeHtml(figure.new)}</ins></mark>`);
      return key;
    });
    let html = text ? renderMarkdown(text) : '<p class="muted">(no answer)</p>';
    for (const [key, mark] of marks) html = html.split(key).join(mark);
    const note = answer.figures.length
      ? `${answer.figures.length} figure${answer.figures.length === 1 ? '' : 's'} in the original answer changed (marked old → new)`
      : steps.some((step) => step.status === 'changed')
        ? 'the results changed, but no figure the answer states was matched to a changed value: read the steps below'
        : 'no figure the answer states changed';
    const failed = steps.filter((step) => step.status === 'failed').length;
    const unchecked = failed
      ? `; ${failed} step${failed === 1 ? '' : 's'} now fail${failed === 1 ? 's' : ''}, so the figures from ${failed === 1 ? 'it' : 'them'} could not be checked`
      : '';
    out.push(`<div class="answer"><div class="answer-label">Original answer</div>${html}<p class="note">${escapeHtml(note + unchecked)}</p></div>`);
    if (steps.length) out.push(`<details class="work" open><summary>Re-run steps</summary>${steps.map(renderRefreshedStep).join('\n')}</details>`);
    out.push('</section>');
  }
  return (
    `${pageHead(title, REFRESH_STYLE)}
<main>
<header class="top">
<h1>${escapeHtml(meta.first_prompt ? meta.first_prompt.split('\n')[0]!.slice(0, 120) : title)} (refreshed)</h1>
<p class="meta">Session ${escapeHtml(meta.id)} · profile ${escapeHtml(meta.profile)} · started ${escapeHtml(meta.created_at.replace('T', ' ').slice(0, 19))} UTC · ` +
    `refreshed ${escapeHtml(result.startedAt.replace('T', ' ').slice(0, 19))} UTC</p>
<p class="refresh-summary">Refreshed without the model: <strong>0 tokens</strong>. ${result.steps.length} step${result.steps.length === 1 ? '' : 's'} re-run ` +
    `(${escapeHtml(counts.join(', ') || 'none')}) in ${(result.durationMs / 1000).toFixed(1)} s; the original runs took ` +
    `${(result.originalDurationMs / 1000).toFixed(1)} s and ${meta.usage.input_tokens.toLocaleString('en-US')} + ` +
    `${meta.usage.output_tokens.toLocaleString('en-US')} tokens.${result.notRerun ? ` ${result.notRerun} other steps (not query, export_query or chart) were not re-run.` : ''}` +
    `${result.tolerancePercent ? ` Tolerance: ${result.tolerancePercent}%.` : ''}</p>
</header>
${out.join('\n')}
</main>
</body>
</html>
`
  );
}
