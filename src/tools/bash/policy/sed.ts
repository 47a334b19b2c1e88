/**
 * Which sed scripts may run in the restricted shell: everything except the commands and flags
 * that write files or run programs (`w`, `W`, `e`, and the `w`/`e` flags of `s`). The script is
 * parsed command by command like GNU sed does; anything not understood is refused.
 */

const SIMPLE_COMMANDS = new Set(['p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'z', '=', 'F', '{', '}']);
const WITH_NUMBER = new Set(['q', 'Q', 'l', 'L']);
const WITH_LABEL = new Set(['b', 't', 'T', ':', 'v']);
const TEXT_COMMANDS = new Set(['a', 'i', 'c']);
const READ_COMMANDS = new Set(['r', 'R']);

export function sedScriptRefusal(script: string): string | null {
  let i = 0;
  const n = script.length;
  const skipBlank = () => {
    while (i < n && (script[i] === ' ' || script[i] === '\t')) i += 1;
  };
  /** Reads a delimited part (regex or replacement) ending at an unescaped `delimiter`. */
  const delimited = (delimiter: string): boolean => {
    while (i < n) {
      const c = script[i]!;
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '\n' && delimiter !== '\n') return false;
      if (c === delimiter) {
        i += 1;
        return true;
      }
      i += 1;
    }
    return false;
  };
  const address = (): string | null => {
    const c = script[i];
    if (c === undefined) return null;
    if (/[0-9]/.test(c)) {
      while (i < n && /[0-9~]/.test(script[i]!)) i += 1;
      return null;
    }
    if (c === '$') {
      i += 1;
      return null;
    }
    if (c === '/' || c === '\\') {
      let delimiter = '/';
      if (c === '\\') {
        delimiter = script[i + 1] ?? '';
        i += 1;
      }
      i += 1;
      if (!delimiter || !delimited(delimiter)) return 'sed: an address regex that does not end';
      while (i < n && (script[i] === 'I' || script[i] === 'M')) i += 1;
    }
    return null;
  };
  while (i < n) {
    while (i < n && /[\s;]/.test(script[i]!)) i += 1;
    if (i >= n) break;
    if (script[i] === '#') {
      while (i < n && script[i] !== '\n') i += 1;
      continue;
    }
    const first = address();
    if (first) return first;
    skipBlank();
    if (script[i] === ',') {
      i += 1;
      skipBlank();
      if (script[i] === '+' || script[i] === '~') i += 1;
      const second = address();
      if (second) return second;
      skipBlank();
    }
    while (script[i] === '!' || script[i] === ' ') i += 1;
    const command = script[i];
    if (command === undefined) return 'sed: an address without a command';
    i += 1;
    if (command === 'w' || command === 'W') return `sed: the "${command}" command writes a file`;
    if (command === 'e') return 'sed: the "e" command runs a shell command';
    if (SIMPLE_COMMANDS.has(command)) continue;
    if (WITH_NUMBER.has(command)) {
      skipBlank();
      while (i < n && /[0-9]/.test(script[i]!)) i += 1;
      continue;
    }
    if (WITH_LABEL.has(command) || TEXT_COMMANDS.has(command) || READ_COMMANDS.has(command)) {
      // Labels end at ";" or a line break; texts and file names run to the end of the line.
      // A label that ends earlier than we think leaves more text to check, never less.
      const isLabel = WITH_LABEL.has(command);
      if (isLabel) skipBlank();
      while (i < n && script[i] !== '\n' && !(isLabel && /[;\s]/.test(script[i]!))) i += 1;
      continue;
    }
    if (command === 's' || command === 'y') {
      const delimiter = script[i];
      if (delimiter === undefined || delimiter === '\n' || delimiter === '\\') return `sed: a malformed "${command}" command`;
      i += 1;
      if (!delimited(delimiter) || !delimited(delimiter)) return `sed: an unterminated "${command}" command`;
      if (command === 's') {
        while (i < n && !/[\s;}]/.test(script[i]!)) {
          const flag = script[i]!;
          if (flag === 'w') return 'sed: the "w" flag of "s" writes a file';
          if (flag === 'e') return 'sed: the "e" flag of "s" runs the pattern space as a shell command';
          if (!/[gpiImM0-9]/.test(flag)) return `sed: the "s" flag "${flag}" is not understood`;
          i += 1;
        }
      }
      continue;
    }
    return `sed: the command "${command}" is not understood by the restricted shell`;
  }
  return null;
}
