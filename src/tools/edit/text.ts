/**
 * The text edit works on: the file decoded as UTF-8 with a BOM set aside and CRLF shown as LF
 * (the "LF view"). Replacements are made in the view, then spliced into the original text at the
 * matching offsets, so every byte outside a replaced region is kept exactly, whatever mix of
 * line endings the file has.
 */

const BOM = '\uFEFF';

export interface TextFile {
  bom: boolean;
  /** The original text without BOM. */
  original: string;
  /** `original` with every CRLF as LF. */
  view: string;
  /** View offsets of each LF that was a CRLF in the original, ascending. */
  crlfAt: number[];
  /** The line ending new text gets: the file's most common one (LF on a tie or with none). */
  newline: '\n' | '\r\n';
}

export function toTextFile(decoded: string): TextFile {
  const bom = decoded.startsWith(BOM);
  const original = bom ? decoded.slice(BOM.length) : decoded;
  const crlfAt: number[] = [];
  let view = '';
  let from = 0;
  let lfOnly = 0;
  for (let i = original.indexOf('\n'); i !== -1; i = original.indexOf('\n', i + 1)) {
    if (i > 0 && original[i - 1] === '\r') {
      view += original.slice(from, i - 1);
      crlfAt.push(view.length);
      from = i;
    } else {
      lfOnly++;
    }
  }
  view += original.slice(from);
  return { bom, original, view, crlfAt, newline: crlfAt.length > lfOnly ? '\r\n' : '\n' };
}

/** A replacement of view[start, end) by text (LF line breaks). */
export interface ViewReplacement {
  start: number;
  end: number;
  text: string;
}

/** Count of entries in a sorted array that are below `value`. */
function countBelow(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid]! < value) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The original offset of a boundary in the view: a boundary before an LF that was CRLF lies before its CR. */
function originalOffset(file: TextFile, viewOffset: number): number {
  return viewOffset + countBelow(file.crlfAt, viewOffset);
}

/**
 * Applies non-overlapping replacements (ascending) to both texts. Returns the new file content
 * (BOM restored, line breaks of new text in the file's style) and the new LF view.
 */
export function applyReplacements(file: TextFile, replacements: readonly ViewReplacement[]): { content: string; view: string } {
  const contentParts: string[] = [file.bom ? BOM : ''];
  const viewParts: string[] = [];
  let viewFrom = 0;
  let originalFrom = 0;
  for (const { start, end, text } of replacements) {
    const originalStart = originalOffset(file, start);
    contentParts.push(file.original.slice(originalFrom, originalStart), file.newline === '\n' ? text : text.replace(/\n/g, '\r\n'));
    viewParts.push(file.view.slice(viewFrom, start), text);
    originalFrom = originalOffset(file, end);
    viewFrom = end;
  }
  contentParts.push(file.original.slice(originalFrom));
  viewParts.push(file.view.slice(viewFrom));
  return { content: contentParts.join(''), view: viewParts.join('') };
}

/** Arguments get the view's conventions too: a model may send CRLF. */
export function toLf(text: string): string {
  return text.replace(/\r\n/g, '\n');
}
