/**
 * A small streaming XML tokenizer for SpreadsheetML parts: fed text in chunks of any size, it
 * reports start tags (local name, raw attribute text), end tags and decoded text. Enough for the
 * regular XML that spreadsheet producers write; no DTDs, no namespaces beyond dropping prefixes.
 */

export interface XmlHandler {
  open(name: string, rawAttributes: string, selfClosing: boolean): void;
  close(name: string): void;
  text(text: string): void;
  /** Set by a handler that needs no more input: scanning ends at once. */
  readonly stopped?: boolean;
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

export function decodeXmlText(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, (whole, body: string) => {
    if (body[0] === '#') {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[body] ?? whole;
  });
}

function localName(qualified: string): string {
  const colon = qualified.indexOf(':');
  return colon < 0 ? qualified : qualified.slice(colon + 1);
}

const ATTRIBUTE = /([^\s=/]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** Attributes by local name (`r:id` becomes `id`), values decoded. */
export function parseAttributes(raw: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  if (raw === '') return attributes;
  ATTRIBUTE.lastIndex = 0;
  for (let match = ATTRIBUTE.exec(raw); match; match = ATTRIBUTE.exec(raw)) {
    attributes[localName(match[1]!)] = decodeXmlText(match[2] ?? match[3] ?? '');
  }
  return attributes;
}

export class XmlScanner {
  private pending = '';
  private stopped = false;

  constructor(private readonly handler: XmlHandler) {}

  /** Ends scanning: later input is ignored. */
  stop(): void {
    this.stopped = true;
    this.pending = '';
  }

  get isStopped(): boolean {
    return this.stopped || this.handler.stopped === true;
  }

  feed(chunk: string): void {
    if (this.stopped) return;
    const text = this.pending === '' ? chunk : this.pending + chunk;
    let i = 0;
    const length = text.length;
    while (!this.stopped) {
      if (this.handler.stopped) {
        this.stop();
        return;
      }
      const lt = text.indexOf('<', i);
      if (lt < 0) break;
      if (lt > i) this.handler.text(decodeXmlText(text.slice(i, lt)));
      i = lt;
      const next = text.charCodeAt(lt + 1);
      if (next === 0x21 /* ! */) {
        const end = this.skipSpecial(text, lt);
        if (end < 0) break;
        i = end;
        continue;
      }
      // Find the closing '>' outside quoted attribute values.
      let j = lt + 1;
      let quote = 0;
      for (; j < length; j++) {
        const c = text.charCodeAt(j);
        if (quote !== 0) {
          if (c === quote) quote = 0;
        } else if (c === 0x22 || c === 0x27) quote = c;
        else if (c === 0x3e) break;
      }
      if (j >= length) break;
      i = j + 1;
      if (next === 0x3f /* ? */) continue;
      if (next === 0x2f /* / */) {
        this.handler.close(localName(text.slice(lt + 2, j).trim()));
        continue;
      }
      const selfClosing = text.charCodeAt(j - 1) === 0x2f;
      const body = text.slice(lt + 1, selfClosing ? j - 1 : j);
      let nameEnd = 0;
      while (nameEnd < body.length && !isSpace(body.charCodeAt(nameEnd))) nameEnd++;
      const name = localName(body.slice(0, nameEnd));
      this.handler.open(name, body.slice(nameEnd), selfClosing);
      if (selfClosing && !this.stopped) this.handler.close(name);
    }
    if (!this.stopped) this.pending = text.slice(i);
  }

  /** Comments, CDATA and declarations; returns the index after them, or -1 when incomplete. */
  private skipSpecial(text: string, lt: number): number {
    if (text.startsWith('<!--', lt)) {
      const end = text.indexOf('-->', lt + 4);
      return end < 0 ? -1 : end + 3;
    }
    if (text.startsWith('<![CDATA[', lt)) {
      const end = text.indexOf(']]>', lt + 9);
      if (end < 0) return -1;
      this.handler.text(text.slice(lt + 9, end));
      return end + 3;
    }
    if (text.length - lt < 9) return -1;
    const end = text.indexOf('>', lt);
    return end < 0 ? -1 : end + 1;
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
