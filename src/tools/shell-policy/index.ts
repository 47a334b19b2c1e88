import { gitConfigRefusal, gitDirectoryArgs } from './git.js';
import { splitCommandLine, type SimpleCommand } from './grammar.js';
import { MAX_PATH_CANDIDATES, pathCandidates, resolveLogical, resolvedPathRefusal, resolvePhysical, treeCandidates, type PathUse, type RealPath, type Resolved } from './paths.js';
import type { RuleContext } from './rule-types.js';
import { commandRefusal } from './rules.js';
import type { WordValue } from './words.js';
import type { ShellNetwork } from '../../profiles/schema.js';

/**
 * The restricted shell's policy (SPEC §11.1): a command line may run only when it parses as
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
}

/** Marks a word bash may expand into file names, so that rules never take it as a script or command. */
const GLOB_MARK = '\0';
/** Commands that run another command or count operands: a pattern there could become anything. */
const NO_PATTERNS = new Set(['env', 'timeout', 'nice', 'command', 'xargs', 'uniq', 'xxd', 'hostname', 'date', 'cd']);
const MAX_NESTING = 8;
/** Working directories a line may have after its `cd`s (each possible one is checked). */
const MAX_WORKING_DIRECTORIES = 16;

class PolicyRefusal extends Error {}

/** Refusals that need no file system: the word "environ", and file patterns that could reach /proc. */
function wordRefusal(word: WordValue, cwds: readonly string[]): string | null {
  if (/environ/i.test(word.value)) return `the word ${JSON.stringify(word.value)} refers to a process environment (secrets)`;
  if (!word.glob) return null;
  const components = word.value.split('/');
  const firstIsPattern = /[*?[]/.test(word.value.startsWith('/') ? components[1] ?? '' : components[0] ?? '');
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
  constructor(private readonly environment: PolicyEnvironment | null, private readonly network: ShellNetwork = environment?.network ?? 'none') {
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
          if (found.path === '/proc' || found.path.startsWith('/proc/')) throw new PolicyRefusal(`cd: ${JSON.stringify(target)} leads to ${found.path}, inside /proc (process environments hold secrets)`);
          if (found.exists) next.push(found.path);
        }
      }
      this.cwds = [...new Set([...this.cwds, ...next])];
      if (this.cwds.length > MAX_WORKING_DIRECTORIES) throw new PolicyRefusal('too many cd commands to follow; run the commands in separate calls or use working_dir');
    }
  }

  /** Resolves every string of every word that could be a path, from every possible directory, and refuses those inside /proc. */
  async checkPaths(commands: readonly SimpleCommand[]): Promise<void> {
    // candidate -> the word it came from and how it is used (a pattern's directory is read whole).
    const candidates = new Map<string, { word: string; use: PathUse }>([['.', { word: '.', use: 'read' }]]);
    for (const command of commands) {
      for (const word of command.words.slice(1)) {
        const why = wordRefusal(word, this.cwds);
        if (why) throw new PolicyRefusal(why);
        if (word.glob) candidates.set(patternPrefix(word.value), { word: word.value, use: 'tree' });
        for (const candidate of word.glob ? [] : pathCandidates(word.value)) {
          if (!candidates.has(candidate)) candidates.set(candidate, { word: word.value, use: 'read' });
        }
      }
    }
    if (candidates.size * this.cwds.length > MAX_PATH_CANDIDATES) throw new PolicyRefusal(`the command has too many words to check (more than ${MAX_PATH_CANDIDATES} possible paths); split it`);
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
      if (pattern) return `${name.value}: the file pattern ${JSON.stringify(pattern.value)} is refused here (it could expand into a command or an extra operand)`;
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
    const why = check(argv, false, 0);
    return why ? `${why.replaceAll(GLOB_MARK, '')} (in: ${command.text})` : null;
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
