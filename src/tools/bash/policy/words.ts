/**
 * The value bash gives one word of a command line, computed by our own small lexer from the
 * word's source text (the grammar only told us where the word is). Anything whose value bash
 * would compute at run time (expansions, substitutions, brace expansion) is refused, so what the
 * policy checks is exactly what the command receives, up to globbing and a leading `~`.
 */

export interface WordValue {
  value: string;
  /** Unquoted `*`, `?` or `[`: bash may replace the word by matching file names. */
  glob: boolean;
  /**
   * Text computed at run time (docs/guide/restricted-shell.md "Loops, conditions and substitutions"): the pipelines whose output the
   * word holds, each as argument vectors, the output's writer first (an empty pipeline: names of
   * files matched by a loop's pattern). The computed part stands as "*" in `value`, and `glob` is set.
   */
  data?: string[][][];
  /** Unquoted computed text: bash splits it into any number of words (options included). */
  split?: boolean;
  /** A process substitution <(...): a pipe's /dev/fd name, never a file on disk. */
  pipe?: boolean;
}

export class WordRefusal extends Error {
  override name = 'WordRefusal';
}

const FORBIDDEN_UNQUOTED: Record<string, string> = {
  $: 'a "$" (variable, parameter or arithmetic expansion, command substitution or $\'...\' string)',
  '`': 'a backquote (command substitution)',
  '(': 'a parenthesis',
  ')': 'a parenthesis',
  '<': 'a redirection',
  '>': 'a redirection',
  '&': 'an "&"',
  ';': 'a ";"',
  '|': 'a "|"',
  '\n': 'a line break inside a word',
  ' ': 'unquoted white space',
  '\t': 'unquoted white space',
};

export function wordValue(source: string): WordValue {
  if (source.includes('\0')) throw new WordRefusal('a word contains a NUL byte');
  let value = '';
  let glob = false;
  let i = 0;
  const unquotedBraces: number[] = [];
  while (i < source.length) {
    const ch = source[i]!;
    if (ch === '\\') {
      const next = source[i + 1];
      if (next === undefined || next === '\n') throw new WordRefusal('a backslash at the end of a line (line continuation)');
      value += next;
      i += 2;
    } else if (ch === "'") {
      const end = source.indexOf("'", i + 1);
      if (end < 0) throw new WordRefusal('an unterminated single quote');
      value += source.slice(i + 1, end);
      i = end + 1;
    } else if (ch === '"') {
      i += 1;
      for (;;) {
        const c = source[i];
        if (c === undefined) throw new WordRefusal('an unterminated double quote');
        if (c === '"') {
          i += 1;
          break;
        }
        if (c === '$' || c === '`')
          throw new WordRefusal(`${c === '$' ? 'a "$"' : 'a backquote'} inside double quotes (expansion or substitution); use single quotes for literal text`);
        if (c === '\\') {
          const next = source[i + 1];
          if (next === undefined) throw new WordRefusal('an unterminated double quote');
          if (next === '\n') throw new WordRefusal('a backslash-newline inside double quotes');
          value += '$`"\\'.includes(next) ? next : c + next;
          i += 2;
          continue;
        }
        value += c;
        i += 1;
      }
    } else if (ch in FORBIDDEN_UNQUOTED) {
      throw new WordRefusal(`${FORBIDDEN_UNQUOTED[ch]} in ${JSON.stringify(source)}`);
    } else {
      if (ch === '*' || ch === '?' || ch === '[') glob = true;
      if (ch === '{' || ch === '}') unquotedBraces.push(i);
      if (ch === '~' && i === 0 && !(source.length === 1 || source[1] === '/')) {
        throw new WordRefusal(`a "~" form other than "~" or "~/..." in ${JSON.stringify(source)}`);
      }
      value += ch;
      i += 1;
    }
  }
  // Brace expansion ({a,b}, {1..3}) computes words at run time; only find's literal "{}" is allowed.
  if (unquotedBraces.length > 0 && !(source === '{}' || source === '{' || source === '}')) {
    throw new WordRefusal(`an unquoted brace in ${JSON.stringify(source)} (brace expansion); quote it if it is literal`);
  }
  return { value, glob };
}
