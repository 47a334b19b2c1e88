/**
 * Which awk programs may run in the restricted shell: any program that only computes and
 * prints. Refused: system(), pipes (`print | "cmd"`, `"cmd" | getline`, gawk's `|&`), output
 * redirection (`print > "file"`, `>>`), and gawk's @load/@include. The scan skips string and
 * regex literals; when it cannot tell a regex from a division it reads the text as code, so a
 * misreading can only refuse more, never less.
 */

/** Tokens after which "/" is a division in awk (an operand just ended). */
function endsOperand(previous: string): boolean {
  return /^[A-Za-z0-9_$\])]$/.test(previous) || previous === '++' || previous === '--';
}

export function awkProgramRefusal(program: string): string | null {
  if (program.includes('\0')) return 'awk: the program is not plain text (a file pattern cannot be a program)';
  if (program.includes('/inet')) return 'awk: gawk\'s /inet special files open network connections';
  let previous = '';
  /** Parenthesis depth, and the depth at which the current print/printf statement started. */
  let depth = 0;
  let printDepth: number | null = null;
  let i = 0;
  while (i < program.length) {
    const ch = program[i]!;
    if (ch === '"') {
      i += 1;
      while (i < program.length && program[i] !== '"') i += program[i] === '\\' ? 2 : 1;
      i += 1;
      previous = 'x';
      continue;
    }
    if (ch === '#') {
      while (i < program.length && program[i] !== '\n') i += 1;
      continue;
    }
    if (ch === '/' && !endsOperand(previous)) {
      // A regex literal: skip to its closing unescaped "/" (bracket expressions may hold "/").
      i += 1;
      let inBracket = false;
      while (i < program.length) {
        const c = program[i]!;
        if (c === '\\') { i += 2; continue; }
        if (c === '\n') return 'awk: a regular expression that does not end on its line';
        if (inBracket) { if (c === ']') inBracket = false; }
        else if (c === '[') inBracket = true;
        else if (c === '/') break;
        i += 1;
      }
      i += 1;
      previous = 'x';
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      let end = i;
      while (end < program.length && /[A-Za-z0-9_]/.test(program[end]!)) end += 1;
      const word = program.slice(i, end);
      if (word === 'system') return 'awk: system() runs shell commands';
      if (word === 'print' || word === 'printf') printDepth = depth;
      previous = 'x';
      i = end;
      continue;
    }
    if (ch === '@') return 'awk: @load/@include (gawk extensions and files) are refused';
    if (ch === '|') {
      if (program[i + 1] === '|') { i += 2; previous = '||'; continue; }
      return 'awk: a pipe ("|") runs a shell command';
    }
    if (ch === '>' && printDepth !== null && depth <= printDepth) {
      return 'awk: output redirection in print/printf writes a file (put comparisons in parentheses: print (a > b))';
    }
    if (ch === '(' || ch === '[') depth += 1;
    if (ch === ')' || ch === ']') depth -= 1;
    if (ch === ';' || ch === '\n' || ch === '{' || ch === '}') printDepth = null;
    if (!/\s/.test(ch)) {
      const two = program.slice(i, i + 2);
      if (two === '++' || two === '--') { previous = two; i += 2; continue; }
      previous = ch;
    }
    i += 1;
  }
  return null;
}
