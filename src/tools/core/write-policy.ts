import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { Backend } from '../../backends/types.js';
import { quarryHome } from '../../config/home.js';
import { trustedFolderReason } from '../../security/trusted-folders.js';
import { isInside } from '../../security/paths.js';
import { ToolError } from './types.js';

/**
 * Where create-only writes (and every export_query output) may go (docs/guide/tools.md "Writes"): never over an
 * existing file, never through a symlink, never into a sensitive location, and only inside the
 * working directory, the temporary directory or the profile's write_roots. All checks run on
 * the path after symlinks are resolved, so a link cannot smuggle a write elsewhere.
 */

/** Under the home directory: shell start-up files, credentials, tool configuration. */
export const SENSITIVE_IN_HOME = [
  // docs/guide/tools.md "Writes"
  '.bashrc',
  '.zshrc',
  '.profile',
  '.bash_profile',
  '.zshenv',
  '.gitconfig',
  '.ssh',
  '.aws',
  '.gnupg',
  '.config',
  '.local',
  '.npmrc',
  '.netrc',
  '.docker',
  '.kube',
  // Also run at start-up or hold credentials; .quarry holds quarry's own profiles and config.
  '.bash_login',
  '.bash_logout',
  '.bash_aliases',
  '.zprofile',
  '.zlogin',
  '.pgpass',
  '.my.cnf',
  '.git-credentials',
  '.pypirc',
  '.vimrc',
  '.quarry',
] as const;
/** System directories. `/root` is sensitive unless it holds the working directory or a write root. */
export const SENSITIVE_SYSTEM = ['/etc', '/usr', '/bin', '/sbin', '/boot', '/lib', '/lib64', '/proc', '/sys', '/dev'] as const;

/** The profile's file_write modes (docs/guide/tools.md "Writes"); the write and edit tools are built for one of them. */
export const FILE_WRITE_MODES = ['off', 'create-only', 'full'] as const;
export type FileWriteMode = (typeof FILE_WRITE_MODES)[number];

export interface WriteTargetPolicy {
  workingDir: string;
  writeRoots: readonly string[];
}

function errnoCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Resolves symlinks in every existing component of `path`. The missing tail is checked with
 * lstat: a component that exists but cannot be resolved (a dangling or looping symlink) is
 * refused, since creating parents through it would land wherever it points.
 */
async function resolveExistingPrefix(backend: Backend, path: string): Promise<string> {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      const real = await backend.realpath(current);
      return missing.length ? join(real, ...missing.reverse()) : real;
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ELOOP') throw new ToolError(`refused: ${path}: too many levels of symbolic links at ${current}`, 'refused');
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      // An ancestor that exists but cannot be resolved is a link that points nowhere.
      if (current !== path && (await backend.lstat(current)) !== null) {
        throw new ToolError(`refused: ${path}: ${current} is a symbolic link whose target does not exist; quarry never writes through a symlink`, 'refused');
      }
      const parent = dirname(current);
      if (parent === current) return path;
      missing.push(basename(current));
      current = parent;
    }
  }
}

/** quarry's own home on this machine, wherever QUARRY_HOME puts it: config.yaml there starts MCP server commands. */
async function quarryHomeDirs(backend: Backend): Promise<string[]> {
  if (backend.name !== 'local') return [];
  // An unreadable path on the way (a home not ours) leaves the written path to compare.
  return [quarryHome(), await resolveExistingPrefix(backend, quarryHome()).catch(() => quarryHome())];
}

function quarryHomeReason(quarryDirs: readonly string[], candidate: string): string | null {
  const quarryDir = quarryDirs.find((dir) => isInside(dir, candidate));
  return quarryDir ? `${quarryDir} is quarry's home (QUARRY_HOME: its config.yaml, profiles and sessions are never written)` : null;
}

/**
 * A `.quarry` directory anywhere: a project's `.quarry/knowledge/` is the team's knowledge folder, text
 * later sessions trust as the user's own (docs/security.md), so a model steered by data it read must
 * not write there.
 */
function quarryFolderReason(path: string): string | null {
  return path.split(sep).includes('.quarry')
    ? "files inside a .quarry directory are never written by a tool (its knowledge folder is read by later sessions as the team's own text; edit it yourself)"
    : null;
}

/**
 * Every write mode, full included: a file in $QUARRY_HOME or in any `.quarry` directory is never
 * written or edited by a tool (config.yaml there starts MCP server commands at the next start, and a
 * knowledge folder is trusted; docs/security.md).
 */
