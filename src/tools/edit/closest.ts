import { longestToken, NormalizedLines, normalizeIndentation } from './match.js';

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
/** Dice is at most 2·min/(a+b): lengths further apart than this ratio cannot reach MIN_SIMILARITY. */
const LENGTH_RATIO = (2 - MIN_SIMILARITY) / MIN_SIMILARITY;

/** Character pairs of a target line, numbered, with their counts: Dice similarity against many lines. */
class PairProfile {
  private readonly ids = new Map<number, number>();
  private readonly counts: number[] = [];
  private readonly used: Int32Array;
  readonly pairs: number;

  constructor(readonly text: string) {
    for (let i = 0; i + 1 < text.length; i++) {
      const key = text.charCodeAt(i) * 65536 + text.charCodeAt(i + 1);
      let id = this.ids.get(key);
      if (id === undefined) {
        id = this.counts.length;
        this.ids.set(key, id);
        this.counts.push(0);
      }
      this.counts[id]!++;
    }
    this.pairs = Math.max(0, text.length - 1);
    this.used = new Int32Array(this.counts.length);
  }

  /** Dice coefficient over character pairs: 1 for equal strings, 0 for nothing in common. */
  similarity(line: string): number {
    const linePairs = Math.max(0, line.length - 1);
    if (this.pairs === 0 || linePairs === 0) return this.text === line ? 1 : 0;
    this.used.fill(0);
    let shared = 0;
    for (let i = 0; i < linePairs; i++) {
      const id = this.ids.get(line.charCodeAt(i) * 65536 + line.charCodeAt(i + 1));
      if (id !== undefined && this.used[id]! < this.counts[id]!) {
        this.used[id]!++;
        shared++;
      }
    }
    return (2 * shared) / (this.pairs + linePairs);
  }
}

/** The 0-based file line where old_string's first line most plausibly sits, or null. */
function closestStart(file: NormalizedLines, oldNorm: readonly string[]): number | null {
  // Lines of old_string found verbatim (up to whitespace) vote for a start; longer lines weigh more.
  const wanted = new Map<string, number[]>();
  oldNorm.forEach((line, k) => {
    if (line !== '') wanted.set(line, [...(wanted.get(line) ?? []), k]);
  });
  const tokens = [...new Set([...wanted.keys()].map(longestToken))];
  const occurrences = new Map<string, number[]>();
  file.lines.forEach((raw, index) => {
    if (!tokens.some((token) => raw.includes(token))) return;
    const line = file.get(index);
    if (wanted.has(line)) occurrences.set(line, [...(occurrences.get(line) ?? []), index]);
  });
  const votes = new Map<number, number>();
  for (const [line, found] of occurrences) {
    if (found.length > MAX_OCCURRENCES_TO_VOTE) continue;
    for (const k of wanted.get(line)!) {
      for (const index of found) votes.set(index - k, (votes.get(index - k) ?? 0) + line.length);
    }
  }
  let best: number | null = null;
  for (const [start, weight] of votes) {
    if (best === null || weight > votes.get(best)! || (weight === votes.get(best)! && start < best)) best = start;
  }
  if (best !== null) return best;

  // Nothing verbatim: the file line most similar to old_string's longest line.
  let anchor = 0;
  oldNorm.forEach((line, k) => {
    if (line.length > oldNorm[anchor]!.length) anchor = k;
  });
  const target = new PairProfile(oldNorm[anchor]!);
  const length = target.text.length;
  let bestIndex = -1;
  let bestScore = MIN_SIMILARITY;
  file.lines.forEach((raw, index) => {
    // Ranking on the trimmed line is close enough and spares normalising every line.
    const line = raw.trim();
    if (line.length * LENGTH_RATIO < length || line.length > length * LENGTH_RATIO) return; // cannot reach the threshold
    const score = target.similarity(line);
    if (score > bestScore) {
      bestScore = score;
      bestIndex = index;
    }
  });
  return bestIndex === -1 ? null : bestIndex - anchor;
}

function shown(line: string): string {
  return line.length > MAX_SHOWN_LINE_CHARS ? `${line.slice(0, MAX_SHOWN_LINE_CHARS)}… [line cut]` : line;
}

export function numberedLines(lines: readonly string[], firstLineNumber: number): string {
  const width = Math.max(6, String(firstLineNumber + lines.length - 1).length); // as read shows them
  return lines.map((line, i) => `${String(firstLineNumber + i).padStart(width)}\t${shown(line)}`).join('\n');
}

/** Model-facing text: where the file is closest to old_string, and the first line that differs. */
export function describeClosestRegion(fileLines: readonly string[], oldLines: readonly string[]): string {
  const fileNorm = new NormalizedLines(fileLines, normalizeIndentation);
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
    if (fileNorm.get(index) !== oldNorm[k]) {
      parts.push(
        `First difference: file line ${index + 1} is ${JSON.stringify(shown(fileLines[index]!))} but old_string line ${k + 1} is ` +
          `${JSON.stringify(shown(oldLines[k]!))}.`,
      );
      break;
    }
  }
  return parts.join('\n');
}
