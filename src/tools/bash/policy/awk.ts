/**
 * Which awk programs may run in the restricted shell: programs that only compute and print.
 * Refused: system(), pipes (`print | "cmd"`, `"cmd" | getline`, gawk's `|&`), output redirection
 * (`print > "file"`, `>>`), `getline < file` and ARGV/ARGC (files named at run time, such as
 * another process's /proc/PID/environ), gawk's @load/@include/@indirect calls and /inet files.
 *
 * The program is tokenised the way awk's own lexer does it, because a scanner that disagrees
 * with awk about where a string or a regex ends can be made to skip code: "/" is a regex where
 * awk expects an operand and a division after one; where awk's own choice is not obvious (after
 * `++`, `--`, getline or `in`), or where gawk and mawk could end a regex in different places,
 * the program is refused instead of guessed.
 */

type Previous = 'operand' | 'operator' | 'ambiguous';

/** Keywords after which awk expects an expression, so "/" starts a regex. */
const EXPRESSION_KEYWORDS = new Set(['print', 'printf', 'return', 'case', 'do', 'else', 'exit', 'if', 'while', 'for', 'delete']);
/** Keywords whose parenthesised condition is followed by a statement (where "/" starts a regex). */
const CONDITION_KEYWORDS = new Set(['if', 'while', 'for']);
/** Tokens after which a line break does not end the statement (awk reads on). */
const CONTINUES_AFTER = new Set([',', '&&', '||', 'do', 'else', '{']);
/** Words after which "/" could be read either way by awk's grammar. */
const AMBIGUOUS_WORDS = new Set(['getline', 'in']);

class AwkRefusal extends Error {}

function refuse(why: string): never {
  throw new AwkRefusal(`awk: ${why}`);
}

/** Index just after the string that starts at `start` (a `"`). */
function skipString(program: string, start: number): number {
  let i = start + 1;
  while (i < program.length) {
    const c = program[i]!;
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '\n') break;
    if (c === '"') return i + 1;
    i += 1;
  }
  return refuse('a string that does not end on its line');
}

/** Index just after the regex literal that starts at `start` (a `/`); refuses one awks could end differently. */
function skipRegex(program: string, start: number): number {
  // Where a lexer that ignores brackets ends it (mawk's older rule) ...
  let naive = start + 1;
  while (naive < program.length && program[naive] !== '/') {
    if (program[naive] === '\n') refuse('a regular expression that does not end on its line');
    naive += program[naive] === '\\' ? 2 : 1;
  }
  // ... and where a bracket-aware one does (gawk's: "/" inside [...] does not end it).
  let i = start + 1;
  while (i < program.length && program[i] !== '/') {
    const c = program[i]!;
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '[') {
      i += 1;
      if (program[i] === '^') i += 1;
      if (program[i] === ']') i += 1;
      while (i < program.length && program[i] !== ']') {
        if (program[i] === '[' && /[:.=]/.test(program[i + 1] ?? '')) {
          const close = program.indexOf(`${program[i + 1]}]`, i + 2);
          i = close < 0 ? program.length : close + 2;
          continue;
        }
        if (program[i] === '\n') refuse('a regular expression that does not end on its line');
        i += program[i] === '\\' ? 2 : 1;
      }
    }
    i += 1;
  }
  if (naive >= program.length || i >= program.length) refuse('a regular expression that does not end');
  if (naive !== i) refuse('a "/" inside [...] of a regular expression (awks disagree where it ends); write it as \\/');
  return i + 1;
}

