import { READ_ONLY_EFFECTS } from '../core/effects.js';
import { extname } from 'node:path';
import type { Backend } from '../../backends/types.js';
import { LineScanner, type ScannedLine } from './line-scanner.js';
import { formatCount, MAX_LINE_CHARS, showLine } from '../core/long-lines.js';
import { resolveExistingPath } from '../core/existing-path.js';
import { formatBytes } from '../core/paths.js';
import { MAX_TOOL_OUTPUT_BYTES, sanitizeOutput } from '../core/sanitize.js';
import { success, ToolError } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';

/** Lines shown by one read call (the default and the most). */
export const READ_MAX_LINES = 500;
/** How much of the file's start decides whether it is text. */
export const BINARY_SNIFF_BYTES = 8192;
/** A sample with more than this share of undecodable bytes or control characters is binary. */
const BINARY_SUSPICIOUS_SHARE = 0.3;
/**
 * Past the lines shown, lines are counted for the true total only up to this far into the file
 * (a few tens of milliseconds from the page cache), so the head of a huge file comes back at once; the footer
 * then gives a lower bound and an estimate, and how to get the exact count.
 */
export const READ_COUNT_LIMIT_BYTES = 16 * 1024 * 1024;
const SPREADSHEET_EXTENSIONS = new Set(['.xlsx', '.xlsm', '.xls']);

/** NUL bytes, or mostly undecodable bytes and control characters, mean "not text". */
export function looksBinary(sample: Buffer): boolean {
  if (sample.length === 0) return false;
  if (sample.includes(0)) return true;
  // A multi-byte character cut by the end of the sample is not evidence of anything.
  const text = new TextDecoder('utf-8').decode(sample.subarray(0, Math.max(sample.length - 3, 1)));
  let suspicious = 0;
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code === 0xfffd || (code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d && code !== 0x0c && code !== 0x1b)) suspicious++;
  }
  return suspicious > text.length * BINARY_SUSPICIOUS_SHARE;
}

interface ScanOutcome {
  scanner: LineScanner;
  binary: boolean;
  /** Counting stopped at READ_COUNT_LIMIT_BYTES: the total is a lower bound. */
  countStopped?: boolean;
}

/** Streams the file once: binary check on its start, kept lines, line count (up to READ_COUNT_LIMIT_BYTES past the window). */
async function scanFile(backend: Backend, path: string, first: number, last: number, signal: AbortSignal): Promise<ScanOutcome> {
  const scanner = new LineScanner(first, last);
  let sniffing: Buffer[] | null = [];
  let sniffedBytes = 0;
  for await (const chunk of backend.readStream(path)) {
    if (signal.aborted) throw new ToolError('read: cancelled', 'cancelled');
    if (sniffing) {
      sniffing.push(chunk);
      sniffedBytes += chunk.length;
      if (sniffedBytes < BINARY_SNIFF_BYTES) continue;
      const start = Buffer.concat(sniffing);
      if (looksBinary(start.subarray(0, BINARY_SNIFF_BYTES))) return { scanner, binary: true };
      sniffing = null;
      scanner.push(start);
      continue;
    }
    scanner.push(chunk);
    if (scanner.windowDone && scanner.totalBytes >= READ_COUNT_LIMIT_BYTES) return { scanner, binary: false, countStopped: true };
  }
  if (sniffing) {
    const start = Buffer.concat(sniffing);
    if (looksBinary(start)) return { scanner, binary: true };
    scanner.push(start);
  }
  scanner.finish();
  return { scanner, binary: false };
}

/** Where counting stopped on a huge file: how far it got and what the whole file probably holds. */
interface PartialCount {
  countedBytes: number;
  fileBytes: number;
}

function footer(first: number, lastShown: number, total: number, crlf: boolean, cutLines: number, partial?: PartialCount): string {
  const notes: string[] = [];
  if (partial) {
    const estimate = Math.round((total * partial.fileBytes) / partial.countedBytes);
    notes.push(
      `showing lines ${formatCount(first)}-${formatCount(lastShown)} of at least ${formatCount(total)} (counting stopped after the first ` +
        `${formatBytes(partial.countedBytes)} of ${formatBytes(partial.fileBytes)}; ` +
        `about ${formatCount(estimate)} lines in all at that rate; bash \`wc -l\` gives the exact count)`,
    );
    notes.push(`to read on, call read with start_line=${lastShown + 1}`);
  } else if (first === 1 && lastShown === total) notes.push(total === 1 ? 'the only line shown' : `all ${formatCount(total)} lines shown`);
  else notes.push(`showing lines ${formatCount(first)}-${formatCount(lastShown)} of ${formatCount(total)}`);
  if (!partial && lastShown < total) notes.push(`${formatCount(total - lastShown)} more lines: to read on, call read with start_line=${lastShown + 1}`);
  if (crlf) notes.push('the file uses CRLF line endings (\\r\\n), not shown');
  if (cutLines > 0)
    notes.push(
      `${cutLines} line(s) cut at ${MAX_LINE_CHARS} characters; see more of line N with bash: sed -n 'Np' FILE | cut -c ` +
        `${MAX_LINE_CHARS + 1}-${MAX_LINE_CHARS * 4}`,
    );
  return `[${notes.join('; ')}]`;
}

/** Room left for the registry's cut marker when estimating which lines survive the output cap. */
const CUT_MARKER_ROOM = 512;

