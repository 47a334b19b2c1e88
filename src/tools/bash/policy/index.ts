import { gitConfigRefusal, gitDirectoryArgs } from './git.js';
import { splitCommandLine, type SimpleCommand } from './grammar.js';
import {
  MAX_PATH_CANDIDATES,
  pathCandidates,
  resolveLogical,
  resolvedPathRefusal,
  resolvePhysical,
  treeCandidates,
  type PathUse,
  type RealPath,
  type Resolved,
} from './paths.js';
import type { RuleContext } from './rule-types.js';
import { commandRefusal } from './rules.js';
import { SAFE_WITH_ANY_ARGUMENTS } from './rule-types.js';
import { computedNamesRefusal } from './runners.js';
import type { WordValue } from './words.js';
import type { ShellNetwork } from '../bash-options.js';

/**
 * The restricted shell's policy (docs/guide/restricted-shell.md): a command line may run only when it parses as
 * plain commands joined by |, &&, || and ;, every command (also those run by env, timeout,
 * nice, command, xargs and find -exec) passes its rule, no word leads into a process's /proc
 * directory once symlinks are resolved, and git finds no programs in its repository's
 * configuration. Fails closed: anything not understood is refused, with the word or option named.
 */

export type PolicyDecision = { allowed: true } | { allowed: false; reason: string };

/** What the policy may look at on the machine that will run the command. */
export interface PolicyEnvironment {
  /** The physical directory the command starts in. */
  cwd: string;
  realpath: RealPath;
  /** The configuration keys git would use when run in `cwd` with these -C directories, or why they cannot be listed. */
  gitConfigKeys(cwd: string, directories: readonly string[]): Promise<string[] | { error: string }>;
  /** The profile's shell_network (default none). */
  network?: ShellNetwork;
  /**
   * Set when the command will run without the OS layer: the symbolic links below these
   * directories (not followed), each with the type of what it points to (find's %Y: d, f, N, L…),
   * so that links already inside a tree are checked before a pattern, recursion or data-driven
   * names could follow them (docs/guide/restricted-shell.md "Without bubblewrap").
   */
  findLinks?(roots: readonly string[]): Promise<Array<{ path: string; type: string }> | { error: string }>;
}

/** Marks a word bash may expand into file names, so that rules never take it as a script or command. */
const GLOB_MARK = '\0';
/** Commands that run another command or count operands: a pattern there could become anything. */
const NO_PATTERNS = new Set(['env', 'timeout', 'nice', 'command', 'xargs', 'uniq', 'xxd', 'hostname', 'date', 'cd']);
const MAX_NESTING = 8;
/** Working directories a line may have after its `cd`s (each possible one is checked). */
const MAX_WORKING_DIRECTORIES = 16;

class PolicyRefusal extends Error {}

/** Where a link found inside a tree may not lead (besides / itself). */
const DENIED_LINK_TARGETS = ['/proc', '/sys', '/dev/mem', '/dev/kmem', '/dev/port'];
const MAX_LINK_ROOTS = 256;
const MAX_LINK_ROUNDS = 8;
/** Commands that read through links they did not name: recursive searches, find, xargs and the newer search tools. */
const TREE_READERS = /^(find|xargs|rg|ag|ack|fd|fdfind|tree)$/;
const RECURSIVE_GREP = /^(z|bz|xz)?[ef]?grep$/;

/** Whether a command could open a file through a link inside a tree (a pattern, recursion, data-driven names). */
function followsLinksInTrees(command: SimpleCommand): boolean {
  const [name, ...args] = command.words;
  if (command.words.some((word) => word.glob || word.data || word.split)) return true;
  if (!name) return false;
  if (TREE_READERS.test(name.value)) return true;
  const values = args.map((word) => word.value);
  if (RECURSIVE_GREP.test(name.value)) return values.some((arg) => /^-[^-]*[rRd]/.test(arg) || /^--(r|de|di)/.test(arg));
  if (name.value === 'diff') return values.some((arg) => /^-[^-]*r/.test(arg) || /^--rec/.test(arg));
  if (['env', 'timeout', 'nice', 'command'].includes(name.value))
    return followsLinksInTrees({ ...command, words: args.filter((word) => !word.value.startsWith('-')) });
  return false;
}

