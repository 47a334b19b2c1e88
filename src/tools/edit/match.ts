import type { ViewReplacement } from './text.js';

/**
 * Finding old_string in a file (LF view), in three stages tried in order (docs/guide/tools.md "Writes"):
 * 1. exact: the text as given, anywhere;
 * 2. whitespace: whole lines equal after trailing whitespace is dropped and runs of spaces and
 *    tabs inside a line are made one space; leading indentation must still be equal;
 * 3. indentation: as 2, ignoring leading indentation; the replacement is re-indented with the
 *    file's own indentation, keeping new_string's relative indentation.
 * The first stage that finds anything decides: several matches there are an ambiguity to report,
 * never a reason to look further or to pick one.
 */

export type MatchStage = 'exact' | 'whitespace' | 'indentation';

export type MatchOutcome =
  | { kind: 'matched'; stage: MatchStage; replacements: ViewReplacement[] }
  | { kind: 'ambiguous'; stage: MatchStage; lines: number[] }
  | { kind: 'not_found' };

/** Columns a tab counts for when comparing indentation widths. */
const TAB_WIDTH = 4;
/** Spaces per indentation level when nothing shows one. */
const DEFAULT_INDENT_STEP = 4;

export function leadingWhitespace(line: string): string {
  return /^[ \t]*/.exec(line)![0];
}

function isBlank(line: string): boolean {
  return line.trim() === '';
}

/** Stage 2's form of a line: indentation kept, inner runs of whitespace as one space, no trailing whitespace. */
export function normalizeWhitespace(line: string): string {
  const trimmed = line.trimEnd();
  const indent = leadingWhitespace(trimmed);
  return indent + trimmed.slice(indent.length).replace(/[ \t]+/g, ' ');
}

/** Stage 3's form of a line: as stage 2, without indentation. */
export function normalizeIndentation(line: string): string {
  return normalizeWhitespace(line).trimStart();
}

/**
 * A file's lines in normalised form, computed only for the lines asked about: most lines are
 * ruled out by a cheap substring test first, which keeps large files fast.
 */
export class NormalizedLines {
  private readonly cache = new Map<number, string>();
  constructor(
    readonly lines: readonly string[],
    private readonly normalize: (line: string) => string,
  ) {}
  get(index: number): string {
    let value = this.cache.get(index);
    if (value === undefined) {
      value = this.normalize(this.lines[index] ?? '');
      this.cache.set(index, value);
    }
    return value;
  }
}

/** The longest run of non-whitespace in a line: normalisation keeps it, so a matching line contains it. */
export function longestToken(line: string): string {
  return line.split(/\s+/).reduce((best, token) => (token.length > best.length ? token : best), '');
}

/** Line starts of a text: lineStarts[i] is the offset of line i (0-based). */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** 1-based line number of an offset. */
export function lineNumberAt(starts: readonly number[], offset: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >>> 1;
    if (starts[mid]! <= offset) low = mid;
    else high = mid - 1;
  }
  return low + 1;
}

/**
 * Every position, overlapping ones included: "aa" in "aaa" is two places, so a unique match is
 * truly unique. replace_all then takes them left to right without overlap.
 */
function nonOverlapping(positions: readonly number[], length: number): number[] {
  const kept: number[] = [];
  let freeFrom = -Infinity;
  for (const position of positions) {
    if (position < freeFrom) continue;
    kept.push(position);
    freeFrom = position + length;
  }
  return kept;
}

function findExact(view: string, oldText: string, newText: string, replaceAll: boolean): MatchOutcome {
  const found: number[] = [];
  for (let i = view.indexOf(oldText); i !== -1; i = view.indexOf(oldText, i + 1)) found.push(i);
  if (found.length === 0) return { kind: 'not_found' };
  if (found.length > 1 && !replaceAll) {
    const starts = lineStarts(view);
    return { kind: 'ambiguous', stage: 'exact', lines: found.map((offset) => lineNumberAt(starts, offset)) };
  }
  return {
    kind: 'matched',
    stage: 'exact',
    replacements: nonOverlapping(found, oldText.length).map((start) => ({ start, end: start + oldText.length, text: newText })),
  };
}

/** old_string as whole lines: a final newline means "and the line break after the last line". */
function splitOldLines(oldText: string): { lines: string[]; endsWithNewline: boolean } {
  const endsWithNewline = oldText.endsWith('\n');
  return { lines: (endsWithNewline ? oldText.slice(0, -1) : oldText).split('\n'), endsWithNewline };
}

/** Indentation detection in the manner of editors: the most common step between consecutive indented lines. */
function indentStep(lines: readonly string[]): number | null {
  const steps = new Map<number, number>();
  let previous = 0;
  for (const line of lines) {
    if (isBlank(line)) continue;
    const width = indentWidth(leadingWhitespace(line));
    const step = Math.abs(width - previous);
    if (step > 0) steps.set(step, (steps.get(step) ?? 0) + 1);
    previous = width;
  }
  let best: number | null = null;
  for (const [step, count] of steps) {
    if (best === null || count > steps.get(best)! || (count === steps.get(best)! && step < best)) best = step;
  }
  return best;
}

function indentWidth(indent: string): number {
  let width = 0;
  for (const char of indent) width += char === '\t' ? TAB_WIDTH : 1;
  return width;
}

