import { posix } from 'node:path';
import { builtinFormatCode, decodeOoxmlEscapes } from './cell-values.js';
import type { Visibility } from './model.js';
import { parseAttributes, XmlScanner, type XmlHandler } from './xml-scanner.js';

/** Parsers for the small .xlsx parts: relationships, workbook.xml, styles.xml, sharedStrings.xml. */

export interface Relationship {
  id: string;
  type: string;
  /** Zip path of the target part. */
  path: string;
}

export interface WorkbookSheet {
  name: string;
  visibility: Visibility;
  relationshipId: string;
}

function scanAll(text: string, open: (name: string, raw: string) => void): void {
  const scanner = new XmlScanner({ open, close() {}, text() {} });
  scanner.feed(text);
}

/** The rels part of `sourcePart` (e.g. xl/workbook.xml → xl/_rels/workbook.xml.rels). */
export function relationshipsPartOf(sourcePart: string): string {
  const dir = posix.dirname(sourcePart);
  return posix.join(dir === '.' ? '' : dir, '_rels', `${posix.basename(sourcePart)}.rels`);
}

export function parseRelationships(text: string, sourcePart: string): Relationship[] {
  const base = posix.dirname(sourcePart);
  const relationships: Relationship[] = [];
  scanAll(text, (name, raw) => {
    if (name !== 'Relationship') return;
    const a = parseAttributes(raw);
    if (!a.Id || !a.Target || a.TargetMode === 'External') return;
    const path = a.Target.startsWith('/') ? a.Target.slice(1) : posix.normalize(posix.join(base === '.' ? '' : base, a.Target));
    relationships.push({ id: a.Id, type: a.Type ?? '', path });
  });
  return relationships;
}

export function parseWorkbook(text: string): { sheets: WorkbookSheet[]; date1904: boolean } {
  const sheets: WorkbookSheet[] = [];
  let date1904 = false;
  scanAll(text, (name, raw) => {
    if (name === 'workbookPr') {
      const value = parseAttributes(raw).date1904;
      date1904 = value === '1' || value === 'true';
    } else if (name === 'sheet') {
      const a = parseAttributes(raw);
      const visibility: Visibility = a.state === 'hidden' ? 'hidden' : a.state === 'veryHidden' ? 'veryHidden' : 'visible';
      sheets.push({ name: a.name ?? `Sheet${sheets.length + 1}`, visibility, relationshipId: a.id ?? '' });
    }
  });
  return { sheets, date1904 };
}

/** Number format code of each cell style (the s attribute indexes cellXfs). */
export function parseStyles(text: string): string[] {
  const custom = new Map<number, string>();
  const styleFormats: number[] = [];
  let inCellXfs = false;
  const scanner = new XmlScanner({
    open(name, raw) {
      if (name === 'numFmt') {
        const a = parseAttributes(raw);
        if (a.numFmtId && a.formatCode !== undefined) custom.set(Number(a.numFmtId), a.formatCode);
      } else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) styleFormats.push(Number(parseAttributes(raw).numFmtId ?? 0));
    },
    close(name) {
      if (name === 'cellXfs') inCellXfs = false;
    },
    text() {},
  });
  scanner.feed(text);
  return styleFormats.map((id) => custom.get(id) ?? builtinFormatCode(id));
}

/**
 * The shared string table, as plain text (rich-text runs joined, phonetic hints dropped). When
 * `wanted` says which indexes matter, only those are kept and reading stops after the highest,
 * so a huge table costs little time or memory.
 */
export class SharedStringsHandler implements XmlHandler {
  readonly strings = new Map<number, string>();
  private index = -1;
  private inItem = false;
  private inText = false;
  private phonetic = 0;
  private current = '';
  private selection: Set<number> | null | undefined;
  private highestWanted = Infinity;
  stopped = false;

  constructor(private readonly wanted: () => Set<number> | null) {}

  open(name: string): void {
    if (name === 'si') {
      if (this.selection === undefined) {
        // Asked once, when the table starts: by then the sheet has been read, or never will be first.
        this.selection = this.wanted();
        if (this.selection) {
          this.highestWanted = -1;
          for (const index of this.selection) if (index > this.highestWanted) this.highestWanted = index;
        }
      }
      this.index++;
      if (this.index > this.highestWanted) {
        this.stopped = true;
        return;
      }
      this.inItem = true;
      this.current = '';
    } else if (name === 't' && this.inItem && this.phonetic === 0) this.inText = true;
    else if (name === 'rPh') this.phonetic++;
  }

  close(name: string): void {
    if (name === 't') this.inText = false;
    else if (name === 'rPh') this.phonetic--;
    else if (name === 'si') {
      this.inItem = false;
      if (!this.selection || this.selection.has(this.index)) this.strings.set(this.index, decodeOoxmlEscapes(this.current));
    }
  }

  text(text: string): void {
    if (this.inText) this.current += text;
  }
}
