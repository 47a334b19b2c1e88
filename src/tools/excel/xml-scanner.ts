import { SaxesParser } from 'saxes';
import { WorkbookError } from './errors.js';

/**
 * SpreadsheetML parts through saxes (the streaming XML parser exceljs uses too): text is fed in
 * chunks of any size; start tags (with their attributes), end tags, text and CDATA go to a
 * handler, names without their namespace prefix (`x:row` is `row`), entities decoded.
 *
 * Lenient on purpose, as this tool always was: saxes reports a well-formedness error (an entity
 * such as &nbsp; that XML does not define, a stray character) and carries on, and so do we, so
 * that one odd cell does not make a sheet unreadable. A damaged zip part is caught below (zlib,
 * entry sizes), not here.
 */

/** Attribute values by qualified name, as written (`r:id`); see attributeValue. */
export type XmlAttributes = Record<string, string>;

export interface XmlHandler {
  open(name: string, attributes: XmlAttributes, selfClosing: boolean): void;
  close(name: string): void;
  text(text: string): void;
  /** Set by a handler that needs no more input: later events are dropped and reading stops. */
  readonly stopped?: boolean;
}

function localName(qualified: string): string {
  const colon = qualified.indexOf(':');
  return colon < 0 ? qualified : qualified.slice(colon + 1);
}

/** An attribute by local name, whatever its prefix (`id` finds `r:id`). */
export function attributeValue(attributes: XmlAttributes, name: string): string | undefined {
  const direct = attributes[name];
  if (direct !== undefined) return direct;
  const suffix = `:${name}`;
  for (const key in attributes) if (key.endsWith(suffix)) return attributes[key];
  return undefined;
}

/**
 * The longest run of input without a '<' (one text node, or one tag with its attributes) the
 * scanner accepts: saxes holds such a run whole in memory, and no real cell text or tag comes
 * near (Excel's cell limit is 32,767 characters).
 */
export const MAX_XML_RUN_CHARS = 16 * 1024 * 1024;

export class XmlScanner {
  private readonly parser = new SaxesParser({ xmlns: false, position: false });
  private halted = false;
  private run = 0;

  /** `label` names the input in errors ("part xl/sharedStrings.xml"). */
  constructor(
    private readonly handler: XmlHandler,
    private readonly label = 'the XML',
  ) {
    // saxes also reports the end of a self-closing tag, so close() follows every open().
    this.parser.on('opentag', (tag) => {
      if (!this.isStopped) handler.open(localName(tag.name), tag.attributes, tag.isSelfClosing);
    });
    this.parser.on('closetag', (tag) => {
      if (!this.isStopped) handler.close(localName(tag.name));
    });
    const text = (value: string) => {
      if (!this.isStopped) handler.text(value);
    };
    this.parser.on('text', text);
    this.parser.on('cdata', text);
    this.parser.on('error', () => undefined);
  }

  /** Ends scanning: later input is ignored. */
  stop(): void {
    this.halted = true;
  }

  get isStopped(): boolean {
    return this.halted || this.handler.stopped === true;
  }

  feed(chunk: string): void {
    if (this.isStopped) return;
    const lastTag = chunk.lastIndexOf('<');
    this.run = lastTag < 0 ? this.run + chunk.length : chunk.length - lastTag;
    if (this.run > MAX_XML_RUN_CHARS) {
      this.halted = true;
      throw new WorkbookError(
        `${this.label} holds a text or tag longer than ${MAX_XML_RUN_CHARS / 1024 / 1024} M characters (a damaged file or a zip bomb); not read`,
        'too_large',
      );
    }
    this.parser.write(chunk);
  }
}

/** Scans a whole (small) part. */
export function scanXml(text: string, handler: XmlHandler, label?: string): void {
  new XmlScanner(handler, label).feed(text);
}
