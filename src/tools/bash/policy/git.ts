import { scanOptions } from './options.js';
import type { Rule } from './rule-types.js';

/**
 * git in the restricted shell (docs/guide/restricted-shell.md): read subcommands only; no configuration from the
 * command line, alternative programs, pagers, output files or reads outside the repository.
 *
 * A repository's own configuration can also name programs that read commands run: an external
 * diff (diff.external, diff.<driver>.command), text conversions (diff.<driver>.textconv, used by
 * diff, log -p, show and blame), clean/smudge filters (run by status, diff and blame to hash
 * work-tree files; `--no-ext-diff --no-textconv` does not stop them) and a work tree elsewhere
 * (core.worktree, possibly /). Checked with git 2.39: an empty filter.<driver>.process disables
 * the filter, but an empty diff command makes git fail ("cannot run"), so overriding is not
 * enough. Decision: before a git command runs, its repository's configuration keys are listed
 * (`git config --list --name-only`, which runs no programs and follows includes) and git is
 * refused where any of them names such a program. Programs that can be switched off for every
 * repository are switched off in the environment instead (shell-environment.ts: core.fsmonitor,
 * core.pager, gpg.*program, log.showSignature, protocol.allow, submodule recursion).
 */

/** Configuration keys (lower-cased by git) that make read commands run programs or read outside the repository. */
export const GIT_PROGRAM_KEYS: Array<[RegExp, string]> = [
  [/^diff\.external$/, 'an external diff program'],
  [/^diff\..+\.(command|textconv)$/, 'a diff driver program'],
  [/^filter\..+\.(clean|smudge|process)$/, 'a clean/smudge filter program'],
  [/^core\.worktree$/, 'a work tree outside the repository'],
];

export function gitConfigRefusal(keys: readonly string[]): string | null {
  for (const key of keys) {
    const hit = GIT_PROGRAM_KEYS.find(([pattern]) => pattern.test(key.toLowerCase()));
    if (hit)
      return (
        `git: this repository's configuration sets ${key} (${hit[1]}), which git would run or follow on a read command; the restricted shell runs no ` +
        `git here (use the read and grep tools, or plain diff)`
      );
  }
  return null;
}

/** The -C directories of a git command line, in order (git applies them one after another). */
export function gitDirectoryArgs(args: readonly string[]): string[] {
  const dirs: string[] = [];
  for (let i = 0; i < args.length && args[i]!.startsWith('-'); i++) {
    if (args[i] === '-C') dirs.push(args[++i] ?? '');
  }
  return dirs;
}

