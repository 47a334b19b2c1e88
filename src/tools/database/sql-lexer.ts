import type { Engine } from './types.js';

/**
 * A dialect-aware SQL tokenizer for the read-only check (SPEC §11.2). It only needs to know
 * where code ends and comments, strings and quoted identifiers begin, exactly as the engine
 * sees it: a keyword inside a string is never code, and a quote trick that the engine would
 * read differently must not hide code from us. Where a dialect is ambiguous it fails closed
 * (throws) rather than guess.
 */

export type TokenKind = 'word' | 'quoted' | 'string' | 'number' | 'punct';

export interface Token {
  kind: TokenKind;
  /** Words upper-cased; quoted identifiers unquoted as written; punctuation as is. */
  value: string;
  start: number;
  end: number;
}

/** Thrown when the text cannot be tokenized safely: the statement is refused. */
export class SqlLexError extends Error {
  override name = 'SqlLexError';
}

interface DialectRules {
  /** Backslash escapes inside plain '...' strings (MySQL's default sql_mode). */
  backslashInStrings: boolean;
  /** "..." is a string (MySQL without ANSI_QUOTES) rather than an identifier. */
  doubleQuoteIsString: boolean;
  backtickIdentifiers: boolean;
  bracketIdentifiers: boolean;
  /** `#` starts a line comment (MySQL). */
  hashComments: boolean;
  /** `--` starts a comment only when followed by whitespace or a control character (MySQL). */
  dashCommentNeedsSpace: boolean;
  /** PostgreSQL nests block comments; elsewhere a `/*` inside a comment is refused (engines differ). */
  nestedComments: boolean;
  /** `$tag$ ... $tag$` strings. */
  dollarQuotes: boolean;
  /** E'...' strings with backslash escapes. */
  escapeStrings: boolean;
  /** Oracle q'[...]' strings. */
  qQuotes: boolean;
}

const RULES: Record<Engine, DialectRules> = {
  sqlite: { backslashInStrings: false, doubleQuoteIsString: false, backtickIdentifiers: true, bracketIdentifiers: true, hashComments: false, dashCommentNeedsSpace: false, nestedComments: false, dollarQuotes: false, escapeStrings: false, qQuotes: false },
  postgres: { backslashInStrings: false, doubleQuoteIsString: false, backtickIdentifiers: false, bracketIdentifiers: false, hashComments: false, dashCommentNeedsSpace: false, nestedComments: true, dollarQuotes: true, escapeStrings: true, qQuotes: false },
  mysql: { backslashInStrings: true, doubleQuoteIsString: true, backtickIdentifiers: true, bracketIdentifiers: false, hashComments: true, dashCommentNeedsSpace: true, nestedComments: false, dollarQuotes: false, escapeStrings: false, qQuotes: false },
  oracle: { backslashInStrings: false, doubleQuoteIsString: false, backtickIdentifiers: false, bracketIdentifiers: false, hashComments: false, dashCommentNeedsSpace: false, nestedComments: false, dollarQuotes: false, escapeStrings: false, qQuotes: true },
  // Vertica: dollar quotes are refused rather than guessed (see lexDollar).
  vertica: { backslashInStrings: false, doubleQuoteIsString: false, backtickIdentifiers: false, bracketIdentifiers: false, hashComments: false, dashCommentNeedsSpace: false, nestedComments: false, dollarQuotes: false, escapeStrings: true, qQuotes: false },
};

const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const WORD_PART = /[A-Za-z0-9_$\u0080-\uffff]/;
const DIGIT = /[0-9]/;
const Q_QUOTE_CLOSERS: Record<string, string> = { '[': ']', '{': '}', '(': ')', '<': '>' };

