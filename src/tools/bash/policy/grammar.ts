import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageRoot } from '../../../config/home.js';
import type { Node as SyntaxNode, Parser as ParserType } from 'web-tree-sitter';
import { WordRefusal, wordValue, type WordValue } from './words.js';

/**
 * The syntax layer of the restricted shell (docs/guide/restricted-shell.md): bash is parsed with tree-sitter-bash
 * (its wasm grammar from the installed package, loaded once, lazily, without network), and
 * only a small grammar is accepted: plain commands of plain words, joined by `|`, `&&`, `||`,
 * `;` or line breaks, with output redirected only to /dev/null (or 2>&1) and input read from a
 * named file; `if`/`while`/`until` around such commands; `for NAME in WORDS` loops, whose body
 * is collected once for every word (so `$NAME` is always a known value or a file pattern); and
 * `$(...)` / `<(...)` substitutions, whose commands are checked like any other and whose output
 * is marked as data for the command that receives it (index.ts decides who may take data).
 * Everything else is refused with the construct named. Each command comes back as its
 * argument vector.
 */

export interface SimpleCommand {
  words: WordValue[];
  /** The command's source text, for refusal messages. */
  text: string;
  /**
   * The command whose output this one reads through a pipe or from a file (`< FILE` reads as the
   * pseudo command ["<", FILE]); null: it reads nothing, stdin is /dev/null.
   */
  upstream: SimpleCommand | null;
  /** Files opened by input redirections (checked like the command's own path words). */
  reads: WordValue[];
}

export type SplitResult = { ok: true; commands: SimpleCommand[] } | { ok: false; reason: string };

let parserPromise: Promise<ParserType> | undefined;
/** Milliseconds the grammar took to load (for diagnostics and the report), once loaded. */
export let grammarLoadMs: number | undefined;

function loadParser(): Promise<ParserType> {
  parserPromise ??= (async () => {
    const started = performance.now();
    const { Parser, Language } = await import('web-tree-sitter');
    await Parser.init();
    // Built quarry: dist/tree-sitter-bash.wasm (scripts/postbuild.mjs); the sources in a checkout: the devDependency's.
    const built = join(packageRoot(), 'dist', 'tree-sitter-bash.wasm');
    const wasmPath = existsSync(built) ? built : createRequire(import.meta.url).resolve('tree-sitter-bash/tree-sitter-bash.wasm');
    const language = await Language.load(wasmPath);
    const parser = new Parser();
    parser.setLanguage(language);
    grammarLoadMs = performance.now() - started;
    return parser;
  })();
  parserPromise.catch(() => {
    parserPromise = undefined;
  });
  return parserPromise;
}

/** Why a construct is refused, by tree-sitter-bash node type; unknown types are refused too. */
const REFUSED_CONSTRUCTS: Record<string, string> = {
  command_substitution: 'command substitution ($(...) or `...`)',
  process_substitution: 'process substitution (<(...) or >(...))',
  simple_expansion: 'variable expansion ($NAME)',
  expansion: 'parameter expansion (${...})',
  arithmetic_expansion: 'arithmetic expansion ($((...)))',
  ansi_c_string: "an ANSI-C string ($'...')",
  translated_string: 'a translated string ($"...")',
  brace_expression: 'brace expansion ({a..b})',
  subshell: 'a subshell ( ... )',
  compound_statement: 'a command group { ...; }',
  function_definition: 'a function definition',
  variable_assignment: 'a variable assignment',
  variable_assignments: 'variable assignments',
  declaration_command: 'a declaration (export, declare, local, readonly)',
  unset_command: 'unset',
  heredoc_redirect: 'a here-document (<<)',
  herestring_redirect: 'a here-string (<<<)',
  negated_command: 'a negated command (!)',
  test_command: 'a [[ ... ]] test (use "test" or "[")',
  c_style_for_statement: 'a C-style for loop (use for NAME in WORDS)',
  case_statement: 'a case statement',
  ERROR: 'text the bash grammar cannot parse',
};

function describeNode(node: SyntaxNode): string {
  return REFUSED_CONSTRUCTS[node.type] ?? `the construct "${node.type}"`;
}

class SyntaxRefusal extends Error {}

