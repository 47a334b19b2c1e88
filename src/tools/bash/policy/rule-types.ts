import type { ShellNetwork } from '../bash-options.js';

/** What a command rule may ask of the policy while it checks one command (docs/guide/restricted-shell.md). */
export interface RuleContext {
  /** Checks a command that this one runs (env CMD, xargs CMD, find -exec CMD) with all the rules. */
  checkNested(argv: string[], dataDriven: boolean): string | null;
  /** The command's operands come partly from data (run by xargs or find -exec): options that reach further are refused. */
  dataDriven: boolean;
  /**
   * Why reading everything below one of these words is refused (it resolves to /, /proc or a
   * process's directory), or null; with `includeCwd`, the working directory counts as one of
   * them (a recursive command without operands reads it); with `allowRoot`, / itself is accepted
   * (find -xdev never enters /proc, another file system).
   */
  treeRefusal(command: string, words: readonly string[], options?: { includeCwd?: boolean; allowRoot?: boolean }): string | null;
  /** The commands whose output this one reads through pipes, nearest first (empty: it reads /dev/null). */
  upstream: string[][];
  /** The profile's shell_network: what the command may reach over the network. */
  network: ShellNetwork;
}

export type Rule = (args: string[], context: RuleContext) => string | null;

/**
 * Commands that are harmless whatever arguments follow: the only ones xargs and find -exec may
 * run, since there the arguments come from data (file names, input lines) nobody has checked.
 * Their rules still run (grep refuses recursion there).
 */
export const SAFE_WITH_ANY_ARGUMENTS = new Set([
  'cat',
  'head',
  'tail',
  'grep',
  'egrep',
  'fgrep',
  'wc',
  'ls',
  'stat',
  'du',
  'md5sum',
  'sha1sum',
  'sha224sum',
  'sha256sum',
  'sha384sum',
  'sha512sum',
  'b2sum',
  'cksum',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'echo',
  'test',
  'nl',
  'od',
  'hexdump',
  'strings',
  'cmp',
  'zcat',
  'bzcat',
  'xzcat',
  'tac',
  'rev',
  'cut',
  'tr',
  'column',
  'true',
  'false',
  '[',
]);