function check(program: string): void {
  if (program.includes('\0')) refuse('the program is not plain text (a file pattern cannot be a program)');
  if (program.includes('/inet')) refuse("gawk's /inet special files open network connections");
  let previous: Previous = 'operator';
  let depth = 0;
  /** Parenthesis depth at which the current print/printf statement started. */
  let printDepth: number | null = null;
  /** Whether the current statement has a getline (then "<" would name a file to read). */
  let getline = false;
  /** For each open parenthesis: whether it holds an if/while/for condition (after its ")" a statement starts). */
  const parens: boolean[] = [];
  /** The last word or operator, to tell a line break that ends a statement from one that continues it. */
  let last = '';
  let i = 0;
  const endStatement = () => {
    printDepth = null;
    getline = false;
    previous = 'operator';
  };
  while (i < program.length) {
    const ch = program[i]!;
    if (ch === ' ' || ch === '\t' || ch === '\r') {
      i += 1;
      continue;
    }
    if (ch === '\\') {
      const next = program[i + 1] === '\r' ? program[i + 2] : program[i + 1];
      if (next !== '\n') refuse('a backslash outside a string or regular expression');
      i += program[i + 1] === '\r' ? 3 : 2; // a line continuation: awk reads on as if on one line
      continue;
    }
    if (ch === '\n' && CONTINUES_AFTER.has(last)) {
      i += 1;
      continue;
    }
    if (ch === '\n' || ch === ';' || ch === '{' || ch === '}') {
      endStatement();
      last = ch;
      i += 1;
      continue;
    }
    if (ch === '#') {
      while (i < program.length && program[i] !== '\n') i += 1;
      continue;
    }
    if (ch === '"') {
      i = skipString(program, i);
      previous = 'operand';
      last = '"';
      continue;
    }
    if (ch === '/') {
      last = '/';
      if (previous === 'operator') {
        i = skipRegex(program, i);
        previous = 'operand';
        continue;
      }
      if (previous === 'ambiguous') refuse('a "/" right after ++, --, getline or "in" (a division or a regex?); add parentheses');
      i += program[i + 1] === '=' ? 2 : 1;
      previous = 'operator';
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      let end = i;
      while (end < program.length && /[A-Za-z0-9_]/.test(program[end]!)) end += 1;
      const word = program.slice(i, end);
      if (word === 'system') refuse('system() runs shell commands');
      if (word === 'ARGV' || word === 'ARGC') refuse('ARGV and ARGC change which files awk reads (name the files as operands)');
      if (word === 'print' || word === 'printf') printDepth = depth;
      if (word === 'getline') getline = true;
      previous = EXPRESSION_KEYWORDS.has(word) ? 'operator' : AMBIGUOUS_WORDS.has(word) ? 'ambiguous' : 'operand';
      last = word;
      i = end;
      continue;
    }
    const number = /^(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/.exec(program.slice(i, i + 64));
    if (number) {
      i += number[0].length;
      previous = 'operand';
      last = '0';
      continue;
    }
    if (ch === '@') refuse('@load, @include and @-indirect calls (gawk extensions, files and computed function names) are refused');
    if (ch === '|') {
      if (program[i + 1] === '|') {
        i += 2;
        previous = 'operator';
        last = '||';
        continue;
      }
      refuse('a pipe ("|") runs a shell command');
    }
    if (ch === '>' && printDepth !== null && depth <= printDepth) {
      refuse('output redirection in print/printf writes a file (put comparisons in parentheses: print (a > b))');
    }
    if (ch === '<' && getline) refuse('getline < FILE reads a file named at run time (name the files as operands)');
    if ((ch === '+' || ch === '-') && program[i + 1] === ch) {
      i += 2;
      previous = 'ambiguous';
      last = ch + ch;
      continue;
    }
    if (!/[()[\]$,!~=*%^?:&<>+-]/.test(ch)) refuse(`the character ${JSON.stringify(ch)} is not part of awk's syntax`);
    previous = ch === ']' ? 'operand' : 'operator';
    if (ch === '(') parens.push(CONDITION_KEYWORDS.has(last));
    if (ch === '(' || ch === '[') depth += 1;
    if (ch === ')' || ch === ']') depth -= 1;
    if (ch === ')') previous = parens.pop() ? 'operator' : 'operand';
    const two = program.slice(i, i + 2);
    last = two === '&&' || two === '||' ? two : ch;
    i += two === '&&' ? 2 : 1;
  }
}

export function awkProgramRefusal(program: string): string | null {
  try {
    check(program);
    return null;
  } catch (error) {
    if (error instanceof AwkRefusal) return error.message;
    throw error;
  }
}