export async function refuseQuarryHome(backend: Backend, requested: string): Promise<void> {
  const quarryDirs = await quarryHomeDirs(backend);
  const resolved = await resolveExistingPrefix(backend, requested).catch(() => requested);
  for (const candidate of new Set([requested, resolved])) {
    const reason = quarryHomeReason(quarryDirs, candidate) ?? quarryFolderReason(candidate) ?? trustedFolderReason(candidate);
    if (reason) throw new ToolError(`refused: ${requested}${candidate !== requested ? ` (resolves to ${candidate})` : ''}: ${reason}`, 'refused');
  }
}

function sensitiveReason(path: string, home: string): string | null {
  // Any dot entry of the home directory, not only the ones listed: ~/.psqlrc, ~/.sqliterc, ~/.curlrc,
  // ~/.ipython/…/startup run what they hold when a tool starts, and no list keeps up with them.
  const first = isInside(home, path) && path !== home ? path.slice(home.length).split(sep).find(Boolean) : undefined;
  const name = first?.startsWith('.') ? first : SENSITIVE_IN_HOME.find((entry) => isInside(join(home, entry), path));
  if (name) return `${join(home, name)} is a sensitive location (shell start-up files, credentials and tool configuration are never written)`;
  for (const dir of SENSITIVE_SYSTEM) {
    if (isInside(dir, path)) return `${dir}${sep} is a system directory`;
  }
  if (path.split(sep).includes('.git')) return 'files inside a .git directory are never written (hooks and config there run programs)';
  return null;
}

function expandRoot(root: string, home: string, workingDir: string): string {
  if (root === '~' || root.startsWith('~/')) return join(home, root.slice(2));
  return resolve(workingDir, root);
}

/**
 * Checks a new file's absolute path for a create-only write or an export. Returns the resolved
 * path to write to (write it exclusively, so that a file appearing meanwhile is not replaced);
 * throws a ToolError saying why otherwise. Fails closed: anything unexpected is a refusal.
 */
export async function checkCreateOnlyTarget(backend: Backend, requested: string, policy: WriteTargetPolicy): Promise<string> {
  if (!isAbsolute(requested)) throw new ToolError(`refused: ${requested} is not an absolute path (resolve it against the working directory first)`, 'refused');
  const existing = await backend.lstat(requested);
  if (existing?.type === 'symlink') {
    throw new ToolError(`refused: ${requested} is a symbolic link; quarry never writes through a symlink`, 'refused');
  }
  if (existing?.type === 'directory') {
    throw new ToolError(`refused: ${requested} is a directory; give the path of a new file inside it`, 'refused');
  }
  if (existing) {
    throw new ToolError(`refused: ${requested} already exists; this profile only creates new files and never overwrites (choose a new name)`, 'refused');
  }
  const [home, temp] = await Promise.all([backend.homeDir(), backend.tempDir()]);
  const resolved = await resolveExistingPrefix(backend, requested);
  const realHome = await resolveExistingPrefix(backend, home);
  const quarryDirs = await quarryHomeDirs(backend);
  for (const candidate of new Set([requested, resolved])) {
    const reason =
      sensitiveReason(candidate, realHome) ??
      sensitiveReason(candidate, home) ??
      quarryHomeReason(quarryDirs, candidate) ??
      quarryFolderReason(candidate) ??
      trustedFolderReason(candidate);
    if (reason) throw new ToolError(`refused: ${requested}${candidate !== requested ? ` (resolves to ${candidate})` : ''}: ${reason}`, 'refused');
  }
  // The working directory is a place to write only where it exists: a Daytona session's is the
  // sandbox's, and its export files are written on this machine (docs/guide/daytona.md), where
  // that path may be missing; it is never created here.
  const workingDirHere = await backend.stat(policy.workingDir).catch(() => null);
  if (workingDirHere?.type !== 'directory' && isInside(policy.workingDir, resolved)) {
    throw new ToolError(
      `refused: ${requested}: the working directory ${policy.workingDir} does not exist where this file is written (export files of a Daytona ` +
        `session are written on this machine); give a path in the temporary directory or the profile's write_roots`,
      'refused',
    );
  }
  const roots: string[] = [];
  for (const root of [
    ...(workingDirHere?.type === 'directory' ? [policy.workingDir] : []),
    temp,
    ...policy.writeRoots.map((root) => expandRoot(root, home, policy.workingDir)),
  ]) {
    roots.push(await resolveExistingPrefix(backend, root));
  }
  if (!roots.some((root) => isInside(root, resolved))) {
    throw new ToolError(
      `refused: ${requested}${resolved !== requested ? ` (resolves to ${resolved})` : ''} is outside the places this profile may write: ` +
        `${roots.join(', ')}; add a directory to the profile's write_roots to allow it`,
      'refused',
    );
  }
  if (isInside('/root', resolved) && !roots.some((root) => root !== '/' && isInside(root, resolved) && isInside('/root', root))) {
    throw new ToolError(`refused: ${requested} is under /root, a sensitive location`, 'refused');
  }
  return resolved;
}