function refuse(node: SyntaxNode, why?: string): never {
  const snippet = node.text.length > 60 ? `${node.text.slice(0, 57)}...` : node.text;
  throw new SyntaxRefusal(`${why ?? describeNode(node)} is not allowed in the restricted shell: ${JSON.stringify(snippet)}`);
}

/** Values of the enclosing for loops' variables, by name. */
type Scope = ReadonlyMap<string, WordValue>;
/** Commands collected from one command line, with a bound (loop bodies are collected once per value). */
const MAX_COMMANDS = 512;
const MAX_LOOP_VALUES = 64;

const WORD_NODES = new Set(['word', 'string', 'raw_string', 'concatenation', 'number']);
const DYNAMIC_NODES = new Set(['simple_expansion', 'expansion', 'command_substitution', 'process_substitution']);

function hasDynamicPart(node: SyntaxNode): boolean {
  if (DYNAMIC_NODES.has(node.type)) return true;
  return node.namedChildren.some((child) => child !== null && hasDynamicPart(child));
}

function literalWord(node: SyntaxNode, source = node.text): WordValue {
  try {
    return wordValue(source);
  } catch (error) {
    if (error instanceof WordRefusal) refuse(node, error.message.split(' in ')[0]);
    throw error;
  }
}

/** The value of a word node; substitutions inside it add their commands to `out`. */
function wordOf(node: SyntaxNode, scope: Scope, out: SimpleCommand[]): WordValue {
  if (node.type === 'process_substitution') return processSubstitution(node, scope, out);
  if (!WORD_NODES.has(node.type) && !DYNAMIC_NODES.has(node.type)) refuse(node);
  if (!hasDynamicPart(node)) {
    // Sub-structure must be plain too (a "string" may hold an expansion node).
    const walk = (n: SyntaxNode) => {
      for (const child of n.children) {
        if (!child) continue;
        if (child.isNamed && !WORD_NODES.has(child.type) && child.type !== 'string_content') refuse(child);
        walk(child);
      }
    };
    walk(node);
    return literalWord(node);
  }
  const word: Required<Pick<WordValue, 'value' | 'glob' | 'data'>> & { split: boolean } = { value: '', glob: false, data: [], split: false };
  const dynamic = (part: SyntaxNode, quoted: boolean) => {
    if (part.type === 'command_substitution') commandSubstitution(part, quoted, scope, out, word);
    else if (part.type === 'simple_expansion' || part.type === 'expansion') loopVariable(part, quoted, scope, word);
    else refuse(part);
  };
  const doubleQuoted = (string: SyntaxNode) => {
    for (const child of string.children) {
      if (!child) continue;
      if (!child.isNamed) {
        if (child.type !== '"') refuse(string, `a "${child.type}" inside double quotes`);
        continue;
      }
      if (child.type === 'string_content') word.value += literalWord(child, `"${child.text}"`).value;
      else dynamic(child, true);
    }
  };
  const unquoted = (part: SyntaxNode) => {
    if (part.type === 'string') doubleQuoted(part);
    else if (DYNAMIC_NODES.has(part.type)) dynamic(part, false);
    else if (part.type === 'word' || part.type === 'raw_string' || part.type === 'number') {
      const literal = literalWord(part);
      word.value += literal.value;
      word.glob ||= literal.glob;
    } else refuse(part);
  };
  if (node.type === 'concatenation') {
    for (const child of node.children) if (child) unquoted(child);
  } else {
    unquoted(node);
  }
  return { value: word.value, glob: word.glob, ...(word.data.length > 0 ? { data: word.data } : {}), ...(word.split ? { split: true } : {}) };
}

