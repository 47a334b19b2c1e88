import { createRequire } from 'node:module';
import type { Node as SyntaxNode, Parser as ParserType } from 'web-tree-sitter';
import { WordRefusal, wordValue, type WordValue } from './words.js';

/**
 * The syntax layer of the restricted shell (SPEC §11.1): bash is parsed with tree-sitter-bash
 * (its wasm grammar from the installed package, loaded once, lazily, without network), and
 * only a tiny grammar is accepted: plain commands of plain words, joined by `|`, `&&`, `||`,
 * `;` or line breaks, with output redirected only to /dev/null (or 2>&1). Everything else is
 * refused with the construct named. Each command comes back as its argument vector.
 */

export interface SimpleCommand {
  words: WordValue[];
  /** The command's source text, for refusal messages. */
  text: string;
  /** The command whose output this one reads through a pipe (null: it reads nothing, stdin is /dev/null). */
  upstream: SimpleCommand | null;
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
    const wasmPath = createRequire(import.meta.url).resolve('tree-sitter-bash/tree-sitter-bash.wasm');
    const language = await Language.load(wasmPath);
    const parser = new Parser();
    parser.setLanguage(language);
    grammarLoadMs = performance.now() - started;
    return parser;
  })();
  parserPromise.catch(() => { parserPromise = undefined; });
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
  if_statement: 'an if statement', for_statement: 'a for loop', c_style_for_statement: 'a for loop',
  while_statement: 'a while/until loop', case_statement: 'a case statement',
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

const WORD_NODES = new Set(['word', 'string', 'raw_string', 'concatenation', 'number']);

function wordOf(node: SyntaxNode): WordValue {
  if (!WORD_NODES.has(node.type)) refuse(node);
  // Sub-structure must be plain too (a "string" may hold an expansion node).
  const walk = (n: SyntaxNode) => {
    for (const child of n.children) {
      if (!child) continue;
      if (child.isNamed && !WORD_NODES.has(child.type) && child.type !== 'string_content') refuse(child);
      walk(child);
    }
  };
  walk(node);
  try {
    return wordValue(node.text);
  } catch (error) {
    if (error instanceof WordRefusal) refuse(node, error.message.split(' in ')[0]);
    throw error;
  }
}

function collectCommand(node: SyntaxNode, out: SimpleCommand[]): void {
  const words: WordValue[] = [];
  for (const child of node.children) {
    if (!child) continue;
    if (child.type === 'command_name') {
      const inner = child.namedChildren[0];
      if (!inner || child.namedChildren.length !== 1) refuse(child, 'an unusual command name');
      words.push(wordOf(inner));
    } else if (WORD_NODES.has(child.type)) {
      if (words.length === 0) refuse(child, 'a command without a name');
      words.push(wordOf(child));
    } else {
      refuse(child);
    }
  }
  if (words.length === 0) refuse(node, 'an empty command');
  out.push({ words, text: node.text, upstream: null });
}

/** The grammar reads `[ ... ]` as a test expression; it is the harmless `[` builtin with plain words. */
const TEST_PARTS = new Set(['unary_expression', 'binary_expression', 'parenthesized_expression', 'test_operator']);
function collectSingleBracketTest(node: SyntaxNode, out: SimpleCommand[]): void {
  if (!node.text.startsWith('[') || node.text.startsWith('[[')) refuse(node);
  const words: WordValue[] = [{ value: '[', glob: false }];
  const walk = (n: SyntaxNode) => {
    for (const child of n.namedChildren) {
      if (!child) continue;
      if (WORD_NODES.has(child.type)) words.push(wordOf(child));
      else if (TEST_PARTS.has(child.type)) { if (child.type === 'test_operator') words.push({ value: child.text, glob: false }); else walk(child); }
      else refuse(child);
    }
  };
  walk(node);
  out.push({ words, text: node.text, upstream: null });
}

/** Redirections that cannot change anything: output to /dev/null, and joining stderr and stdout. Returns whether stdin now reads /dev/null. */
function checkRedirect(node: SyntaxNode): boolean {
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
  const value = wordOf(target);
  if (value.glob) refuse(node, 'a redirection to a pattern');
  const toNull = value.value === '/dev/null' && ['>', '>>', '&>', '&>>', '<', '>|'].includes(operator);
  const joinStreams = operator === '>&' && (value.value === '1' || value.value === '2');
  if (!toNull && !joinStreams) refuse(node, 'a redirection other than to /dev/null or 2>&1 (the restricted shell writes no files)');
  return operator === '<';
}

function walkStatement(node: SyntaxNode, out: SimpleCommand[]): void {
  switch (node.type) {
    case 'comment':
      return;
    case 'command':
      collectCommand(node, out);
      return;
    case 'test_command':
      collectSingleBracketTest(node, out);
      return;
    case 'redirected_statement': {
      const [body, ...redirects] = node.namedChildren.filter((child): child is SyntaxNode => child !== null);
      if (!body || body.type !== 'command') refuse(node, 'a redirection of something other than a plain command');
      collectCommand(body, out);
      if (redirects.length === 0) refuse(node, 'an unusual redirection');
      const stdinFromNull = redirects.map(checkRedirect).some(Boolean);
      if (stdinFromNull) out[out.length - 1]!.upstream = null;
      return;
    }
    case 'pipeline': {
      // Each command reads the previous one's output (set after the walk, so "< /dev/null" on a
      // later command is overridden only when it comes after; bash applies redirections after pipes).
      let previous: SimpleCommand | null = null;
      for (const child of node.children) {
        if (!child) continue;
        if (!child.isNamed) {
          if (child.type !== '|') refuse(child, `the operator "${child.type}"`);
          continue;
        }
        const start = out.length;
        walkStatement(child, out);
        const first = out[start];
        if (first && previous && !redirectsStdin(child)) first.upstream = previous;
        previous = out[out.length - 1] ?? null;
      }
      return;
    }
    case 'list':
    case 'program':
      for (const child of node.children) {
        if (!child) continue;
        if (child.isNamed) walkStatement(child, out);
        else if (!['|', '&&', '||', ';'].includes(child.type)) refuse(child, `the operator "${child.type}"`);
      }
      return;
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
    walkStatement(root, commands);
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
  return statement.type === 'redirected_statement' && statement.namedChildren.some((child) => child?.type === 'file_redirect' && child.children.some((part) => part?.type === '<'));
}

function findError(node: SyntaxNode): SyntaxNode | null {
  if (node.type === 'ERROR' || node.isMissing) return node;
  for (const child of node.children) {
    const found = child ? findError(child) : null;
    if (found) return found;
  }
  return null;
}
