import { READ_ONLY_EFFECTS } from '../core/effects.js';
import { basename, dirname, resolve } from 'node:path';
import type { Backend, ExecResult } from '../../backends/types.js';
import { GrepOutputParser, type GrepRecord } from './output.js';
import { countOf, MAX_LINE_CHARS, showLine } from '../core/long-lines.js';
import { displayPath, SKIPPED_DIRECTORIES } from '../core/paths.js';
import { resolveExistingPath } from '../core/existing-path.js';
import { secretLinkOf, secretLocations, secretRefusal } from '../../security/secret-files.js';
import { decodeBytesVisibly, escapeName, hasNameEscapes, unescapeName } from '../../backends/names.js';
import { failure, success, ToolError, type ToolContext, type ToolResult } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';

export const GREP_DEFAULT_MAX_MATCHES = 100;
export const GREP_MAX_MATCHES_LIMIT = 1000;
export const GREP_MAX_CONTEXT_LINES = 10;
export const GREP_TIMEOUT_MS = 30_000;

type Engine = 'ripgrep' | 'grep';

export interface SearchPlan {
  /** Where the engine runs; the operand is relative to it. */
  cwd: string;
  operand: string;
  /** The user's glob, or null (also when searching one file, which globs do not filter). */
  glob: string | null;
  /** `cwd` as the tools show it, when that differs (a name with escapes, see escapeName). */
  shownCwd?: string;
}

/** Brace alternatives expanded, for GNU grep's --include which has no braces: `*.{ts,js}` → `*.ts`, `*.js`. */
export function expandBraces(glob: string): string[] {
  const open = glob.indexOf('{');
  if (open === -1) return [glob];
  let depth = 0;
  const commas: number[] = [];
  for (let i = open; i < glob.length; i++) {
    const char = glob[i];
    if (char === '{') depth++;
    else if (char === '}' && --depth === 0) {
      const bounds = [open, ...commas, i];
      const alternatives = bounds.slice(1).map((bound, k) => glob.slice(bounds[k]! + 1, bound));
      return alternatives.flatMap((alternative) => expandBraces(glob.slice(0, open) + alternative + glob.slice(i + 1)));
    } else if (char === ',' && depth === 1) commas.push(i);
  }
  return [glob];
}

/**
 * The same search as argument vectors; the pattern is always one `--regexp=` argument, paths
 * follow `--`. Exported for the benchmark, which runs the engines directly with these flags.
 */
export function ripgrepArgv(rg: string, args: GrepArgs, plan: SearchPlan): string[] {
  const argv = [rg, '--no-config', '--hidden', '--no-ignore', '--no-heading', '--with-filename', '--line-number', '--null', '--color=never'];
  if (args.ignore_case) argv.push('--ignore-case');
  if (args.context_lines) argv.push(`--context=${args.context_lines}`);
  if (plan.glob) argv.push(`--glob=${plan.glob}`);
  // After the user's glob, so that these win.
  for (const dir of SKIPPED_DIRECTORIES) argv.push(`--glob=!${dir}`);
  argv.push(`--regexp=${args.pattern}`, '--', plan.operand);
  return argv;
}

export function grepArgv(args: GrepArgs, plan: SearchPlan, regexFlag: '-P' | '-E'): string[] {
  // The C locale treats every byte as a character: lines in other encodings are searched and
  // printed like ripgrep does, instead of being taken for binary data.
  const argv = ['env', '-u', 'GREP_OPTIONS', 'LC_ALL=C', 'grep', '-r', '-n', '-H', '-Z', '-I', '--devices=skip', regexFlag, '--color=never'];
  if (args.ignore_case) argv.push('--ignore-case');
  if (args.context_lines) argv.push(`--context=${args.context_lines}`);
  if (plan.glob) {
    const negated = plan.glob.startsWith('!');
    for (const alternative of expandBraces(negated ? plan.glob.slice(1) : plan.glob)) {
      argv.push(negated ? `--exclude=${alternative}` : `--include=${alternative}`);
    }
  }
  for (const dir of SKIPPED_DIRECTORIES) argv.push(`--exclude-dir=${dir}`, `--exclude=${dir}`);
  argv.push(`--regexp=${args.pattern}`, '--', plan.operand);
  return argv;
}