export function tokenize(sql: string, engine: Engine): Token[] {
  const rules = RULES[engine];
  const tokens: Token[] = [];
  let i = 0;
  const n = sql.length;
  const push = (kind: TokenKind, value: string, start: number) => tokens.push({ kind, value, start, end: i });

  /** Reads a quoted run from i (at the opening quote) to after the closing quote. */
  const readQuoted = (quote: string, backslash: boolean, what: string): string => {
    const start = i;
    i++;
    let value = '';
    for (;;) {
      if (i >= n) throw new SqlLexError(`unterminated ${what} starting at character ${start + 1}`);
      const ch = sql[i]!;
      if (backslash && ch === '\\') {
        value += sql.slice(i, i + 2);
        i += 2;
        continue;
      }
      if (ch === quote) {
        if (sql[i + 1] === quote) {
          value += quote;
          i += 2;
          continue;
        }
        i++;
        return value;
      }
      value += ch;
      i++;
    }
  };

  const skipBlockComment = () => {
    const start = i;
    if (engine === 'mysql' && (sql.startsWith('/*!', i) || sql.startsWith('/*M!', i))) {
      throw new SqlLexError('MySQL executable comments (/*! ... */) run their contents as SQL and are not allowed');
    }
    let depth = 0;
    while (i < n) {
      if (sql.startsWith('/*', i)) {
        if (depth > 0 && !rules.nestedComments) {
          throw new SqlLexError(`a "/*" inside a block comment (character ${i + 1}) is read differently by different engines; remove it`);
        }
        depth++;
        i += 2;
      } else if (sql.startsWith('*/', i)) {
        depth--;
        i += 2;
        if (depth === 0) return;
      } else {
        i++;
      }
    }
    throw new SqlLexError(`unterminated block comment starting at character ${start + 1}`);
  };

  const lexDollar = (start: number): boolean => {
    // $1, $2: parameters, not quotes.
    const match = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(sql.slice(i, i + 200));
    if (!match) return false;
    if (!rules.dollarQuotes) {
      throw new SqlLexError(`dollar-quoted strings (${match[0]}) are not allowed for ${engine}`);
    }
    const tag = match[0];
    const close = sql.indexOf(tag, i + tag.length);
    if (close < 0) throw new SqlLexError(`unterminated dollar-quoted string starting at character ${start + 1}`);
    const value = sql.slice(i + tag.length, close);
    i = close + tag.length;
    push('string', value, start);
    return true;
  };

  while (i < n) {
    const ch = sql[i]!;
    const start = i;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === '-' && sql[i + 1] === '-') {
      const after = sql[i + 2];
      if (!rules.dashCommentNeedsSpace || after === undefined || /[\s\x00-\x1f]/.test(after)) {
        const newline = sql.indexOf('\n', i);
        i = newline < 0 ? n : newline + 1;
        continue;
      }
    }
    if (ch === '#' && rules.hashComments) {
      const newline = sql.indexOf('\n', i);
      i = newline < 0 ? n : newline + 1;
      continue;
    }
    if (ch === '/' && sql[i + 1] === '*') {
      skipBlockComment();
      continue;
    }
    if (ch === "'") {
      push('string', readQuoted("'", rules.backslashInStrings, 'string'), start);
      continue;
    }
    if (ch === '"') {
      if (rules.doubleQuoteIsString) push('string', readQuoted('"', rules.backslashInStrings, 'string'), start);
      else push('quoted', readQuoted('"', false, 'quoted identifier'), start);
      continue;
    }
    if (ch === '`' && rules.backtickIdentifiers) {
      push('quoted', readQuoted('`', false, 'quoted identifier'), start);
      continue;
    }
    if (ch === '[' && rules.bracketIdentifiers) {
      const close = sql.indexOf(']', i + 1);
      if (close < 0) throw new SqlLexError(`unterminated [identifier] starting at character ${start + 1}`);
      const value = sql.slice(i + 1, close);
      i = close + 1;
      push('quoted', value, start);
      continue;
    }
    if (ch === '$' && lexDollar(start)) continue;
    if (WORD_START.test(ch)) {
      while (i < n && WORD_PART.test(sql[i]!)) i++;
      const word = sql.slice(start, i);
      const upper = word.toUpperCase();
      if (sql[i] === "'") {
        if (rules.qQuotes && (upper === 'Q' || upper === 'NQ')) {
          push('string', readOracleQQuote(start), start);
          continue;
        }
        if (rules.escapeStrings && upper === 'E') {
          push('string', readQuoted("'", true, 'string'), start);
          continue;
        }
      }
      push('word', upper, start);
      continue;
    }
    if (DIGIT.test(ch) || (ch === '.' && DIGIT.test(sql[i + 1] ?? ''))) {
      readNumber();
      push('number', sql.slice(start, i), start);
      continue;
    }
    i++;
    push('punct', ch, start);
  }
  return tokens;

  /**
   * Digits, a fraction, an exponent, or a 0x/0b/0o literal, and nothing more: letters right
   * after a number start a new token, as in PostgreSQL (`SELECT 1INTO t` is SELECT 1 INTO t).
   */
  function readNumber(): void {
    if (sql[i] === '0' && /[xXbBoO]/.test(sql[i + 1] ?? '')) {
      i += 2;
      while (i < n && /[0-9A-Fa-f_]/.test(sql[i]!)) i++;
      return;
    }
    while (i < n && /[0-9_]/.test(sql[i]!)) i++;
    if (sql[i] === '.') {
      i++;
      while (i < n && /[0-9_]/.test(sql[i]!)) i++;
    }
    if ((sql[i] === 'e' || sql[i] === 'E') && /^[+-]?[0-9]/.test(sql.slice(i + 1, i + 3))) {
      i += 2;
      while (i < n && /[0-9]/.test(sql[i]!)) i++;
    }
  }

  function readOracleQQuote(start: number): string {
    // i is at the quote after q / nq: q'<delim> ... <closer>'
    const open = sql[i + 1];
    if (open === undefined || /\s/.test(open)) throw new SqlLexError(`malformed q-quoted string at character ${start + 1}`);
    const closer = Q_QUOTE_CLOSERS[open] ?? open;
    const end = sql.indexOf(`${closer}'`, i + 2);
    if (end < 0) throw new SqlLexError(`unterminated q-quoted string starting at character ${start + 1}`);
    const value = sql.slice(i + 2, end);
    i = end + 2;
    return value;
  }
}
