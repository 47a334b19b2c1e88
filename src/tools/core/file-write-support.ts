import { refuseSecrets } from './existing-path.js';
import type { FileStat } from '../../backends/types.js';
import { ToolError, type ToolContext, type WriteErrno } from './types.js';

/** What write and edit share: the target of an existing path, read-before-write, clear write errors. */

/** Where an existing path really is: symlinks are followed, so the link stays and its target changes. */
export interface ExistingTarget {
  /** The path the model gave, resolved against the working directory. */
  requested: string;
  /** The file to write: `requested` with symlinks resolved. */
  real: string;
  stat: FileStat;
}

/** null when nothing exists at `requested`; throws when something exists that is not a regular file. */
export async function findExistingFile(context: ToolContext, requested: string, shown: string): Promise<ExistingTarget | null> {
  const { backend } = context;
  const link = await backend.lstat(requested);
  if (!link) return null;
  const stat = await backend.stat(requested);
  if (!stat) throw new ToolError(`refused: ${shown} is a symbolic link whose target does not exist`, 'refused');
  if (stat.type === 'directory') throw new ToolError(`${shown} is a directory; give the path of a file`, 'is_directory');
  if (stat.type !== 'file') throw new ToolError(`${shown} is not a regular file (a device, socket or pipe); refused`, 'not_a_file');
  const real = link.type === 'symlink' ? await backend.realpath(requested) : requested;
  // A credential file is never edited or replaced by a tool either (its changed lines would be shown).
  if (backend.name === 'local') await refuseSecrets(requested, real, shown, false);
  return { requested, real, stat };
}

/**
 * The read-before-write guard (docs/guide/tools.md "Writes"): in agent sessions an existing file may be changed only
 * when this session read it and it is unchanged since. Without a ledger (`quarry tool`) the user
 * acts directly and the guard does not apply. The read may have been recorded under either name.
 */
export function checkReadBeforeWrite(context: ToolContext, target: ExistingTarget): void {
  const ledger = context.fileReads;
  if (!ledger) return;
  const reason = ledger.checkUnchanged(target.requested, target.stat);
  if (reason === null) return;
  if (target.real !== target.requested && ledger.checkUnchanged(target.real, target.stat) === null) return;
  throw new ToolError(`refused: ${reason}`, 'not_read');
}

/** After a successful write: the session has now seen this version, so a follow-up edit works. */
export async function recordWritten(context: ToolContext, paths: readonly string[]): Promise<FileStat | null> {
  const stat = await context.backend.stat(paths[0]!);
  if (stat && context.fileReads) {
    for (const path of new Set(paths)) context.fileReads.record(path, stat);
  }
  return stat;
}

const WRITE_ERRORS: Record<WriteErrno, string> = {
  EACCES: 'permission denied (the file or its directory is not writable)',
  EPERM: 'operation not permitted',
  ENOTDIR: 'a component of the path is a file, not a directory',
  EISDIR: 'it is a directory',
  EEXIST: 'a file appeared there while writing; nothing was overwritten',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on device',
  EDQUOT: 'disk quota exceeded',
  ENAMETOOLONG: 'the file name is too long',
};

/** The sentence for a file-system error that stops a write mid-way (a full disk), or null for any other error. */
export function midWriteError(error: unknown): { kind: WriteErrno; why: string } | null {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT' && code !== 'EROFS') return null;
  return { kind: code, why: WRITE_ERRORS[code] };
}

/** Writes atomically through the backend; file-system errors become one clear sentence. */
export async function writeFileClearly(context: ToolContext, path: string, shown: string, data: Buffer, exclusive: boolean): Promise<void> {
  try {
    await context.backend.writeFileAtomic(path, data, { exclusive });
  } catch (error) {
    const { code, syscall } = error as NodeJS.ErrnoException;
    if (code === undefined || !Object.hasOwn(WRITE_ERRORS, code)) throw error;
    const kind = code as WriteErrno;
    // Creating parents reports a file in the way as EEXIST: that is ENOTDIR's case, not a race.
    const why = kind === 'EEXIST' && syscall === 'mkdir' ? WRITE_ERRORS.ENOTDIR : WRITE_ERRORS[kind];
    throw new ToolError(`could not write ${shown}: ${why}; no file was changed`, kind);
  }
}

/** Lines as a person counts them: a final newline does not start another line. */
export function countLines(text: string): number {
  if (text === '') return 0;
  let lines = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lines++;
  return text.endsWith('\n') ? lines - 1 : lines;
}

export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}
