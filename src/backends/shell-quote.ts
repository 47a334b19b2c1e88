/**
 * Quoting for a POSIX shell (sh, dash, bash): a remote backend only has a command line to
 * run, so every argument of an argument vector is quoted to reach the program unchanged.
 */

/** One argument as a single-quoted word: everything inside '...' is literal except the quote itself. */
export function shellQuote(arg: string): string {
  if (arg.includes('\0')) throw new Error(`an argument contains a NUL byte, which no command line can carry: ${JSON.stringify(arg)}`);
  // Bare words stay readable; "=" is excluded since a first word with "=" is an assignment.
  if (/^[A-Za-z0-9_@%+:,./-]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** An argument vector as one command line. */
export function shellCommandLine(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
