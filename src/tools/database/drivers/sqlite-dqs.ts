import type Database from 'better-sqlite3';
import { SqlLexError, tokenize, type Token } from '../sql/lexer.js';

/**
 * Double-quoted string literals, as the `sqlite3` program and Python accept them
 * (`WHERE GovernmentForm = "Republic"`). better-sqlite3 compiles SQLite with SQLITE_DQS=0 and has
 * no call for the runtime switch (SQLITE_DBCONFIG_DQS_DML), so quarry applies SQLite's own rule
 * itself: a double-quoted name that resolves to nothing, unqualified, is a string. SQLite says
 * exactly which one failed ("no such column: "Republic" - should this be a string literal in
 * single-quotes?"); that token is rewritten as a '...' literal and the statement prepared again,
 * until it prepares or fails for another reason (then the original statement runs and reports its
 * own error). A name that resolves anywhere stays a name, as in SQLite: after the rewrite, each
 * rewritten token is put back alone, and stays put back if the statement still prepares.
 *
 * Rewriting a name into a string literal can only take away what a statement does; the statement
 * check has already read the original text, and the driver's own checks see the rewritten one.
 */

const DQS_HINT = /^no such column: "(.*)" - should this be a string literal in single-quotes\?$/s;
/** Distinct double-quoted texts rewritten at most (each costs a prepare; better-sqlite3 is synchronous). */
const MAX_REWRITES = 100;

export function withDoubleQuotedStrings(db: Database.Database, sql: string): string {
  let tokens: Token[];
  try {
    tokens = tokenize(sql, 'sqlite');
  } catch (error) {
    if (error instanceof SqlLexError) return sql;
    throw error;
  }
  const candidates = tokens.filter((token, index) => token.kind === 'quoted' && sql[token.start] === '"' && !qualified(tokens, index));
  if (candidates.length === 0) return sql;
  const strings = new Set<Token>();
  for (let rewrites = 0; ; rewrites++) {
    const failure = prepareError(db, render(sql, strings));
    if (failure === null) break;
    const name = DQS_HINT.exec(failure)?.[1];
    const named = candidates.filter((token) => !strings.has(token) && token.value === name);
    if (named.length === 0 || rewrites === MAX_REWRITES) return sql;
    for (const token of named) strings.add(token);
  }
  // Only a text written more than once can be a name in one place and a string in another.
  for (const token of [...strings].filter((token) => candidates.filter((other) => other.value === token.value).length > 1)) {
    strings.delete(token);
    if (prepareError(db, render(sql, strings)) !== null) strings.add(token);
  }
  return render(sql, strings);
}

/** `"t"."c"`, `t."c"`: a qualified name is never a string (nor is it in SQLite). */
function qualified(tokens: Token[], index: number): boolean {
  const dot = (token: Token | undefined) => token?.kind === 'punct' && token.value === '.';
  return dot(tokens[index - 1]) || dot(tokens[index + 1]);
}

function prepareError(db: Database.Database, sql: string): string | null {
  try {
    db.prepare(sql);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

function render(sql: string, strings: ReadonlySet<Token>): string {
  if (strings.size === 0) return sql;
  let out = '';
  let at = 0;
  for (const token of [...strings].sort((a, b) => a.start - b.start)) {
    out += `${sql.slice(at, token.start)}'${token.value.replaceAll("'", "''")}'`;
    at = token.end;
  }
  return out + sql.slice(at);
}