const GIT_READ_SUBCOMMANDS = new Set([
  'log',
  'show',
  'diff',
  'status',
  'blame',
  'branch',
  'tag',
  'rev-parse',
  'ls-files',
  'grep',
  'cat-file',
  'shortlog',
  'describe',
  'rev-list',
  'ls-tree',
  'show-ref',
  'reflog',
  'name-rev',
  'merge-base',
  'count-objects',
  'diff-tree',
  'diff-files',
  'diff-index',
  'whatchanged',
  'for-each-ref',
  'version',
  'annotate',
  'remote',
  'stash',
  'config',
  'worktree',
]);
/** Subcommands that read only in some forms: the first words they may start with (after options for config). */
const GIT_READ_FORMS: Record<string, string> = {
  remote: 'git remote, git remote -v, git remote get-url NAME',
  stash: 'git stash list, git stash show',
  config: 'git config --get KEY, git config --get-all KEY',
  worktree: 'git worktree list',
};
function readFormRefusal(subcommand: string, rest: readonly string[]): string | null {
  const ok = (() => {
    switch (subcommand) {
      case 'remote':
        return (
          rest.length === 0 ||
          rest.every((arg) => arg === '-v' || arg === '--verbose') ||
          (rest[0] === 'get-url' && rest.slice(1).every((arg) => !arg.startsWith('-') || arg === '--push' || arg === '--all'))
        );
      case 'stash':
        return rest[0] === 'list' || rest[0] === 'show';
      case 'worktree':
        return rest[0] === 'list' && rest.slice(1).every((arg) => ['--porcelain', '-v', '--verbose', '-z'].includes(arg));
      case 'config': {
        const options = rest.filter((arg) => arg.startsWith('-'));
        const operands = rest.filter((arg) => !arg.startsWith('-'));
        return (
          options.some((arg) => arg === '--get' || arg === '--get-all') &&
          options.every((arg) =>
            [
              '--get',
              '--get-all',
              '--show-origin',
              '--show-scope',
              '-z',
              '--null',
              '--bool',
              '--int',
              '--path',
              '--type=bool',
              '--type=int',
              '--type=path',
              '--includes',
              '--no-includes',
            ].includes(arg),
          ) &&
          operands.length >= 1 &&
          operands.length <= 2
        );
      }
      default:
        return true;
    }
  })();
  return ok ? null : `git ${subcommand}: only the reading forms run in the restricted shell (${GIT_READ_FORMS[subcommand]})`;
}
const GIT_DENIED_LONG: Record<string, string> = {
  '--output': 'it writes a file',
  '--ext-diff': 'it runs an external diff program',
  '--textconv': 'it runs conversion programs',
  '--filters': 'it runs filter programs',
  '--open-files-in-pager': 'it runs a pager',
  '--exec': 'it runs a program',
  '--upload-pack': 'it runs a program',
  '--receive-pack': 'it runs a program',
  '--help': 'it runs man or a browser',
  '--edit-description': 'it edits',
  '--delete': 'it deletes',
  '--move': 'it renames',
  '--copy': 'it copies',
  '--force': 'it overwrites',
  '--set-upstream-to': 'it changes configuration',
  '--unset-upstream': 'it changes configuration',
  '--track': 'it changes configuration',
  '--create-reflog': 'it writes',
  '--annotate': 'it creates a tag',
  '--sign': 'it creates a tag',
  '--local-user': 'it creates a tag',
  '--message': 'it creates',
  '--file': 'it creates',
  '--verify': 'it runs gpg',
  '--recurse-submodules': 'it runs git in submodules, under their own configuration',
  '--submodule': 'it reads submodules under their own configuration',
  '--ignore-submodules': 'it looks into submodules, under their own configuration',
};
/** Options refused only for one subcommand (elsewhere the same prefix names something harmless, like status --untracked-files). */
const GIT_DENIED_LONG_BY_SUBCOMMAND: Record<string, Record<string, string>> = {
  grep: { '--no-index': 'it reads files outside the repository (use grep)', '--untracked': 'it reads every untracked file below the work tree' },
  diff: { '--no-index': 'it reads files outside the repository (use diff)' },
  // describe --dirty refreshes and rewrites .git/index even under GIT_OPTIONAL_LOCKS=0 (git 2.39); `git status --porcelain` tells the same.
  describe: { '--dirty': 'it rewrites .git/index (use git status --porcelain to see local changes)' },
};
const GIT_LISTING_ONLY: Record<string, { allowedShort: string }> = {
  branch: { allowedShort: 'arlvi' },
  tag: { allowedShort: 'lni0123456789' },
};
const GIT_GLOBAL_FLAGS = [
  '--no-pager',
  '-P',
  '--no-optional-locks',
  '--literal-pathspecs',
  '--no-replace-objects',
  '--noglob-pathspecs',
  '--icase-pathspecs',
  '--glob-pathspecs',
];

export const gitRule: Rule = (args, context) => {
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-C') {
      i += 1;
      continue;
    }
    if (GIT_GLOBAL_FLAGS.includes(arg)) continue;
    if (arg.startsWith('-'))
      return `git: the global option ${arg} is refused (it can change configuration or run programs; allowed: -C DIR, --no-pager, --no-optional-locks)`;
    break;
  }
  const directories = gitDirectoryArgs(args);
  if (directories.length > 0) {
    const why = context.treeRefusal('git -C', directories);
    if (why) return why;
  }
  const subcommand = args[i];
  if (subcommand === undefined) return 'git: no subcommand';
  if (!GIT_READ_SUBCOMMANDS.has(subcommand))
    return `git: the subcommand "${subcommand}" is refused; only read subcommands run in the restricted shell (${[...GIT_READ_SUBCOMMANDS].join(', ')})`;
  const rest = args.slice(i + 1);
  const listing = GIT_LISTING_ONLY[subcommand];
  const deniedShort: Record<string, string> = subcommand === 'grep' ? { O: 'it runs a pager' } : {};
  const form = readFormRefusal(subcommand, rest);
  if (form) return form;
  if (subcommand === 'reflog' && rest[0] !== undefined && !rest[0].startsWith('-') && rest[0] !== 'show')
    return 'git reflog: only "show" (the default) is allowed';
  const scanned = scanOptions(`git ${subcommand}`, rest, {
    deniedShort,
    deniedLong: { ...GIT_DENIED_LONG, ...GIT_DENIED_LONG_BY_SUBCOMMAND[subcommand] },
    ...(listing ? { allowedShort: listing.allowedShort } : {}),
    longWithValue: ['--contains', '--no-contains', '--merged', '--no-merged', '--points-at', '--sort', '--format'],
    // branch and tag take HEAD when these end the line (git's "--merged [COMMIT]").
    ...(listing ? { longWithLastArgDefault: ['--contains', '--no-contains', '--merged', '--no-merged', '--points-at'] } : {}),
  });
  if (listing && scanned.operands.length > 0 && !scanned.short.has('l') && !scanned.long.includes('--list')) {
    return `git ${subcommand}: a name without --list would create a ${subcommand}`;
  }
  return null;
};