/** `$NAME` or `${NAME}` of an enclosing for loop: its value for this pass through the body. */
function loopVariable(node: SyntaxNode, quoted: boolean, scope: Scope, word: { value: string; glob: boolean; data: string[][][]; split: boolean }): void {
  const parts = node.children.filter((child): child is SyntaxNode => child !== null);
  const name = parts.find((child) => child.type === 'variable_name');
  const plain = node.type === 'simple_expansion' ? parts.length === 2 : parts.length === 3 && parts[0]?.type === '${' && parts[2]?.type === '}';
  if (!name || !plain) refuse(node, `${describeNode(node)} other than a for loop's variable ($NAME or \${NAME})`);
  const value = scope.get(name.text);
  if (!value) refuse(node, `the variable $${name.text} (only the variable of an enclosing "for NAME in WORDS" loop has a value the check can know)`);
  if (!quoted && !value.glob && !value.data && /[\s*?[\]]/.test(value.value)) {
    refuse(node, `$${name.text} unquoted (its value ${JSON.stringify(value.value)} would be split or expanded; write "$${name.text}")`);
  }
  word.value += value.value;
  word.glob ||= value.glob;
  if (value.data) word.data.push(...value.data);
  // Unquoted, file names matched by the loop's pattern are split at white space (a name "a -r" gives two words).
  if (!quoted && (value.glob || value.data)) word.split = true;
}

/** `$(...)`: its commands are checked like any other; the word holds their output (data). */
function commandSubstitution(
  node: SyntaxNode,
  quoted: boolean,
  scope: Scope,
  out: SimpleCommand[],
  word: { value: string; glob: boolean; data: string[][][]; split: boolean },
): void {
  if (node.children[0]?.type !== '$(') refuse(node, 'a backquote substitution (write $(...))');
  const statements = node.namedChildren.filter((child): child is SyntaxNode => child !== null && child.type !== 'comment');
  if (statements.length !== 1) refuse(node, 'a command substitution holding more than one pipeline');
  const ends = walkStatement(statements[0]!, out, scope);
  const chain: string[][] = [];
  for (let from: SimpleCommand | null = ends.last; from; from = from.upstream) chain.push(from.words.map((w) => w.value));
  word.value += '*';
  word.glob = true;
  word.data.push(chain);
  if (!quoted) word.split = true;
}

/** `<(...)`: the command reads a pipe (/dev/fd/N) that carries the inner commands' output. */
function processSubstitution(node: SyntaxNode, scope: Scope, out: SimpleCommand[]): WordValue {
  if (node.children[0]?.type !== '<(') refuse(node, 'an output process substitution >(...)');
  const statements = node.namedChildren.filter((child): child is SyntaxNode => child !== null && child.type !== 'comment');
  if (statements.length !== 1) refuse(node, 'a process substitution holding more than one pipeline');
  walkStatement(statements[0]!, out, scope);
  return { value: '/dev/fd/63', glob: false, pipe: true };
}

function collectCommand(node: SyntaxNode, out: SimpleCommand[], scope: Scope): SimpleCommand {
  const words: WordValue[] = [];
  const inner: SimpleCommand[] = [];
  for (const child of node.children) {
    if (!child) continue;
    if (child.type === 'command_name') {
      const name = child.namedChildren[0];
      if (!name || child.namedChildren.length !== 1) refuse(child, 'an unusual command name');
      words.push(wordOf(name, scope, inner));
    } else if (WORD_NODES.has(child.type) || DYNAMIC_NODES.has(child.type)) {
      if (words.length === 0) refuse(child, 'a command without a name');
      words.push(wordOf(child, scope, inner));
    } else {
      refuse(child);
    }
  }
  if (words.length === 0) refuse(node, 'an empty command');
  const command: SimpleCommand = { words, text: node.text, upstream: null, reads: [] };
  out.push(command, ...inner);
  if (out.length > MAX_COMMANDS) refuse(node, `more than ${MAX_COMMANDS} commands once loops are unrolled`);
  return command;
}

/** The grammar reads `[ ... ]` as a test expression; it is the harmless `[` builtin with plain words. */
const TEST_PARTS = new Set(['unary_expression', 'binary_expression', 'parenthesized_expression', 'test_operator']);
function collectSingleBracketTest(node: SyntaxNode, out: SimpleCommand[], scope: Scope): SimpleCommand {
  if (!node.text.startsWith('[') || node.text.startsWith('[[')) refuse(node);
  const words: WordValue[] = [{ value: '[', glob: false }];
  const inner: SimpleCommand[] = [];
  const walk = (n: SyntaxNode) => {
    for (const child of n.namedChildren) {
      if (!child) continue;
      if (WORD_NODES.has(child.type) || DYNAMIC_NODES.has(child.type)) words.push(wordOf(child, scope, inner));
      else if (TEST_PARTS.has(child.type)) {
        if (child.type === 'test_operator') words.push({ value: child.text, glob: false });
        else walk(child);
      } else refuse(child);
    }
  };
  walk(node);
  const command: SimpleCommand = { words, text: node.text, upstream: null, reads: [] };
  out.push(command, ...inner);
  return command;
}