/** stderr of a grep built without -P (or BusyBox's): retry with extended regexps. */
const NO_PCRE = /(-P option|perl|unrecognized option|invalid option)/i;
/** Errors about single files that should not fail the whole search. */
const FILE_ACCESS_ERROR = /(Permission denied|No such file or directory|Input\/output error|Too many levels of symbolic links)/i;

interface EngineRun {
  engine: Engine;
  /** The regular-expression dialect the engine used. */
  syntax: 'rust' | 'pcre' | 'extended';
  result: ExecResult;
  parser: GrepOutputParser;
}

async function runEngine(backend: Backend, args: GrepArgs, plan: SearchPlan, maxMatches: number, signal: AbortSignal): Promise<EngineRun> {
  const rg = await backend.ripgrepPath();
  const attempt = async (argv: string[]): Promise<{ result: ExecResult; parser: GrepOutputParser }> => {
    const parser = new GrepOutputParser(maxMatches);
    // Our own controller, so that enough matches stop the engine without cancelling the session.
    const stop = new AbortController();
    const onCancel = () => stop.abort();
    if (signal.aborted) stop.abort();
    else signal.addEventListener('abort', onCancel, { once: true });
    try {
      const result = await backend.execFile(argv, {
        cwd: plan.cwd,
        timeoutMs: GREP_TIMEOUT_MS,
        signal: stop.signal,
        maxOutputBytes: 0, // the parser keeps what is needed, in bounded memory
        onStdout: (chunk) => {
          parser.push(chunk);
          if (parser.overLimit && !stop.signal.aborted) stop.abort();
        },
      });
      if (!parser.overLimit) parser.finish();
      return { result, parser };
    } finally {
      signal.removeEventListener('abort', onCancel);
    }
  };
  if (rg) return { engine: 'ripgrep', syntax: 'rust', ...(await attempt(ripgrepArgv(rg, args, plan))) };
  const pcre = await attempt(grepArgv(args, plan, '-P'));
  if (pcre.result.exitCode === 2 && pcre.parser.matches === 0 && NO_PCRE.test(pcre.result.stderr.toString('utf8'))) {
    return { engine: 'grep', syntax: 'extended', ...(await attempt(grepArgv(args, plan, '-E'))) };
  }
  return { engine: 'grep', syntax: 'pcre', ...pcre };
}

function refuseSecretLinks(records: readonly GrepRecord[], cwd: string): void {
  const locations = secretLocations();
  for (const name of new Set(records.map((record) => record.path.toString('latin1')))) {
    const raw = Buffer.from(name, 'latin1');
    const secret = secretLinkOf(raw[0] === 0x2f ? raw : Buffer.concat([Buffer.from(`${cwd}/`), raw]), locations);
    if (secret) throw new ToolError(secretRefusal(resolve(cwd, escapeName(raw)), secret), 'refused');
  }
}

interface ShownRecord extends GrepRecord {
  shownPath: string;
}

/**
 * Engines print files in different orders (ripgrep searches in parallel): group by file, sort
 * the files, and number context groups ourselves, so both engines give the same text.
 */
