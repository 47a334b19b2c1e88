import { posix } from 'node:path';
import { builtinFormatCode, decodeOoxmlEscapes } from './cell-values.js';
import type { Visibility } from './model.js';
import { keepText } from './sheet-xml.js';
import { attributeValue, scanXml, type XmlAttributes, type XmlHandler } from './xml-scanner.js';

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

function scanStartTags(text: string, open: (name: string, attributes: XmlAttributes) => void): void {
  scanXml(text, { open, close() {}, text() {} });
}

/** The rels part of `sourcePart` (e.g. xl/workbook.xml → xl/_rels/workbook.xml.rels). */
export function relationshipsPartOf(sourcePart: string): string {
  const dir = posix.dirname(sourcePart);
  return posix.join(dir === '.' ? '' : dir, '_rels', `${posix.basename(sourcePart)}.rels`);
}

export function parseRelationships(text: string, sourcePart: string): Relationship[] {
  const base = posix.dirname(sourcePart);
  const relationships: Relationship[] = [];
  scanStartTags(text, (name, a) => {
    if (name !== 'Relationship') return;
    const id = attributeValue(a, 'Id');
    const target = attributeValue(a, 'Target');
    if (!id || !target || attributeValue(a, 'TargetMode') === 'External') return;
    const path = target.startsWith('/') ? target.slice(1) : posix.normalize(posix.join(base === '.' ? '' : base, target));
    relationships.push({ id, type: attributeValue(a, 'Type') ?? '', path });
  });
  return relationships;
}

export function parseWorkbook(text: string): { sheets: WorkbookSheet[]; date1904: boolean } {
  const sheets: WorkbookSheet[] = [];
  let date1904 = false;
  // Extensions (<extLst>) hold elements of the same local names: Excel 2013 and later write
  // <x15:workbookPr chartTrackingRefBase="1"/> there, after the real <workbookPr date1904="1"/>,
  // and reading it as the workbook's properties put every date of a 1904 workbook 4 years early.
  let inExtensions = 0;
  scanXml(text, {
    open(name, a) {
      if (name === 'extLst') inExtensions++;
      if (inExtensions > 0) return;
      if (name === 'workbookPr') {
        const value = attributeValue(a, 'date1904')?.trim().toLowerCase();
        date1904 = value === '1' || value === 'true';
      } else if (name === 'sheet') {
        const state = attributeValue(a, 'state');
        const visibility: Visibility = state === 'hidden' ? 'hidden' : state === 'veryHidden' ? 'veryHidden' : 'visible';
        sheets.push({ name: attributeValue(a, 'name') ?? `Sheet${sheets.length + 1}`, visibility, relationshipId: attributeValue(a, 'id') ?? '' });
      }
    },
    close(name) {
      if (name === 'extLst') inExtensions--;
    },
    text() {},
  });
  return { sheets, date1904 };
}

/** Number format code of each cell style (the s attribute indexes cellXfs). */
export function parseStyles(text: string): string[] {
  const custom = new Map<number, string>();
  const styleFormats: number[] = [];
  let inCellXfs = false;
  // Only <numFmts> defines the cells' formats: the <numFmt>s inside <dxfs> (conditional and
  // pivot-table formatting) reuse ids for other codes, and once made a date show as 4206200%.
  let inNumFmts = false;
  scanXml(text, {
    open(name, a) {
      if (name === 'numFmts') inNumFmts = true;
      else if (name === 'numFmt' && inNumFmts) {
        const id = attributeValue(a, 'numFmtId');
        const code = attributeValue(a, 'formatCode');
        if (id && code !== undefined) custom.set(Number(id), code);
      } else if (name === 'cellXfs') inCellXfs = true;
      else if (name === 'xf' && inCellXfs) styleFormats.push(Number(attributeValue(a, 'numFmtId') ?? 0));
    },
    close(name) {
      if (name === 'cellXfs') inCellXfs = false;
      else if (name === 'numFmts') inNumFmts = false;
    },
    text() {},
  });
  return styleFormats.map((id) => custom.get(id) ?? builtinFormatCode(id));
}

/**
 * The shared string table, as plain text (rich-text runs joined, phonetic hints dropped). Only
 * the `wanted` indexes (those of the rows read) are kept and reading stops after the highest, so
 * a huge table costs little time or memory.
 */
export class SharedStringsHandler implements XmlHandler {
  readonly strings = new Map<number, string>();
  private index = -1;
  private inItem = false;
  private inText = false;
  private phonetic = 0;
  private current = '';
  private highestWanted = -1;
  stopped = false;

  constructor(private readonly wanted: ReadonlySet<number>) {
    for (const index of wanted) if (index > this.highestWanted) this.highestWanted = index;
  }

  open(name: string): void {
    if (name === 'si') {
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
      if (this.wanted.has(this.index)) this.strings.set(this.index, decodeOoxmlEscapes(this.current));
    }
  }

  text(text: string): void {
    if (this.inText) this.current = keepText(this.current, text);
  }
}