/**
 * Long lines can make the output exceed the registry's cap, which cuts the tail (footer
 * included). Tell the model exactly where to go on: the first line not surely shown in full.
 */
function hintPastOutputCap(body: string[], lines: ScannedLine[], total: number, partial: boolean): string {
  let bytes = 0;
  let lastWhole = lines[0]!.number - 1;
  for (let i = 0; i < lines.length; i++) {
    bytes += Buffer.byteLength(sanitizeOutput(body[i]!), 'utf8') + 1;
    if (bytes > MAX_TOOL_OUTPUT_BYTES - CUT_MARKER_ROOM) break;
    lastWhole = lines[i]!.number;
  }
  return `call read with start_line=${lastWhole + 1} to go on (the file has ${partial ? 'at least ' : ''}${formatCount(total)} lines)`;
}

const READ_PARAMETERS = toolParameters(
  {
    path: { type: 'string', description: 'File to read; relative paths resolve against the working directory.' },
    start_line: { type: 'integer', minimum: 1, description: 'First line to show (1-based). Default 1.' },
    end_line: { type: 'integer', minimum: 1, description: `Last line to show (inclusive). Default: start_line + ${READ_MAX_LINES - 1}.` },
  },
  ['path'],
);
export type ReadArgs = ArgsOf<typeof READ_PARAMETERS>;

export const readTool = defineTool({
  name: 'read',
  description:
    `Read a text file with line numbers (like cat -n). Shows at most ${READ_MAX_LINES} lines per call, from start_line ` +
    `(1-based, default 1) to end_line; lines longer than ${MAX_LINE_CHARS} characters are cut with a marker. ` +
    `The footer gives the total line count (counted through the first ${READ_COUNT_LIMIT_BYTES / 1024 / 1024} MiB or to the last line shown, whichever is ` +
    `further; ` +
    'beyond that a lower bound and an estimate) and the start_line to read on. Binary files are refused ' +
    '(inspect them with bash: file, xxd | head); for .xlsx/.xlsm/.xls use read_excel; for directories use list.',
  parameters: READ_PARAMETERS,
  readOnly: true,
  effects: READ_ONLY_EFFECTS,
  async run(args, context) {
    const { backend } = context;
    const { path, shown, stat } = await resolveExistingPath(context, args.path);
    if (stat.type === 'directory') throw new ToolError(`${shown} is a directory; use the list tool to see its entries`, 'is_directory');
    if (stat.type !== 'file') throw new ToolError(`${shown} is not a regular file (a device, socket or pipe); read only reads files`, 'not_a_file');
    if (SPREADSHEET_EXTENSIONS.has(extname(path).toLowerCase())) {
      throw new ToolError(`${shown} is a spreadsheet; use the read_excel tool (action list_sheets, then read_sheet) to read it`, 'spreadsheet');
    }

    const first = args.start_line ?? 1;
    const requestedLast = args.end_line ?? first + READ_MAX_LINES - 1;
    if (requestedLast < first) throw new ToolError(`end_line (${requestedLast}) is before start_line (${first})`, 'bad_range');
    const last = Math.min(requestedLast, first + READ_MAX_LINES - 1);

    const { scanner, binary, countStopped } = await scanFile(backend, path, first, last, context.signal);
    if (binary) {
      throw new ToolError(
        `${shown} looks like a binary file (${formatBytes(stat.size)}), not text; inspect it with bash, e.g. \`file ${shown}\` or \`xxd ${shown} | head -n ` +
          `20\``,
        'binary',
      );
    }
    context.fileReads?.record(path, stat);
    const total = scanner.totalLines;
    const crlf = scanner.crlfNewlines > 0 && scanner.crlfNewlines * 2 >= scanner.newlines;
    const partial = countStopped ? { countedBytes: scanner.totalBytes, fileBytes: Math.max(stat.size, scanner.totalBytes) } : undefined;
    const count = partial ? { totalLines: null, totalLinesAtLeast: total, bytesCounted: scanner.totalBytes } : { totalLines: total };
    const metadata: Record<string, unknown> = {
      path: shown,
      ...count,
      bytes: partial ? stat.size : scanner.totalBytes,
      lineEndings: scanner.crlfNewlines === 0 ? 'lf' : scanner.crlfNewlines === scanner.newlines ? 'crlf' : 'mixed',
    };
    if (total === 0) return success(`(${shown} is empty: 0 bytes)`, { ...metadata, linesShown: 0 });
    if (first > total)
      throw new ToolError(`start_line ${first} is beyond the end of ${shown}, which has ${formatCount(total)} lines`, 'bad_range', { totalLines: total });

    const lastShown = scanner.lines[scanner.lines.length - 1]!.number;
    const width = Math.max(6, String(lastShown).length);
    let cutLines = 0;
    const body = scanner.lines.map((line) => {
      const { text, cut } = showLine(line.head, line.totalChars);
      if (cut) cutLines++;
      return `${String(line.number).padStart(width)}\t${text}`;
    });
    body.push(footer(first, lastShown, total, crlf, cutLines, partial));
    return success(body.join('\n'), {
      ...metadata,
      startLine: first,
      endLine: lastShown,
      linesShown: scanner.lines.length,
      cutLines,
      moreHint: hintPastOutputCap(body, scanner.lines, total, partial !== undefined),
    });
  },
});
