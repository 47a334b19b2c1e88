import { ToolError } from '../../core/types.js';
import type { Engine } from '../types.js';
import { SqlLexError, type Token, tokenize } from './lexer.js';

/**
 * Statements that make the database server itself reach outside the database: run a program, open a
 * connection to another host, read or write a file of the server or of quarry's machine (docs/security.md).
 * The database tools are not outward tools (src/agent/untrusted.ts): what they send goes to the
 * configured database. Under `database: readonly` the statement check (statement-check.ts) refuses
 * all of these already; under `mutations` and `full` (the eval profile) it is off, and a statement
 * such as `COPY (SELECT ...) TO PROGRAM 'curl ...'` on a superuser connection carried data out past
 * the outward-tool rule, --yes or not. This check runs in every mode; it reads tokens, so the words
 * inside strings, comments and quoted identifiers do not count, and ordinary reads and writes
 * (INSERT, UPDATE, CREATE TABLE, COPY ... TO STDOUT) go through.
 */

/** Functions that reach the network, the server's files or large-object files. */
const FUNCTIONS: Partial<Record<Engine, { exact: readonly string[]; prefixes: readonly string[] }>> = {
  postgres: { exact: ['LO_IMPORT', 'LO_EXPORT', 'PG_READ_FILE', 'PG_READ_BINARY_FILE', 'PG_FILE_WRITE'], prefixes: ['DBLINK'] },
  mysql: { exact: ['LOAD_FILE', 'SYS_EXEC', 'SYS_EVAL'], prefixes: [] },
  oracle: { exact: ['HTTPURITYPE'], prefixes: [] },
};

/** Oracle packages that open connections or files (called as PACKAGE.PROCEDURE). */
const ORACLE_PACKAGES = new Set([
  'UTL_HTTP',
  'UTL_TCP',
  'UTL_SMTP',
  'UTL_MAIL',
  'UTL_FILE',
  'UTL_INADDR',
  'DBMS_LDAP',
  'DBMS_NETWORK_ACL_ADMIN',
  'DBMS_SCHEDULER',
]);

/** PostgreSQL's untrusted procedural languages: code in them runs as the server's operating-system user. */
const UNTRUSTED_LANGUAGES = /^(?:PLPYTHONU|PLPYTHON2U|PLPYTHON3U|PLPERLU|PLTCLU|PLSH|PLRUBYU|PLJAVAU|C)$/i;

/** Two-word statement starts that make a server connect elsewhere or load code. */
const PHRASES: Partial<Record<Engine, readonly (readonly string[])[]>> = {
  postgres: [
    ['CREATE', 'EXTENSION'],
    ['CREATE', 'SERVER'],
    ['ALTER', 'SERVER'],
    ['CREATE', 'FOREIGN'],
    ['IMPORT', 'FOREIGN'],
    ['CREATE', 'USER', 'MAPPING'],
    ['ALTER', 'USER', 'MAPPING'],
    ['LOAD'],
  ],
  mysql: [
    ['LOAD', 'DATA'],
    ['LOAD', 'XML'],
    ['INTO', 'OUTFILE'],
    ['INTO', 'DUMPFILE'],
    ['CREATE', 'SERVER'],
    ['ALTER', 'SERVER'],
    ['INSTALL', 'PLUGIN'],
    ['INSTALL', 'SONAME'],
    ['SONAME'],
  ],
  vertica: [
    ['CONNECT', 'TO'],
    ['EXPORT', 'TO'],
  ],
};

/** MariaDB storage engines whose tables live on another server or in outside files. */
const REMOTE_ENGINES = new Set(['FEDERATED', 'FEDERATEDX', 'CONNECT', 'SPIDER']);

function refuse(what: string, token: Token): never {
  throw new ToolError(
    `refused: ${what} (at character ${token.start + 1}) makes the database server reach outside the database (a program, another host or a file), ` +
      'which quarry never runs, in any database mode; read the data with a query and let quarry write files (export_query)',
    'refused',
  );
}

function isWord(token: Token | undefined, ...values: string[]): boolean {
  return token?.kind === 'word' && values.includes(token.value);
}

export function checkNoWayOut(sql: string, engine: Engine): void {
  let tokens: Token[];
  try {
    tokens = tokenize(sql, engine);
  } catch (error) {
    if (error instanceof SqlLexError) throw new ToolError(`refused: ${error.message}`, 'refused');
    throw error;
  }
  const functions = FUNCTIONS[engine];
  const phrases = PHRASES[engine] ?? [];
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind !== 'word') continue;
    const previous = tokens[index - 1];
    const next = tokens[index + 1];
    if (previous?.kind === 'punct' && previous.value === '.') continue;
    const calls = next?.kind === 'punct' && next.value === '(';
    if (calls && functions && (functions.exact.includes(token.value) || functions.prefixes.some((prefix) => token.value.startsWith(prefix))))
      refuse(`the function ${token.value.toLowerCase()}()`, token);
    if (engine === 'oracle' && ORACLE_PACKAGES.has(token.value) && next?.kind === 'punct' && (next.value === '.' || next.value === '('))
      refuse(`the package ${token.value}`, token);
    const startsStatement = !previous || (previous.kind === 'punct' && previous.value === ';');
    for (const phrase of phrases) {
      // A one-word phrase (PostgreSQL's LOAD 'library') only as a statement's first word; SONAME is no column name.
      if (phrase.length === 1 && phrase[0] !== 'SONAME' && !startsStatement) continue;
      if (phrase.every((word, offset) => isWord(tokens[index + offset], word))) refuse(phrase.join(' '), token);
    }
    if (token.value === 'COPY' && (engine === 'postgres' || engine === 'vertica')) checkCopy(tokens, index);
    if (engine === 'postgres' && token.value === 'LANGUAGE') {
      const language = tokens[index + 1];
      if (language && (language.kind === 'word' || language.kind === 'quoted' || language.kind === 'string') && UNTRUSTED_LANGUAGES.test(language.value))
        refuse(`LANGUAGE ${language.value}`, token);
    }
    if (engine === 'mysql' && token.value === 'ENGINE') {
      const value = next?.kind === 'punct' && next.value === '=' ? tokens[index + 2] : next;
      if (value && REMOTE_ENGINES.has(value.value.toUpperCase())) refuse(`ENGINE ${value.value}`, token);
    }
  }
}

/** COPY ... TO/FROM PROGRAM, or TO/FROM a file named by a string (LOCAL too): the server (or the client) opens it. */
function checkCopy(tokens: readonly Token[], start: number): void {
  for (let index = start + 1; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.kind === 'punct' && token.value === ';') return;
    if (isWord(token, 'PROGRAM')) refuse('COPY ... PROGRAM', token);
    if (isWord(token, 'TO', 'FROM')) {
      const after = isWord(tokens[index + 1], 'LOCAL') ? tokens[index + 2] : tokens[index + 1];
      if (after?.kind === 'string') refuse(`COPY ... ${token.value} '${after.value}'`, token);
    }
  }
}
