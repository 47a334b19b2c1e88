import { WorkbookError } from './errors.js';
import { attributeValue, type XmlAttributes, type XmlHandler } from './xml-scanner.js';

/**
 * Streaming parse of one worksheet part (xl/worksheets/sheetN.xml): the declared dimension, column
 * settings (<cols>, where hidden ranges live), rows with their hidden flag and raw cells, merged
 * ranges. Values stay raw (shared-string index, style index): the caller resolves them.
 */

export interface RawCell {
  column: number;
  /** The t attribute: s, str, inlineStr, b, e, n, d (undefined means n). */
  type: string | undefined;
  style: number;
  /** The <v> text, or null when there is none. */
  value: string | null;
  /** Text of an inline string (<is>). */
  inline: string | null;
  hasFormula: boolean;
  formula: string;
}

export interface RawRow {
  row: number;
  hidden: boolean;
  cells: RawCell[];
}

export interface SheetEvents {
  dimension?(ref: string): void;
  column?(min: number, max: number, hidden: boolean): void;
  /** Returns false to stop reading the sheet. */
  sheetDataStart?(): boolean;
  /** Rows that hold at least one value or formula. Returns false to stop reading the sheet. */
  row?(row: RawRow): boolean;
  merge?(ref: string): void;
}

/** "BC12" → column 55 (0 when the reference has no letters). */
export function columnOfReference(ref: string): number {
  let column = 0;
  for (let i = 0; i < ref.length; i++) {
    const c = ref.charCodeAt(i) | 0x20;
    if (c < 0x61 || c > 0x7a) break;
    column = column * 26 + (c - 0x60);
  }
  return column;
}

/**
 * The most characters of one cell's text kept (rich-text runs joined): far past what is shown and
 * past Excel's own limit (32,767), so that thousands of runs in one hostile cell stay bounded.
 */
export const MAX_KEPT_TEXT = 1024 * 1024;

export function keepText(kept: string, more: string): string {
  return kept.length >= MAX_KEPT_TEXT ? kept : kept + more.slice(0, MAX_KEPT_TEXT - kept.length);
}

/** Excel's last column (XFD): a row with more cells is damaged or hostile. */
export const MAX_COLUMN = 16_384;

const isTrue = (value: string | undefined) => value === '1' || value === 'true';

type TextTarget = 'value' | 'formula' | 'inline' | null;

export class SheetXmlHandler implements XmlHandler {
  private inSheetData = false;
  private inCols = false;
  private phonetic = 0;
  private row: RawRow | null = null;
  private lastRowNumber = 0;
  private cell: RawCell | null = null;
  private lastColumn = 0;
  private target: TextTarget = null;
  private buffer = '';
  stopped = false;

  constructor(private readonly events: SheetEvents) {}

  // <c> and <row> come by the million: their (never prefixed) attributes are read directly.
  open(name: string, attributes: XmlAttributes): void {
    switch (name) {
      case 'c': {
        if (!this.row) return;
        const ref = attributes.r;
        const style = attributes.s;
        const column = ref ? columnOfReference(ref) : this.lastColumn + 1;
        this.lastColumn = column;
        this.cell = { column, type: attributes.t, style: style ? Number(style) : 0, value: null, inline: null, hasFormula: false, formula: '' };
        return;
      }
      case 'v':
        if (this.cell) this.startText('value');
        return;
      case 'f':
        if (this.cell) {
          this.cell.hasFormula = true;
          this.startText('formula');
        }
        return;
      case 'is':
        if (this.cell) this.cell.inline = '';
        return;
      case 't':
        if (this.cell && this.cell.inline !== null && this.phonetic === 0) this.startText('inline');
        return;
      case 'rPh':
        this.phonetic++;
        return;
      case 'row': {
        if (!this.inSheetData) return;
        const ref = attributes.r;
        const number = ref ? Number(ref) : this.lastRowNumber + 1;
        this.lastRowNumber = number;
        this.lastColumn = 0;
        this.row = { row: number, hidden: isTrue(attributes.hidden), cells: [] };
        return;
      }
      case 'sheetData':
        this.inSheetData = true;
        if (this.events.sheetDataStart && !this.events.sheetDataStart()) this.stopped = true;
        return;
      case 'dimension': {
        const ref = attributeValue(attributes, 'ref');
        if (ref) this.events.dimension?.(ref);
        return;
      }
      case 'cols':
        this.inCols = true;
        return;
      case 'col': {
        if (!this.inCols) return;
        const min = Number(attributeValue(attributes, 'min'));
        const max = Number(attributeValue(attributes, 'max') ?? attributeValue(attributes, 'min'));
        if (Number.isInteger(min) && Number.isInteger(max) && min >= 1 && max >= min)
          this.events.column?.(min, max, isTrue(attributeValue(attributes, 'hidden')));
        return;
      }
      case 'mergeCell': {
        const ref = attributeValue(attributes, 'ref');
        if (ref) this.events.merge?.(ref);
        return;
      }
    }
  }

  close(name: string): void {
    switch (name) {
      case 'v':
        if (this.cell && this.target === 'value') this.cell.value = this.buffer;
        this.target = null;
        return;
      case 'f':
        if (this.cell && this.target === 'formula') this.cell.formula = this.buffer;
        this.target = null;
        return;
      case 't':
        if (this.cell && this.target === 'inline') this.cell.inline = keepText(this.cell.inline ?? '', this.buffer);
        this.target = null;
        return;
      case 'rPh':
        this.phonetic--;
        return;
      case 'c': {
        const cell = this.cell;
        // An empty <v></v> (Apache POI writes them) is no value, except in a formula's string result.
        if (cell && cell.value === '' && cell.type !== 'str') cell.value = null;
        if (cell && this.row && (cell.value !== null || cell.inline !== null || cell.hasFormula)) {
          if (this.row.cells.length >= MAX_COLUMN)
            throw new WorkbookError(
              `row ${this.row.row} holds more than ${MAX_COLUMN.toLocaleString('en-US')} cells, more than Excel allows (a damaged or hostile file)`,
              'corrupt',
            );
          this.row.cells.push(cell);
        }
        this.cell = null;
        return;
      }
      case 'row': {
        const row = this.row;
        this.row = null;
        if (row && row.cells.length > 0 && this.events.row && !this.events.row(row)) this.stopped = true;
        return;
      }
      case 'sheetData':
        this.inSheetData = false;
        return;
      case 'cols':
        this.inCols = false;
        return;
    }
  }

  text(text: string): void {
    // Capped: CDATA sections or comments between pieces of one value would escape the scanner's run limit.
    if (this.target !== null) this.buffer = keepText(this.buffer, text);
  }

  private startText(target: TextTarget): void {
    this.target = target;
    this.buffer = '';
  }
}
