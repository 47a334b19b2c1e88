import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { Lexer, type Token, type Tokens } from 'marked';

/**
 * Links and headings of Markdown files, as GitHub renders them: marked's lexer finds the links
 * (not those in code) and the headings; a heading's anchor is GitHub's slug of its text.
 */

/** A heading's text as rendered: inline code, emphasis and links give their text. */
function plainText(tokens: readonly Token[] | undefined): string {
  return (tokens ?? [])
    .map((token) => {
      if (token.type === 'codespan') return token.raw.replace(/^`+\s?|\s?`+$/g, '');
      if ('tokens' in token && token.tokens) return plainText(token.tokens);
      if (token.type === 'escape' || token.type === 'text') return (token as Tokens.Text).text;
      if (token.type === 'html') return '';
      return token.raw;
    })
    .join('');
}

/**
 * GitHub's anchor for a heading (the rule github-slugger implements): lower case; every character
 * that is not a letter, mark, digit, connector punctuation (_), space or hyphen removed; spaces to
 * hyphens; a repeated slug gets -1, -2, ...
 */
export function slugger(): (heading: string) => string {
  const seen = new Map<string, number>();
  return (heading) => {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return count === 0 ? base : `${base}-${count}`;
  };
}

function walk(tokens: readonly Token[], visit: (token: Token) => void): void {
  for (const token of tokens) {
    visit(token);
    if ('tokens' in token && token.tokens) walk(token.tokens, visit);
    if (token.type === 'list') for (const item of (token as Tokens.List).items) walk(item.tokens, visit);
    if (token.type === 'table') {
      const table = token as Tokens.Table;
      for (const cell of [...table.header, ...table.rows.flat()]) walk(cell.tokens, visit);
    }
  }
}

export interface MarkdownFile {
  anchors: Set<string>;
  links: string[];
}

export function readMarkdown(text: string): MarkdownFile {
  const tokens = new Lexer({ gfm: true }).lex(text);
  const slug = slugger();
  const anchors = new Set<string>();
  const links: string[] = [];
  walk(tokens, (token) => {
    if (token.type === 'heading') anchors.add(slug(plainText((token as Tokens.Heading).tokens)));
    if (token.type === 'link' || token.type === 'image') links.push((token as Tokens.Link).href);
  });
  // Explicit anchors: <a id="..."> / <a name="...">.
  for (const match of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return { anchors, links };
}

/** Every relative link of `file` that does not resolve: a missing file, or an #anchor no heading of the target has. */
export function brokenLinks(file: string, root: string): string[] {
  const cache = new Map<string, MarkdownFile>();
  const parsed = (path: string) => {
    if (!cache.has(path)) cache.set(path, readMarkdown(readFileSync(path, 'utf8')));
    return cache.get(path)!;
  };
  const broken: string[] = [];
  for (const link of parsed(file).links) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//')) continue;
    const [target = '', anchor] = link.split('#') as [string, string | undefined];
    const path = target === '' ? file : resolve(dirname(file), decodeURIComponent(target));
    const where = `${relative(root, file)}: ${link}`;
    if (!existsSync(path)) {
      broken.push(`${where} (no such file)`);
      continue;
    }
    if (anchor === undefined || anchor === '' || statSync(path).isDirectory() || !path.endsWith('.md')) continue;
    if (!parsed(path).anchors.has(decodeURIComponent(anchor))) broken.push(`${where} (no heading with that anchor in ${relative(root, path)})`);
  }
  return broken;
}

export function markdownFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? markdownFiles(join(dir, entry.name)) : entry.name.endsWith('.md') ? [join(dir, entry.name)] : [],
  );
}
