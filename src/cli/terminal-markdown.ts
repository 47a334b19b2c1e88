import stringWidth from 'string-width';

/**
 * The REPL's answer as a terminal shows Markdown (docs/guide/running.md): **bold** and
 * headings in bold, `code` in cyan, bullets as "•", pipe tables aligned in columns with their
 * alignment row honoured. The answer streams, so this works line by line: a line is rendered once
 * it is complete, a table once its last row has arrived. Hand-written because the Markdown
 * renderers for terminals (marked-terminal and the like) render whole documents and bring a
 * syntax highlighter; this needs complete lines only and nothing more. Fenced code is shown as
 * written (dimmed), never interpreted.
 */

const STYLE = { bold: ['\u001b[1m', '\u001b[22m'], code: ['\u001b[36m', '\u001b[39m'], dim: ['\u001b[2m', '\u001b[22m'] } as const;

const TABLE_ROW = /^\s*\|.*\|\s*$/;
const ALIGN_ROW = /^\s*\|(\s*:?-+:?\s*\|)+\s*$/;

/** Set by the stream: without colour (NO_COLOR, --no-color) the marks are dropped and the text stays plain. */
let useColor = true;

function styled(kind: keyof typeof STYLE, text: string): string {
  return useColor ? `${STYLE[kind][0]}${text}${STYLE[kind][1]}` : text;
}

/** Inline Markdown: `code` first (its content is literal), then **bold** and __bold__. */
export function renderInline(text: string): string {
  return text
    .split(/(`[^`\n]+`)/)
    .map((part) =>
      part.startsWith('`') && part.endsWith('`') && part.length > 1
        ? styled('code', part.slice(1, -1))
        : part.replace(/\*\*([^*\n]+)\*\*|__([^_\n]+)__/g, (_, a: string | undefined, b: string | undefined) => styled('bold', a ?? b ?? '')),
    )
    .join('');
}

function visibleWidth(text: string): number {
  return stringWidth(text);
}

function splitRow(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim().replace(/\\\|/g, '|'));
}

/** A pipe table with its rows aligned; right/centre alignment from the `---:` row. */
export function renderTable(lines: readonly string[]): string[] {
  const alignIndex = lines.findIndex((line) => ALIGN_ROW.test(line));
  const aligns = alignIndex >= 0 ? splitRow(lines[alignIndex]!).map((cell) => (cell.endsWith(':') ? (cell.startsWith(':') ? 'center' : 'right') : 'left')) : [];
  const rows = lines.filter((_, index) => index !== alignIndex).map((line) => splitRow(line).map(renderInline));
  const columns = Math.max(...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, j) => Math.max(...rows.map((row) => visibleWidth(row[j] ?? ''))));
  const pad = (text: string, j: number) => {
    const room = widths[j]! - visibleWidth(text);
    if (aligns[j] === 'right') return ' '.repeat(room) + text;
    if (aligns[j] === 'center') return ' '.repeat(Math.floor(room / 2)) + text + ' '.repeat(Math.ceil(room / 2));
    return text + ' '.repeat(room);
  };
  const out = rows.map((row, i) => {
    const line = `  ${Array.from({ length: columns }, (_, j) => pad(row[j] ?? '', j)).join('  ')}`.trimEnd();
    return i === 0 && alignIndex === 1 ? styled('bold', line) : line;
  });
  if (alignIndex === 1) out.splice(1, 0, `  ${widths.map((width) => '─'.repeat(width)).join('  ')}`);
  return out;
}

/** One complete line outside tables and fences. */
export function renderLine(line: string): string {
  const heading = /^(#{1,6})\s+(.*)$/.exec(line);
  if (heading) return styled('bold', renderInline(heading[2]!));
  const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (bullet) return `${bullet[1]}• ${renderInline(bullet[2]!)}`;
  return renderInline(line);
}

/** Streams Markdown text in, rendered terminal text out: complete lines only, tables whole. */
export class MarkdownStream {
  private pending = '';
  private table: string[] = [];
  private inFence = false;

  constructor(private readonly color = true) {}

  /** Rendered text for the complete lines now available (may be ''). */
  push(text: string): string {
    useColor = this.color;
    this.pending += text;
    let out = '';
    let newline = this.pending.indexOf('\n');
    while (newline >= 0) {
      out += this.line(this.pending.slice(0, newline));
      this.pending = this.pending.slice(newline + 1);
      newline = this.pending.indexOf('\n');
    }
    return out;
  }

  /** Whatever is left at the end of the answer (a last line without a newline, an open table). */
  flush(): string {
    useColor = this.color;
    const rest = this.pending;
    this.pending = '';
    let out = rest ? this.line(rest, false) : '';
    out += this.endTable();
    return out;
  }

  private endTable(): string {
    if (!this.table.length) return '';
    const lines = this.table;
    this.table = [];
    return `${renderTable(lines).join('\n')}\n`;
  }

  private line(line: string, newline = true): string {
    const end = newline ? '\n' : '';
    if (/^\s*(```|~~~)/.test(line)) {
      this.inFence = !this.inFence;
      return `${this.endTable()}${styled('dim', line)}${end}`;
    }
    if (this.inFence) return `${styled('dim', line)}${end}`;
    if (TABLE_ROW.test(line)) {
      this.table.push(line);
      return '';
    }
    return `${this.endTable()}${renderLine(line)}${end}`;
  }
}