type Redirect = { stdin: 'null' } | { stdin: 'file'; file: WordValue } | { stdin: null };

/** Redirections that cannot change anything: output to /dev/null, joining stderr and stdout, and reading a named file. */
function checkRedirect(node: SyntaxNode, scope: Scope): Redirect {
  if (node.type !== 'file_redirect') refuse(node);
  let operator = '';
  let target: SyntaxNode | undefined;
  for (const child of node.children) {
    if (!child) continue;
    if (child.type === 'file_descriptor') continue;
    if (!child.isNamed) operator += child.type;
    else if (target) refuse(node, 'a redirection with several targets');
    else target = child;
  }
  if (!target) refuse(node, 'a redirection without a target');
  const value = wordOf(target, scope, []);
  if (value.glob || value.data || value.pipe) refuse(node, 'a redirection to a pattern or computed name');
  const toNull = value.value === '/dev/null' && ['>', '>>', '&>', '&>>', '<', '>|'].includes(operator);
  const joinStreams = operator === '>&' && (value.value === '1' || value.value === '2');
  if (operator === '<' && !toNull) return { stdin: 'file', file: value };
  if (!toNull && !joinStreams) refuse(node, 'a redirection other than to /dev/null or 2>&1 (the restricted shell writes no files)');
  return { stdin: operator === '<' ? 'null' : null };
}

/** The commands at both ends of a statement: the first reads its input, the last writes its output. */
interface Ends {
  first: SimpleCommand;
  last: SimpleCommand;
}

/** Stands for what a loop or if statement prints: xargs and substitutions cannot take names from it. */
function compoundOutput(node: SyntaxNode): SimpleCommand {
  const text = node.text.length > 40 ? `${node.text.slice(0, 37)}...` : node.text;
  const what = { for_statement: 'a for loop', if_statement: 'an if statement', while_statement: 'a while loop' }[node.type] ?? 'a list of commands';
  return { words: [{ value: `(the output of ${what})`, glob: false }], text, upstream: null, reads: [] };
}

const COMPOUND = new Set(['for_statement', 'if_statement', 'while_statement']);
/** Keywords and separators inside compound statements; "&" (background) is not among them. */
const COMPOUND_TOKENS = new Set(['for', 'in', 'do', 'done', 'if', 'then', 'elif', 'else', 'fi', 'while', 'until', ';', '\n']);

function walkStatements(node: SyntaxNode, out: SimpleCommand[], scope: Scope): void {
  for (const child of node.children) {
    if (!child) continue;
    if (!child.isNamed) {
      if (!COMPOUND_TOKENS.has(child.type)) refuse(child, `the operator "${child.type}"`);
      continue;
    }
    if (child.type === 'elif_clause' || child.type === 'else_clause' || child.type === 'do_group') walkStatements(child, out, scope);
    else walkStatement(child, out, scope);
  }
}

/**
 * The variable names of `while [IFS=] read [-r] NAME...; do ...; done`, or null for any other
 * loop. Its values are the lines of its input, known only at run time: in the body they are data
 * (docs/guide/restricted-shell.md "Loops, conditions and substitutions"), as the output of `$(...)` is.
 */
function readLoopNames(node: SyntaxNode): string[] | null {
  if (node.type !== 'while_statement') return null;
  const conditions = node.childrenForFieldName('condition').filter((child): child is SyntaxNode => child?.isNamed === true);
  const condition = conditions[0];
  if (conditions.length !== 1 || condition?.type !== 'command') return null;
  const names: string[] = [];
  let read = false;
  for (const child of condition.namedChildren) {
    if (!child) continue;
    if (child.type === 'variable_assignment') {
      // Only `IFS=` (keep leading and trailing blanks): other assignments change what commands do.
      if (read || child.text !== 'IFS=') return null;
    } else if (child.type === 'command_name') {
      if (child.text !== 'read') return null;
      read = true;
    } else if (child.type === 'word' && read && child.text === '-r' && names.length === 0) {
    } else if (child.type === 'word' && read && /^[a-z_][a-z0-9_]*$/.test(child.text)) {
      names.push(child.text);
    } else {
      return null;
    }
  }
  return read && names.length > 0 ? names : null;
}

