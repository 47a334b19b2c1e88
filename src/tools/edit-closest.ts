import { normalizeIndentation } from './edit-match.js';

/**
 * When old_string is not found: the region of the file that most resembles it, with line numbers
 * and the first line that differs, so the model can correct its old_string instead of guessing.
 */

/** Lines shown before and after the closest region. */
const CONTEXT_LINES = 2;
/** The region shown is cut to this many lines. */
const MAX_REGION_LINES = 40;
/** A shown line is cut to this many characters. */
const MAX_SHOWN_LINE_CHARS = 300;
/** A line that occurs more often than this (`}`, `end`) says nothing about where old_string is. */
const MAX_OCCURRENCES_TO_VOTE = 100;
/** Below this similarity (0..1) nothing in the file is shown as "closest". */
const MIN_SIMILARITY = 0.5;

function bigrams(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i + 1 < text.length; i++) {
    const pair = text.slice(i, i + 2);
    counts.set(pair, (counts.get(pair) ?? 0) + 1);
  }
  return counts;
}

/** Dice coefficient over character pairs: 1 for equal strings, 0 for nothing in common. */
function similarity(a: Map<string, number>, aLength: number, b: string): number {
  if (b.length < 2 || aLength < 2) return a.size === 0 && b.length < 2 ? 1 : 0;
  let shared = 0;
  const seen = new Map<string, number>();
  for (let i = 0; i + 1 < b.length; i++) {
    const pair = b.slice(i, i + 2);
    const used = seen.get(pair) ?? 0;
    if (used < (a.get(pair) ?? 0)) shared++;
    seen.set(pair, used + 1);
  }
  return (2 * shared) / (aLength - 1 + b.length - 1);
}

/** The 0-based file line where old_string's first line most plausibly sits, or null. */
function closestStart(fileNorm: readonly string[], oldNorm: readonly string[]): number | null {
  const where = new Map<string, number[]>();
  const wanted = new Set(oldNorm.filter((line) => line !== ''));
  fileNorm.forEach((line, index) => {
    if (!wanted.has(line)) return;
    const list = where.get(line);
    if (list) list.push(index);
    else where.set(line, [index]);
  });
  // Lines of old_string found verbatim (up to indentation) vote for a start; longer lines weigh more.
  const votes = new Map<number, number>();
  oldNorm.forEach((line, k) => {
    const found = where.get(line);
    if (!found || line === '' || found.length > MAX_OCCURRENCES_TO_VOTE) return;
    for (const index of found) votes.set(index - k, (votes.get(index - k) ?? 0) + line.length);
  });
  let best: number | null = null;
  for (const [start, weight] of votes) {
    if (best === null || weight > votes.get(best)! || (weight === votes.get(best)! && start < best)) best = start;
  }
  if (best !== null) return best;

  // Nothing verbatim: the file line most similar to old_string's longest line.
  let anchor = 0;
  oldNorm.forEach((line, k) => { if (line.length > oldNorm[anchor]!.length) anchor = k; });
  const target = oldNorm[anchor]!;
  const targetPairs = bigrams(target);
  let bestIndex = -1;
  let bestScore = MIN_SIMILARITY;
  fileNorm.forEach((line, index) => {
    if (line.length * 2 < target.length || line.length > target.length * 2) return; // cannot reach the threshold
    const score = similarity(targetPairs, target.length, line);
    if (score > bestScore) { bestScore = score; bestIndex = index; }
  });
  return bestIndex === -1 ? null : bestIndex - anchor;
}

function shown(line: string): string {
  return line.length > MAX_SHOWN_LINE_CHARS ? `${line.slice(0, MAX_SHOWN_LINE_CHARS)}… [line cut]` : line;
}

export function numberedLines(lines: readonly string[], firstLineNumber: number): string {
  const width = String(firstLineNumber + lines.length - 1).length;
  return lines.map((line, i) => `${String(firstLineNumber + i).padStart(width)}\t${shown(line)}`).join('\n');
}

/** Model-facing text: where the file is closest to old_string, and the first line that differs. */
export function describeClosestRegion(fileLines: readonly string[], oldLines: readonly string[]): string {
  const fileNorm = fileLines.map(normalizeIndentation);
  const oldNorm = oldLines.map(normalizeIndentation);
  const start = closestStart(fileNorm, oldNorm);
  if (start === null) return 'Nothing in the file resembles old_string; read the file again to see its current content.';

  const from = Math.max(0, start - CONTEXT_LINES);
  const to = Math.min(fileLines.length, start + oldLines.length + CONTEXT_LINES, from + MAX_REGION_LINES);
  const parts = [`The closest region is lines ${from + 1}-${to}:`, numberedLines(fileLines.slice(from, to), from + 1)];
  for (let k = 0; k < oldLines.length; k++) {
    const index = start + k;
    if (index < 0) continue;
    if (index >= fileLines.length) {
      parts.push(`old_string line ${k + 1} would lie past the end of the file (it has ${fileLines.length} lines).`);
      break;
    }
    if (fileNorm[index] !== oldNorm[k]) {
      parts.push(`First difference: file line ${index + 1} is ${JSON.stringify(shown(fileLines[index]!))} but old_string line ${k + 1} is ${JSON.stringify(shown(oldLines[k]!))}.`);
      break;
    }
  }
  return parts.join('\n');
}