/** Refusals that need no file system: the word "environ", and file patterns that could reach /proc. */
function wordRefusal(word: WordValue, cwds: readonly string[]): string | null {
  if (/environ/i.test(word.value)) return `the word ${JSON.stringify(word.value)} refers to a process environment (secrets)`;
  if (!word.glob) return null;
  const components = word.value.split('/');
  const firstIsPattern = /[*?[]/.test(word.value.startsWith('/') ? (components[1] ?? '') : (components[0] ?? ''));
  if (components.includes('proc') || components.includes('..') || (firstIsPattern && (word.value.startsWith('/') || cwds.includes('/')))) {
    return `the pattern ${JSON.stringify(word.value)} may reach /proc (process environments); name the files without a pattern`;
  }
  return null;
}

/** The directory part of a file pattern before its first wildcard ("logs/*.log" -> "logs"). */
function patternPrefix(pattern: string): string {
  const components = pattern.split('/');
  const first = components.findIndex((component) => /[*?[]/.test(component));
  const prefix = components.slice(0, first).join('/');
  return prefix === '' ? (pattern.startsWith('/') ? '/' : '.') : prefix;
}

/** `cd DIR` (also as `command cd DIR`): its operand, or null when the command is not a cd. */
function cdTarget(argv: readonly string[]): string | null | undefined {
  let words = argv;
  if (words[0] === 'command') words = words.slice(1).filter((word, i) => !(i === 0 && word === '-p'));
  if (words[0] !== 'cd') return undefined;
  const args = words.slice(1);
  const end = args.indexOf('--');
  const operands = end >= 0 ? args.slice(end + 1) : args.filter((word) => !/^-[LPe@]+$/.test(word));
  return operands[0] ?? null;
}

class Checker {
  private readonly resolved = new Map<string, Resolved>();
  private cwds: string[];

  /**
   * Without an environment the checker knows no paths: only the checks that need no file
   * system run, and path rules refuse nothing (see staticRefusal).
   */
  constructor(
    private readonly environment: PolicyEnvironment | null,
    private readonly network: ShellNetwork = environment?.network ?? 'none',
  ) {
    this.cwds = [environment?.cwd ?? '.'];
  }

  private key(cwd: string, candidate: string): string {
    return `${cwd}\0${candidate}`;
  }

  /** Follows the line's `cd`s: every directory it may be in afterwards (a cd may fail or sit in a pipe). */
  async trackDirectories(commands: readonly SimpleCommand[]): Promise<void> {
    for (const command of commands) {
      const target = cdTarget(command.words.map((word) => word.value));
      if (target === undefined) continue;
      if (target === null || target === '-') throw new PolicyRefusal('cd: name the directory (cd alone or cd - goes to a directory the check cannot see)');
      const next: string[] = [];
      for (const cwd of this.cwds) {
        for (const resolve of [resolvePhysical, resolveLogical]) {
          const found = await resolve(target, cwd, this.requireEnvironment().realpath);
          if (found.path === '/proc' || found.path.startsWith('/proc/'))
            throw new PolicyRefusal(`cd: ${JSON.stringify(target)} leads to ${found.path}, inside /proc (process environments hold secrets)`);
          if (found.exists) next.push(found.path);
        }
      }
      this.cwds = [...new Set([...this.cwds, ...next])];
      if (this.cwds.length > MAX_WORKING_DIRECTORIES)
        throw new PolicyRefusal('too many cd commands to follow; run the commands in separate calls or use working_dir');
    }
  }

  /**
   * Without the OS layer, a pattern, a recursive read or names from data could follow a link
   * that already sits in a tree into /proc (another process's environment) or to / (and from
   * there anywhere). So the trees such a command line can reach are searched for links first,
   * links to directories are followed as grep -R would, and the line is refused when any link
   * leads to /, /proc, /sys or a memory device, or when the search is too large to finish.
   */
  async checkLinksBelow(commands: readonly SimpleCommand[]): Promise<void> {
    const findLinks = this.environment?.findLinks;
    if (!findLinks || !commands.some(followsLinksInTrees)) return;
    const roots = new Set<string>(this.cwds);
    for (const found of this.resolved.values()) if (found.exists) roots.add(found.path);
    const scanned = new Set<string>();
    let queue = [...roots].filter((root) => root !== '/');
    for (let round = 0; queue.length > 0; round++) {
      if (round >= MAX_LINK_ROUNDS || scanned.size + queue.length > MAX_LINK_ROOTS)
        throw new PolicyRefusal(
          `without bubblewrap, the symbolic links below this command's directories must be checked, and there are too many directories behind links (more ` +
            `than ${MAX_LINK_ROOTS}); name the files, or install bubblewrap`,
        );
      for (const root of queue) scanned.add(root);
      const links = await findLinks(queue);
      if (!Array.isArray(links))
        throw new PolicyRefusal(
          `without bubblewrap, the symbolic links below this command's directories must be checked first, and that failed (${links.error}); name the files, ` +
            `or install bubblewrap`,
        );
      const next: string[] = [];
      for (const link of links) {
        const target = await this.requireEnvironment().realpath(link.path);
        if (target === null) continue; // dangling: nothing to read
        if (target === '/' || DENIED_LINK_TARGETS.some((top) => target === top || target.startsWith(`${top}/`))) {
          throw new PolicyRefusal(
            `the symbolic link ${JSON.stringify(link.path)} leads to ${target}; without bubblewrap a pattern, recursive read or name from data could follow ` +
              `it into /proc (other processes' environments hold secrets), so this command is refused; name the files, or install bubblewrap`,
          );
        }
        const why = resolvedPathRefusal(link.path, { path: target, exists: true }, 'read');
        if (why) throw new PolicyRefusal(why);
        if (link.type === 'd' && ![...scanned].some((root) => target === root || target.startsWith(`${root}/`))) next.push(target);
      }
      queue = [...new Set(next)];
    }
  }

  /** Resolves every string of every word that could be a path, from every possible directory, and refuses those inside /proc. */
  async checkPaths(commands: readonly SimpleCommand[]): Promise<void> {
    // candidate -> the word it came from and how it is used (a pattern's directory is read whole).
    const candidates = new Map<string, { word: string; use: PathUse }>([['.', { word: '.', use: 'read' }]]);
    for (const command of commands) {
      for (const word of [...command.words.slice(1), ...command.reads]) {
        if (word.pipe) continue; // a process substitution's /dev/fd name: a pipe, not a file
        const why = wordRefusal(word, this.cwds);
        if (why) throw new PolicyRefusal(why);
        if (word.glob) candidates.set(patternPrefix(word.value), { word: word.value, use: 'tree' });
        for (const candidate of word.glob ? [] : pathCandidates(word.value)) {
          if (!candidates.has(candidate)) candidates.set(candidate, { word: word.value, use: 'read' });
        }
      }
    }
    if (candidates.size * this.cwds.length > MAX_PATH_CANDIDATES)
      throw new PolicyRefusal(`the command has too many words to check (more than ${MAX_PATH_CANDIDATES} possible paths); split it`);
    for (const cwd of this.cwds) {
      for (const [candidate, { word, use }] of candidates) {
        const found = await resolvePhysical(candidate, cwd, this.requireEnvironment().realpath);
        this.resolved.set(this.key(cwd, candidate), found);
        const why = resolvedPathRefusal(word, found, use);
        if (why) throw new PolicyRefusal(why);
      }
    }
  }

  private requireEnvironment(): PolicyEnvironment {
    if (!this.environment) throw new Error('the shell policy needs an environment for path checks');
    return this.environment;
  }

  treeRefusal(command: string, words: readonly string[], options: { includeCwd?: boolean; allowRoot?: boolean } = {}): string | null {
    if (!this.environment) return null;
    const checks: Array<[string, string]> = words.flatMap((marked) => {
      const word = marked.replaceAll(GLOB_MARK, '');
      const strings = marked.startsWith(GLOB_MARK) ? [patternPrefix(word)] : treeCandidates(word);
      return strings.map((candidate): [string, string] => [word, candidate]);
    });
    if (options.includeCwd) checks.push(['.', '.']);
    for (const cwd of this.cwds) {
      for (const [word, candidate] of checks) {
        const found = this.resolved.get(this.key(cwd, candidate));
        if (!found) return `${command}: ${JSON.stringify(word)} could not be checked`;
        if (options.allowRoot && found.path === '/') continue;
        const why = resolvedPathRefusal(word, found, 'tree');
        if (why) return `${command}: ${why}`;
      }
    }
    return null;
  }

  checkCommand(command: SimpleCommand): string | null {
    const [name] = command.words;
    if (name?.glob && name.value !== '[') return `the command name ${JSON.stringify(name.value)} is a file pattern`;
    if (name && NO_PATTERNS.has(name.value)) {
      const pattern = command.words.find((word) => word.glob);
      if (pattern)
        return `${name.value}: the file pattern ${JSON.stringify(pattern.value)} is refused here (it could expand into a command or an extra operand)`;
    }
    const upstream: string[][] = [];
    for (let from = command.upstream; from; from = from.upstream) upstream.push(from.words.map((word) => word.value));
    const argv = command.words.map((word, index) => (word.glob && index > 0 ? GLOB_MARK + word.value : word.value));
    const check = (nested: string[], dataDriven: boolean, depth: number): string | null => {
      if (depth > MAX_NESTING) return 'commands nested too deeply';
      const context: RuleContext = {
        checkNested: (inner, innerDataDriven) => check(inner, innerDataDriven, depth + 1),
        dataDriven,
        treeRefusal: (name, words, options) => this.treeRefusal(name, words, options),
        upstream,
        network: this.network,
      };
      return commandRefusal(nested, context);
    };
    const why = check(argv, false, 0) ?? this.computedRefusal(command, argv, check, upstream);
    return why ? `${why.replaceAll(GLOB_MARK, '')} (in: ${command.text})` : null;
  }

  /**
   * Words computed at run time (docs/guide/restricted-shell.md "Loops, conditions and substitutions"): a substitution's output, or a
   * loop variable holding file names left unquoted, could become any words, options included.
   * Like xargs input, they may only reach commands that are harmless whatever their arguments,
   * and commands that print file contents only take names from a names producer.
   */
  private computedRefusal(
    command: SimpleCommand,
    argv: string[],
    check: (nested: string[], dataDriven: boolean, depth: number) => string | null,
    upstream: string[][],
  ): string | null {
    const [name, ...args] = command.words;
    if (name && (name.data || name.split)) return 'the command name is computed at run time';
    const computed = args.filter((word) => word.data || word.split);
    if (computed.length === 0) return null;
    const what = computed.some((word) => word.data?.some((chain) => chain.length > 0))
      ? 'the output of a command substitution'
      : 'an unquoted loop variable holding file names (quote it: "$NAME")';
    if (!SAFE_WITH_ANY_ARGUMENTS.has(argv[0]!)) {
      return (
        `${argv[0]}: ${what} could become any arguments here, and the check cannot prove that safe; only commands that are harmless whatever their ` +
        `arguments take it (${[...SAFE_WITH_ANY_ARGUMENTS].join(', ')})`
      );
    }
    const nested = check(argv, true, 0);
    if (nested) return nested;
    const context: RuleContext = {
      checkNested: (inner, dataDriven) => check(inner, dataDriven, 1),
      dataDriven: true,
      treeRefusal: (n, words, options) => this.treeRefusal(n, words, options),
      upstream,
      network: this.network,
    };
    for (const chain of computed.flatMap((word) => word.data ?? [])) {
      const why = computedNamesRefusal(`${argv[0]} $(...)`, argv[0]!, chain, context);
      if (why) return why;
    }
    return null;
  }

  /** git would run the repository's configured programs: list its configuration keys first. */
  async checkGitConfiguration(command: SimpleCommand): Promise<void> {
    const words = command.words.map((word) => word.value);
    for (let i = 0; i < words.length; i++) {
      if (words[i] !== 'git') continue;
      for (const cwd of this.cwds) {
        const keys = await this.requireEnvironment().gitConfigKeys(cwd, gitDirectoryArgs(words.slice(i + 1)));
        if (!Array.isArray(keys)) throw new PolicyRefusal(`git: the repository's configuration could not be read, so git is refused: ${keys.error}`);
        const why = gitConfigRefusal(keys);
        if (why) throw new PolicyRefusal(why);
      }
    }
  }
}

/**
 * The checks that need no file system (grammar, allowlist, options, programs), with path rules
 * refusing nothing. Path rules only ever add refusals, so this never allows what
 * checkRestrictedCommand refuses; it lets an obviously refused line be refused before anything
 * reaches the backend (a remote sandbox is not even created for it).
 */
export async function staticRefusal(commandLine: string, network: ShellNetwork = 'none'): Promise<string | null> {
  const split = await splitCommandLine(commandLine);
  if (!split.ok) return split.reason;
  const checker = new Checker(null, network);
  for (const command of split.commands) {
    const why = checker.checkCommand(command);
    if (why) return why;
  }
  return null;
}

export async function checkRestrictedCommand(commandLine: string, environment: PolicyEnvironment): Promise<PolicyDecision> {
  const split = await splitCommandLine(commandLine);
  if (!split.ok) return { allowed: false, reason: split.reason };
  const checker = new Checker(environment);
  try {
    await checker.trackDirectories(split.commands);
    await checker.checkPaths(split.commands);
    await checker.checkLinksBelow(split.commands);
    for (const command of split.commands) {
      const why = checker.checkCommand(command);
      if (why) return { allowed: false, reason: why };
    }
    for (const command of split.commands) await checker.checkGitConfiguration(command);
  } catch (error) {
    if (error instanceof PolicyRefusal) return { allowed: false, reason: error.message };
    throw error;
  }
  return { allowed: true };
}