/** The body of a `while read` loop, once, its variables holding data from `source`; the body's commands read the loop's input too. */
function walkReadLoop(node: SyntaxNode, names: string[], source: SimpleCommand, out: SimpleCommand[], scope: Scope): void {
  const body = node.childForFieldName('body');
  if (!body) refuse(node, 'an unusual while loop');
  const chain: string[][] = [];
  for (let from: SimpleCommand | null = source; from; from = from.upstream) chain.push(from.words.map((word) => word.value));
  const inner = new Map(scope);
  for (const name of names) inner.set(name, { value: '*', glob: true, data: [chain] });
  const first = out.length;
  walkStatements(body, out, inner);
  // A command in the body that reads its standard input reads the rest of the loop's input.
  for (const command of out.slice(first)) if (command.upstream === null) command.upstream = source;
}

function walkFor(node: SyntaxNode, out: SimpleCommand[], scope: Scope): void {
  const variable = node.childForFieldName('variable');
  const body = node.childForFieldName('body');
  if (variable?.type !== 'variable_name' || !body) refuse(node, 'an unusual for loop');
  if (!/^[a-z_][a-z0-9_]*$/.test(variable.text))
    refuse(node, `the loop variable "${variable.text}" (use a lower-case name: upper-case names such as PATH or IFS change how the shell runs commands)`);
  if (!node.children.some((child) => child?.type === 'in')) refuse(node, 'a for loop without "in WORDS"');
  const values: WordValue[] = [];
  for (const child of node.children) {
    if (!child) continue;
    if (child.id === variable.id || child.id === body.id) continue;
    if (!child.isNamed) {
      if (!COMPOUND_TOKENS.has(child.type)) refuse(child, `the operator "${child.type}"`);
      continue;
    }
    if (child.type === 'comment') continue;
    const value = wordOf(child, scope, out);
    if (value.pipe) refuse(child, 'a process substitution as a loop value');
    // Unquoted computed text is split into fields: each value is one field (no white space), of the same data.
    values.push({ value: value.value, glob: value.glob, ...(value.data ? { data: value.data } : {}) });
  }
  if (values.length > MAX_LOOP_VALUES) refuse(node, `a for loop over more than ${MAX_LOOP_VALUES} words`);
  for (const value of values) walkStatements(body, out, new Map(scope).set(variable.text, value));
}

