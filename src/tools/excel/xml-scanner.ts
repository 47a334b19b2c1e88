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
      // The closing '>' is the first one outside quoted attribute values.
      let j = text.indexOf('>', lt + 1);
      while (j >= 0 && !quotesBalanced(text, lt, j)) j = text.indexOf('>', j + 1);
      if (j < 0) break;
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

/** Whether text[from..to) holds an even number of each quote character (no '>' inside a value). */
function quotesBalanced(text: string, from: number, to: number): boolean {
  const tag = text.slice(from, to);
  for (const quote of ['"', "'"]) {
    let count = 0;
    for (let k = tag.indexOf(quote); k >= 0; k = tag.indexOf(quote, k + 1)) count++;
    if (count % 2 !== 0) return false;
  }
  return true;
}

/**
 * One attribute's value without parsing the others: the hot path for the millions of <c> and
 * <row> elements of a large sheet. Falls back to parseAttributes for unusual spacing.
 */
export function attributeValue(raw: string, name: string): string | undefined {
  const key = `${name}=`;
  for (let i = raw.indexOf(key); i >= 0; i = raw.indexOf(key, i + 1)) {
    if (i > 0 && !isSpace(raw.charCodeAt(i - 1))) continue;
    const quote = raw[i + key.length];
    if (quote !== '"' && quote !== "'") break;
    const end = raw.indexOf(quote, i + key.length + 1);
    if (end < 0) break;
    return decodeXmlText(raw.slice(i + key.length + 1, end));
  }
  return /\s=|=\s/.test(raw) ? parseAttributes(raw)[name] : undefined;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}