function renderRecords(records: ShownRecord[], contextLines: number): { text: string; cutLines: number } {
  const byFile = new Map<string, ShownRecord[]>();
  for (const record of records) {
    const list = byFile.get(record.shownPath);
    if (list) list.push(record);
    else byFile.set(record.shownPath, [record]);
  }
  const files = [...byFile.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: string[] = [];
  let cutLines = 0;
  for (const file of files) {
    const lines = byFile.get(file)!.sort((a, b) => a.line - b.line);
    let previous = -1;
    for (const record of lines) {
      if (record.line === previous) continue;
      if (contextLines > 0 && out.length > 0 && record.line !== previous + 1) out.push('--');
      const { text, cut } = showLine(record.head, record.totalChars);
      if (cut) cutLines++;
      const mark = record.isMatch ? ':' : '-';
      out.push(`${file}${mark}${record.line}${mark}${text}`);
      previous = record.line;
    }
  }
  return { text: out.join('\n'), cutLines };
}

/** After the last kept match, only its own trailing context belongs to the result. */
function dropTrailingStrays(records: GrepRecord[], contextLines: number): GrepRecord[] {
  let lastMatch = -1;
  for (let i = records.length - 1; i >= 0; i--) {
    if (records[i]!.isMatch) {
      lastMatch = i;
      break;
    }
  }
  if (lastMatch === -1) return [];
  const anchor = records[lastMatch]!;
  const kept = records.slice(0, lastMatch + 1);
  for (const record of records.slice(lastMatch + 1)) {
    if (!record.path.equals(anchor.path) || record.line > anchor.line + contextLines) break;
    kept.push(record);
  }
  return kept;
}

async function planSearch(context: ToolContext, args: GrepArgs): Promise<{ plan: SearchPlan; shown: string }> {
  const { path: target, shown, stat } = await resolveExistingPath(context, args.path ?? '.', { readsTree: true });
  if (args.glob?.includes('/')) {
    throw new ToolError(
      `glob "${args.glob}" contains "/": glob matches file names only (e.g. "*.py" or "*.{ts,tsx}"); put the directory in path instead`,
      'bad_glob',
    );
  }
  // Reading a pipe or device could block until the time limit.
  if (stat.type !== 'file' && stat.type !== 'directory')
    throw new ToolError(`${shown} is not a regular file or directory (a device, socket or pipe); grep searches files`, 'not_a_file');
  const onDisk = pathForEngine(target, shown);
  const shownCwd = onDisk === target ? {} : { shownCwd: stat.type === 'directory' ? target : dirname(target) };
  if (stat.type === 'directory') return { plan: { cwd: onDisk, operand: '.', glob: args.glob || null, ...shownCwd }, shown };
  return { plan: { cwd: dirname(onDisk), operand: basename(onDisk), glob: null, ...shownCwd }, shown };
}

/**
 * The path as the engine must be given it: a shown name with escapes (escapeName) is unescaped.
 * Arguments of a process are text, so a name that is not UTF-8 cannot be passed; its parent
 * directory can, and shows it escaped.
 */
function pathForEngine(target: string, shown: string): string {
  if (!hasNameEscapes(target)) return target;
  const bytes = unescapeName(target);
  const text = bytes.toString('utf8');
  if (escapeName(text) === escapeName(bytes)) return text;
  throw new ToolError(
    `grep cannot be given ${shown} itself: its name is not valid UTF-8, which a command's arguments cannot carry; search its parent directory (a glob on ` +
      `the rest of the name narrows it), where matches show the name escaped`,
    'unsupported_path',
  );
}

/** The engine's outcome as a failed result, or null when its output is usable. */
function searchFailure({ engine, result, parser }: EngineRun, matches: number, stderrLines: string[], metadata: Record<string, unknown>): ToolResult | null {
  const fail = (message: string, error: string) => failure(message, { ...metadata, files: 0, error });
  const stderrText = stderrLines.slice(0, 20).join('\n');
  if (result.exitCode === 2 && matches === 0 && !stderrLines.every((line) => FILE_ACCESS_ERROR.test(line))) {
    return fail(`grep failed (${engine}): ${stderrText || 'exit status 2'}`, 'search_failed');
  }
  const stoppedByUs = parser.overLimit || result.timedOut;
  if (!stoppedByUs && result.exitCode !== 0 && result.exitCode !== 1 && result.exitCode !== 2) {
    const how = result.exitCode === null ? 'was killed' : `exited with status ${result.exitCode}`;
    return fail(`grep failed (${engine}): the search ${how}${stderrText ? `: ${stderrText}` : ''}`, 'search_failed');
  }
  if (result.timedOut && matches === 0) return fail('', 'timeout');
  return null;
}

const GREP_PARAMETERS = toolParameters(
  {
    pattern: { type: 'string', minLength: 1, description: 'Regular expression to search for (one line).' },
    path: { type: 'string', description: 'Directory or file to search; default: the working directory.' },
    glob: { type: 'string', description: 'Only files whose name matches, e.g. "*.py" or "*.{ts,tsx}"; a leading "!" excludes instead.' },
    ignore_case: { type: 'boolean', description: 'Case-insensitive search. Default false.' },
    context_lines: {
      type: 'integer',
      minimum: 0,
      maximum: GREP_MAX_CONTEXT_LINES,
      description: `Lines of context before and after each match (at most ${GREP_MAX_CONTEXT_LINES}). Default 0.`,
    },
    max_matches: {
      type: 'integer',
      minimum: 1,
      maximum: GREP_MAX_MATCHES_LIMIT,
      default: GREP_DEFAULT_MAX_MATCHES,
      description: `Stop after this many matching lines. Default ${GREP_DEFAULT_MAX_MATCHES}.`,
    },
  },
  ['pattern'],
);
export type GrepArgs = ArgsOf<typeof GREP_PARAMETERS>;

export const grepTool = defineTool({
  name: 'grep',
  description:
    'Search file contents with a regular expression (ripgrep syntax: Perl-like classes such as \\d \\w \\s, no look-around ' +
    'or backreferences). Searches a directory recursively (hidden files included, .gitignore not applied) or one file; ' +
    `never descends into ${SKIPPED_DIRECTORIES.join(', ')}; skips binary files. Prints PATH:LINE:TEXT for matching lines ` +
    `and PATH-LINE-TEXT for context lines, files in sorted order. Stops after max_matches matching lines (default ` +
    `${GREP_DEFAULT_MAX_MATCHES}, at most ${GREP_MAX_MATCHES_LIMIT}) and says when more exist; lines longer than ` +
    `${MAX_LINE_CHARS} characters are cut; the search is stopped after ${GREP_TIMEOUT_MS / 1000} s.`,
  parameters: GREP_PARAMETERS,
  readOnly: true,
  effects: READ_ONLY_EFFECTS,
  async run(args, context) {
    if (/[\n\r]/.test(args.pattern)) throw new ToolError('pattern must be a single line: grep matches one line at a time', 'bad_pattern');
    const maxMatches = args.max_matches ?? GREP_DEFAULT_MAX_MATCHES;
    const contextLines = args.context_lines ?? 0;
    const { plan, shown } = await planSearch(context, args);
    const run = await runEngine(context.backend, args, plan, maxMatches, context.signal);
    const { engine, result, parser } = run;
    if (context.signal.aborted) throw new ToolError('grep: cancelled', 'cancelled');

    const stderrLines = decodeBytesVisibly(result.stderr)
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
    const truncated = parser.overLimit;
    const records = dropTrailingStrays(parser.records, contextLines).map((record) => ({
      ...record,
      shownPath: displayPath(context.workingDir, resolve(plan.shownCwd ?? plan.cwd, escapeName(record.path))),
    }));
    // A hard link to a credential file lies in the tree under another name: refuse the whole search.
    if (context.backend.name === 'local') refuseSecretLinks(parser.records, plan.cwd);
    const matches = records.filter((record) => record.isMatch);
    const metadataBase = { engine, regexSyntax: run.syntax, matches: matches.length, truncated, timedOut: result.timedOut };
    const failed = searchFailure(run, matches.length, stderrLines, metadataBase);
    if (failed?.metadata.error === 'timeout') return { ...failed, output: await timeoutMessage(context, plan, shown) };
    if (failed) return failed;

    const matchedFiles = [...new Set(matches.map((record) => record.shownPath))];
    await recordReads(context, plan.shownCwd ?? plan.cwd, matches);
    const warnings = stderrLines.filter((line) => FILE_ACCESS_ERROR.test(line)).slice(0, 5);
    const warningText = warnings.length > 0 ? `\n[some files could not be read: ${warnings.join('; ')}]` : '';
    if (matches.length === 0) {
      return success(`no matches for ${JSON.stringify(args.pattern)} in ${shown}${warningText}`, { ...metadataBase, files: 0 });
    }
    const { text, cutLines } = renderRecords(records, contextLines);
    const summary = truncated
      ? `[showing the first ${countOf(matches.length, 'matching line')} in ${countOf(matchedFiles.length, 'file')}; more matches exist: narrow the pattern, ` +
        `path or glob, or raise max_matches (at most ${GREP_MAX_MATCHES_LIMIT})]`
      : result.timedOut
        ? `[${countOf(matches.length, 'matching line')} in ${countOf(matchedFiles.length, 'file')} before the search was stopped at ` +
          `${GREP_TIMEOUT_MS / 1000} s; there may be more: narrow path or glob]`
        : `[${countOf(matches.length, 'matching line')} in ${countOf(matchedFiles.length, 'file')}]`;
    const cutNote = cutLines > 0 ? `\n[${cutLines} line(s) cut at ${MAX_LINE_CHARS} characters; read the file to see them]` : '';
    return success(`${text}\n${summary}${cutNote}${warningText}`, {
      ...metadataBase,
      files: matchedFiles.length,
      moreHint: 'narrow the pattern, path or glob, or lower max_matches',
    });
  },
});

/**
 * A search stopped by the time limit found nothing in the part it read; that is not "no matches".
 * Say so, and name subdirectories to search one at a time.
 */
async function timeoutMessage(context: ToolContext, plan: SearchPlan, shown: string): Promise<string> {
  const head =
    `grep stopped at its ${GREP_TIMEOUT_MS / 1000} s limit before the search finished: no match in the part of ${shown} it read, but the rest ` +
    `was not searched, so matches may exist (a large tree, or files not yet in the disk cache).`;
  const narrow = 'Narrow the search: add a glob (e.g. "*.log"), or search one subdirectory at a time';
  if (plan.operand !== '.')
    return (
      `${head} The file is large or slow to read: read it in parts (read with start_line), or search part of it with bash (e.g. head -c 1G FILE | grep ` +
      `-n PATTERN).`
    );
  const directories: string[] = [];
  try {
    for (const entry of (await context.backend.listDir(plan.shownCwd ?? plan.cwd)).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.type === 'directory' && !(SKIPPED_DIRECTORIES as readonly string[]).includes(entry.name)) directories.push(entry.name);
    }
  } catch {
    // The names only help; without them the advice stands.
  }
  const names = directories.length
    ? ` (${directories.slice(0, 10).join(', ')}${directories.length > 10 ? `, … ${countOf(directories.length, 'directory', 'directories')} in all` : ''})`
    : '';
  return `${head} ${narrow}${names}; a repeated search is faster once the files are cached.`;
}

/** Files grep showed count as read for write/edit's read-before-write guard. */
async function recordReads(context: ToolContext, cwd: string, matches: GrepRecord[]): Promise<void> {
  const ledger = context.fileReads;
  if (!ledger) return;
  const paths = new Set(matches.map((record) => resolve(cwd, escapeName(record.path))));
  await Promise.all(
    [...paths].map(async (path) => {
      const stat = await context.backend.stat(path).catch(() => null);
      if (stat?.type === 'file') ledger.record(path, stat);
    }),
  );
}