function walkStatement(node: SyntaxNode, out: SimpleCommand[], scope: Scope): Ends {
  switch (node.type) {
    case 'command': {
      const command = collectCommand(node, out, scope);
      return { first: command, last: command };
    }
    case 'test_command': {
      const command = collectSingleBracketTest(node, out, scope);
      return { first: command, last: command };
    }
    case 'for_statement':
    case 'if_statement':
    case 'while_statement': {
      if (node.type === 'for_statement') walkFor(node, out, scope);
      else walkStatements(node, out, scope);
      const output = compoundOutput(node);
      return { first: output, last: output };
    }
    case 'redirected_statement': {
      const [body, ...redirects] = node.namedChildren.filter((child): child is SyntaxNode => child !== null);
      if (!body) refuse(node, 'an unusual redirection');
      if (redirects.length === 0) refuse(node, 'an unusual redirection');
      const results = redirects.map((redirect) => checkRedirect(redirect, scope));
      if (COMPOUND.has(body.type)) {
        const input = results.find((result): result is { stdin: 'file'; file: WordValue } => result.stdin === 'file');
        if (input) {
          const names = readLoopNames(body);
          if (!names) refuse(node, 'input redirection into a loop or if statement other than "while read NAME; do ...; done < FILE"');
          // The file is read as `cat FILE` would read it (its path checked like any other), and the loop's values are its lines.
          const source: SimpleCommand = { words: [{ value: 'cat', glob: false }, input.file], text: `< ${input.file.value}`, upstream: null, reads: [] };
          out.push(source);
          walkReadLoop(body, names, source, out, scope);
          const output = compoundOutput(body);
          return { first: output, last: output };
        }
        return walkStatement(body, out, scope);
      }
      if (body.type !== 'command') refuse(node, 'a redirection of something other than a plain command, loop or if statement');
      const command = collectCommand(body, out, scope);
      for (const result of results) {
        if (result.stdin === 'null') command.upstream = null;
        if (result.stdin === 'file') {
          command.reads.push(result.file);
          command.upstream = { words: [{ value: '<', glob: false }, result.file], text: `< ${result.file.value}`, upstream: null, reads: [] };
        }
      }
      return { first: command, last: command };
    }
    case 'pipeline': {
      // Each command reads the previous one's output (set after the walk, so "< FILE" on a
      // later command is overridden only when it comes after; bash applies redirections after pipes).
      let previous: Ends | null = null;
      let first: SimpleCommand | null = null;
      for (const child of node.children) {
        if (!child) continue;
        if (!child.isNamed) {
          if (child.type !== '|') refuse(child, `the operator "${child.type}"`);
          continue;
        }
        const names = previous ? readLoopNames(child) : null;
        if (previous && names) {
          // `... | while read NAME; do ...; done`: the loop's values are the lines the pipe carries.
          walkReadLoop(child, names, previous.last, out, scope);
          const output = compoundOutput(child);
          previous = { first: output, last: output };
          continue;
        }
        if (previous && (COMPOUND.has(child.type) || (child.type === 'redirected_statement' && COMPOUND.has(child.namedChildren[0]?.type ?? '')))) {
          refuse(child, 'a loop or if statement reading from a pipe other than "... | while read NAME; do ...; done"');
        }
        const ends = walkStatement(child, out, scope);
        if (previous && !redirectsStdin(child)) ends.first.upstream = previous.last;
        first ??= ends.first;
        previous = ends;
      }
      if (!first || !previous) refuse(node, 'an empty pipeline');
      return { first, last: previous.last };
    }
    case 'list':
    case 'program': {
      let last: Ends | null = null;
      for (const child of node.children) {
        if (!child) continue;
        if (child.isNamed) {
          if (child.type !== 'comment') last = walkStatement(child, out, scope);
        } else if (!['|', '&&', '||', ';'].includes(child.type)) refuse(child, `the operator "${child.type}"`);
      }
      if (!last) return { first: compoundOutput(node), last: compoundOutput(node) };
      // A list's output is that of several commands: stands as one the checks cannot take names from.
      const output = compoundOutput(node);
      return node.type === 'list' ? { first: output, last: output } : last;
    }
    case 'comment': {
      const output = compoundOutput(node);
      return { first: output, last: output };
    }
    default:
      refuse(node);
  }
}

/** Splits a command line into its simple commands, or says which construct is not allowed. */
export async function splitCommandLine(source: string): Promise<SplitResult> {
  if (source.includes('\0')) return { ok: false, reason: 'the command contains a NUL byte' };
  if (source.trim() === '') return { ok: false, reason: 'the command is empty' };
  const parser = await loadParser();
  const tree = parser.parse(source);
  if (!tree) return { ok: false, reason: 'the command could not be parsed' };
  try {
    const root = tree.rootNode;
    if (root.hasError) {
      const bad = findError(root);
      return { ok: false, reason: `the command does not parse as plain bash${bad ? ` near ${JSON.stringify(bad.text.slice(0, 40))}` : ''}; it is refused` };
    }
    const commands: SimpleCommand[] = [];
    walkStatement(root, commands, new Map());
    if (commands.length === 0) return { ok: false, reason: 'the command has nothing to run' };
    return { ok: true, commands };
  } catch (error) {
    if (error instanceof SyntaxRefusal) return { ok: false, reason: error.message };
    throw error;
  } finally {
    tree.delete();
  }
}

function redirectsStdin(statement: SyntaxNode): boolean {
  return (
    statement.type === 'redirected_statement' &&
    statement.namedChildren.some((child) => child?.type === 'file_redirect' && child.children.some((part) => part?.type === '<'))
  );
}

function findError(node: SyntaxNode): SyntaxNode | null {
  if (node.type === 'ERROR' || node.isMissing) return node;
  for (const child of node.children) {
    const found = child ? findError(child) : null;
    if (found) return found;
  }
  return null;
}
