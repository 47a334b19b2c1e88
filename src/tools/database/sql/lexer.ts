import type { Engine } from '../types.js';

/**
 * A dialect-aware SQL tokenizer for the read-only check (docs/guide/databases.md "Read-only in two layers"). It only needs to know
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
  /**
   * How `--` comments end: 'newline' (SQLite, MySQL: only \n), 'newline-or-cr' (PostgreSQL: \n
   * or \r), 'unsure' (Oracle, Vertica: a lone \r inside a line comment is refused).
   */
  lineCommentEnd: 'newline' | 'newline-or-cr' | 'unsure';
  /** U&"..." identifiers with escapes (PostgreSQL, Vertica): refused, since they can spell any name. */
  unicodeIdentifiers: boolean;
  /** Backslash escapes inside "..." and `...` identifiers too (ClickHouse). */
  backslashInIdentifiers?: boolean;
}

const POSTGRES_RULES: DialectRules = {
  backslashInStrings: false,
  doubleQuoteIsString: false,
  backtickIdentifiers: false,
  bracketIdentifiers: false,
  hashComments: false,
  dashCommentNeedsSpace: false,
  nestedComments: true,
  dollarQuotes: true,
  escapeStrings: true,
  qQuotes: false,
  lineCommentEnd: 'newline-or-cr',
  unicodeIdentifiers: true,
};

const RULES: Record<Engine, DialectRules> = {
  sqlite: {
    backslashInStrings: false,
    doubleQuoteIsString: false,
    backtickIdentifiers: true,
    bracketIdentifiers: true,
    hashComments: false,
    dashCommentNeedsSpace: false,
    nestedComments: false,
    dollarQuotes: false,
    escapeStrings: false,
    qQuotes: false,
    lineCommentEnd: 'newline',
    unicodeIdentifiers: false,
  },
  postgres: POSTGRES_RULES,
  mysql: {
    backslashInStrings: true,
    doubleQuoteIsString: true,
    backtickIdentifiers: true,
    bracketIdentifiers: false,
    hashComments: true,
    dashCommentNeedsSpace: true,
    nestedComments: false,
    dollarQuotes: false,
    escapeStrings: false,
    qQuotes: false,
    lineCommentEnd: 'newline',
    unicodeIdentifiers: false,
  },
  oracle: {
    backslashInStrings: false,
    doubleQuoteIsString: false,
    backtickIdentifiers: false,
    bracketIdentifiers: false,
    hashComments: false,
    dashCommentNeedsSpace: false,
    nestedComments: false,
    dollarQuotes: false,
    escapeStrings: false,
    qQuotes: true,
    lineCommentEnd: 'unsure',
    unicodeIdentifiers: false,
  },
  // Vertica: dollar quotes are refused rather than guessed (see lexDollar).
  vertica: {
    backslashInStrings: false,
    doubleQuoteIsString: false,
    backtickIdentifiers: false,
    bracketIdentifiers: false,
    hashComments: false,
    dashCommentNeedsSpace: false,
    nestedComments: false,
    dollarQuotes: false,
    escapeStrings: true,
    qQuotes: false,
    lineCommentEnd: 'unsure',
    unicodeIdentifiers: true,
  },
  // DuckDB's parser is PostgreSQL's (libpg_query): nested comments, $$ strings, E'' strings, U&"" names.
  duckdb: POSTGRES_RULES,
  // ClickHouse: backslash escapes in strings and quoted names alike; `#` comments (newer servers);
  // heredoc ($$...$$) strings are refused rather than guessed.
  clickhouse: {
    backslashInStrings: true,
    doubleQuoteIsString: false,
    backtickIdentifiers: true,
    bracketIdentifiers: false,
    hashComments: true,
    dashCommentNeedsSpace: false,
    nestedComments: false,
    dollarQuotes: false,
    escapeStrings: false,
    qQuotes: false,
    lineCommentEnd: 'newline',
    unicodeIdentifiers: false,
    backslashInIdentifiers: true,
  },
};

/**
 * Whitespace as the engines see it: ASCII only. Every engine reads other characters (U+00A0,
 * U+2028, a BOM) as part of an identifier, so treating them as spaces (JavaScript's \s) would let
 * `AS \u00a0$a$` open a dollar quote for us that the engine never sees.
 */
const WHITESPACE = /[ \t\n\r\f\v]/;
/** What may follow `--` for MySQL to read a comment: a space or an ASCII control character. */
const MYSQL_DASH_COMMENT_FOLLOWER = /[\x00-\x20\x7f]/;
/** `$tag$` at a position (sticky: any tag length, no copy of the rest of the text). */
const DOLLAR_TAG = /\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

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

  /** From a `--` or `#` to the end of the line, where the engine ends it (see lineCommentEnd). */
  const skipLineComment = () => {
    const start = i;
    for (; i < n; i++) {
      const c = sql[i];
      if (c === '\n') break;
      if (c !== '\r' || sql[i + 1] === '\n' || rules.lineCommentEnd === 'newline') continue;
      if (rules.lineCommentEnd === 'newline-or-cr') break;
      throw new SqlLexError(`a carriage return inside the line comment at character ${start + 1} may end it for ${engine}; use newlines`);
    }
    i++;
  };

  const lexDollar = (start: number): boolean => {
    // $1, $2: parameters, not quotes.
    DOLLAR_TAG.lastIndex = i;
    const match = DOLLAR_TAG.exec(sql);
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
    if (WHITESPACE.test(ch)) {
      i++;
      continue;
    }
    if (ch === '-' && sql[i + 1] === '-') {
      const after = sql[i + 2];
      if (rules.dashCommentNeedsSpace && after !== undefined && after > '\x7f') {
        throw new SqlLexError(
          `"--" followed by a non-ASCII character (character ${i + 1}) may or may not start a comment for ${engine}; put a space after "--"`,
        );
      }
      if (!rules.dashCommentNeedsSpace || after === undefined || MYSQL_DASH_COMMENT_FOLLOWER.test(after)) {
        skipLineComment();
        continue;
      }
    }
    if (ch === '#' && rules.hashComments) {
      skipLineComment();
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
      if (rules.doubleQuoteIsString) {
        push('string', readQuoted('"', rules.backslashInStrings, 'string'), start);
        continue;
      }
      const value = readQuoted('"', rules.backslashInIdentifiers ?? false, 'quoted identifier');
      if (rules.unicodeIdentifiers && value.includes('\\') && /U&$/i.test(sql.slice(Math.max(0, start - 2), start))) {
        throw new SqlLexError(`a U&"..." identifier with escapes (character ${start - 1}) can spell any name; write the name plainly`);
      }
      push('quoted', value, start);
      continue;
    }
    if (ch === '`' && rules.backtickIdentifiers) {
      push('quoted', readQuoted('`', rules.backslashInIdentifiers ?? false, 'quoted identifier'), start);
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
      if (rules.unicodeIdentifiers && upper === 'UESCAPE') {
        throw new SqlLexError(`UESCAPE (character ${start + 1}) changes how a U&"..." name is spelled; write the name plainly`);
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