/** The file's unit of indentation: a tab when indented lines mostly start with one, else its step in spaces. */
function fileIndentUnit(fileLines: readonly string[], fallback: string): string {
  let tabs = 0;
  let spaces = 0;
  for (const line of fileLines) {
    if (line.startsWith('\t')) tabs++;
    else if (line.startsWith(' ') && !isBlank(line)) spaces++;
  }
  if (tabs === 0 && spaces === 0) return fallback;
  if (tabs >= spaces) return '\t';
  return ' '.repeat(indentStep(fileLines.filter((line) => !line.startsWith('\t'))) ?? DEFAULT_INDENT_STEP);
}

/** How old_string and new_string are indented: their step in columns, and their unit of indentation. */
function modelIndentation(oldLines: readonly string[], newLines: readonly string[]): { step: number; unit: string } {
  const lines = [...oldLines, ...newLines];
  const step = indentStep(lines) ?? DEFAULT_INDENT_STEP;
  return { step, unit: lines.some((line) => line.startsWith('\t')) ? '\t' : ' '.repeat(step) };
}

/**
 * Re-indents new_string for a stage-3 match. Indentation strings that old_string used map to the
 * file's indentation of the same line (exact, also for tabs); other levels are the file's base
 * indentation shifted by the same number of steps new_string moved relative to old_string's base,
 * in the file's unit of indentation.
 */
export function reindent(newLines: readonly string[], oldLines: readonly string[], matchedLines: readonly string[], unit: string): string[] {
  const known = new Map<string, string>();
  // When old_string lost the file's nesting (one indentation for lines the file indents
  // differently), lines new_string keeps from old_string take the indentation of their original.
  const byContent = new Map<string, string>();
  let flattened = false;
  let baseIndex = -1;
  for (let k = 0; k < oldLines.length; k++) {
    if (isBlank(oldLines[k]!)) continue;
    if (baseIndex === -1) baseIndex = k;
    const indent = leadingWhitespace(oldLines[k]!);
    const fileIndent = leadingWhitespace(matchedLines[k]!);
    if (!known.has(indent)) known.set(indent, fileIndent);
    else if (known.get(indent) !== fileIndent) flattened = true;
    const content = normalizeIndentation(oldLines[k]!);
    if (!byContent.has(content)) byContent.set(content, fileIndent);
  }
  const oldBase = leadingWhitespace(oldLines[baseIndex] ?? '');
  const fileBase = leadingWhitespace(matchedLines[baseIndex] ?? '');
  const modelStep = modelIndentation(oldLines, newLines).step;
  const baseLevels = Math.floor(indentWidth(fileBase) / indentWidth(unit));

  return newLines.map((line) => {
    if (isBlank(line)) return '';
    const indent = leadingWhitespace(line);
    const body = line.slice(indent.length);
    const mapped = (flattened ? byContent.get(normalizeIndentation(line)) : undefined) ?? known.get(indent);
    if (mapped !== undefined) return mapped + body;
    const steps = Math.round((indentWidth(indent) - indentWidth(oldBase)) / modelStep);
    if (steps >= 0) return fileBase + unit.repeat(steps) + body;
    return unit.repeat(Math.max(0, baseLevels + steps)) + body;
  });
}

function findByLines(view: string, oldText: string, newText: string, replaceAll: boolean, stage: 'whitespace' | 'indentation'): MatchOutcome {
  const normalize = stage === 'whitespace' ? normalizeWhitespace : normalizeIndentation;
  const old = splitOldLines(oldText);
  const wanted = old.lines.map(normalize);
  // Blank-only old_string would match any blank lines: only the exact stage may take it.
  const anchor = wanted.findIndex((line) => line !== '');
  if (anchor === -1) return { kind: 'not_found' };

  const fileLines = view.split('\n');
  const normalized = new NormalizedLines(fileLines, normalize);
  const token = longestToken(wanted[anchor]!);
  const found: number[] = [];
  for (let i = 0; i + wanted.length <= fileLines.length; i++) {
    if (!fileLines[i + anchor]!.includes(token) || normalized.get(i + anchor) !== wanted[anchor]) continue;
    if (wanted.every((line, k) => normalized.get(i + k) === line)) found.push(i);
  }
  if (found.length === 0) return { kind: 'not_found' };
  if (found.length > 1 && !replaceAll) return { kind: 'ambiguous', stage, lines: found.map((i) => i + 1) };

  const starts = lineStarts(view);
  const newEndsWithNewline = newText.endsWith('\n');
  const newLines = (old.endsWithNewline && newEndsWithNewline ? newText.slice(0, -1) : newText).split('\n');
  const unit = stage === 'indentation' ? fileIndentUnit(fileLines, modelIndentation(old.lines, newLines).unit) : '';
  const replacements = nonOverlapping(found, wanted.length).map((first): ViewReplacement => {
    const last = first + wanted.length - 1;
    const start = starts[first]!;
    let end = starts[last]! + fileLines[last]!.length;
    const lines = stage === 'indentation' ? reindent(newLines, old.lines, fileLines.slice(first, last + 1), unit) : newLines;
    let text = lines.join('\n');
    // old_string's final newline takes the line break after the match with it; new_string's gives it back.
    if (old.endsWithNewline && last + 1 < fileLines.length) {
      end += 1;
      if (newEndsWithNewline) text += '\n';
    }
    return { start, end, text };
  });
  return { kind: 'matched', stage, replacements };
}

/** old and new are LF text; old is not empty. */
export function locateEdit(view: string, oldText: string, newText: string, replaceAll: boolean): MatchOutcome {
  const exact = findExact(view, oldText, newText, replaceAll);
  if (exact.kind !== 'not_found') return exact;
  const whitespace = findByLines(view, oldText, newText, replaceAll, 'whitespace');
  if (whitespace.kind !== 'not_found') return whitespace;
  return findByLines(view, oldText, newText, replaceAll, 'indentation');
}
