/**
 * A tool step's result as the report shows it (docs/guide/charts-and-reports.md "quarry report"): a database result table
 * as a real HTML table (header row, numbers right-aligned), bash output as preformatted text with
 * its exit code, anything else as text. What the model saw is kept whole in the trace; the page
 * shows the first REPORT_PREVIEW_LINES lines or rows and says how many more there were.
 */

export const REPORT_PREVIEW_LINES = 40;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!);
}

/** Text as a <pre>, cut to REPORT_PREVIEW_LINES lines with a note. */
export function preformatted(text: string, className = 'output'): string {
  const lines = text.split('\n');
  const shown =
    lines.length <= REPORT_PREVIEW_LINES
      ? escapeHtml(text)
      : `${escapeHtml(lines.slice(0, REPORT_PREVIEW_LINES).join('\n'))}\n<span class="cut">… ${lines.length - REPORT_PREVIEW_LINES} more lines</span>`;
  return `<pre class="${className}">${shown}</pre>`;
}

/** A number as the database tools print it: integers, decimals, exponents, with an optional sign. */
const NUMBER_CELL = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/**
 * The cells of a box-drawn table (database/format.ts): the header and the rows, or null when the
 * text is not exactly such a table (a cell holding "│" makes the counts differ: then it stays text).
 */
export function parseBoxTable(text: string): { header: string[]; rows: string[][]; before: string; after: string } | null {
  const lines = text.split('\n');
  const top = lines.findIndex((line) => line.startsWith('┌') && line.endsWith('┐'));
  if (top < 0) return null;
  const bottom = lines.findIndex((line, index) => index > top && line.startsWith('└') && line.endsWith('┘'));
  if (bottom < 0) return null;
  const columns = lines[top]!.split('┬').length;
  const cells = (line: string) =>
    line
      .slice(1, -1)
      .split('│')
      .map((cell) => cell.trim());
  const body = lines.slice(top + 1, bottom).filter((line) => !line.startsWith('├'));
  if (body.length === 0 || !body.every((line) => line.startsWith('│') && line.endsWith('│'))) return null;
  const parsed = body.map(cells);
  if (!parsed.every((row) => row.length === columns)) return null;
  return { header: parsed[0]!, rows: parsed.slice(1), before: lines.slice(0, top).join('\n'), after: lines.slice(bottom + 1).join('\n') };
}

/** A parsed result table as HTML: numbers (and NULL in a numeric column) right-aligned. */
function htmlTable(header: readonly string[], rows: readonly string[][]): string {
  const numeric = header.map((_, j) => rows.length > 0 && rows.every((row) => row[j] === 'NULL' || row[j] === '' || NUMBER_CELL.test(row[j]!)));
  const shown = rows.slice(0, REPORT_PREVIEW_LINES);
  const cell = (text: string, j: number) => `<td${numeric[j] ? ' class="num"' : ''}>${escapeHtml(text)}</td>`;
  return (
    `<div class="table-wrap"><table class="result"><thead><tr>${header.map((name) => `<th>${escapeHtml(name)}</th>`).join('')}</tr></thead><tbody>` +
    `${shown.map((row) => `<tr>${row.map(cell).join('')}</tr>`).join('')}</tbody></table></div>` +
    (rows.length > shown.length ? `<p class="cut">… ${rows.length - shown.length} more rows in the result</p>` : '')
  );
}

/** bash's result ({"output", "exit_code", "duration_seconds"}) as its output text and exit code, or null. */
function bashResult(output: string): { text: string; exitCode: unknown } | null {
  try {
    const parsed = JSON.parse(output) as { output?: unknown; exit_code?: unknown };
    return typeof parsed.output === 'string' ? { text: parsed.output, exitCode: parsed.exit_code } : null;
  } catch {
    return null;
  }
}

/** The HTML of one step's result. */
export function renderStepOutput(tool: string, output: string): string {
  if (tool === 'bash') {
    const result = bashResult(output);
    if (result)
      return `${preformatted(result.text)}${result.exitCode !== undefined ? `<p class="note">exit code ${escapeHtml(String(result.exitCode))}</p>` : ''}`;
  }
  const table = parseBoxTable(output);
  if (table) {
    const around = (text: string) => (text.trim() ? `<p class="note">${escapeHtml(text.trim())}</p>` : '');
    return `${around(table.before)}${htmlTable(table.header, table.rows)}${around(table.after)}`;
  }
  return preformatted(output);
}
