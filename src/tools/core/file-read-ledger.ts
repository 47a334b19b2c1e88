import type { FileStat } from '../../backends/types.js';

/**
 * Remembers which files an agent session has read (with read or grep) and what they looked
 * like then, so that write and edit can refuse to overwrite a file the model has not seen or
 * that changed on disk after it was read.
 */
export class FileReadLedger {
  private readonly seen = new Map<string, { mtimeMs: number; size: number }>();

  record(absolutePath: string, stat: Pick<FileStat, 'mtimeMs' | 'size'>): void {
    this.seen.set(absolutePath, { mtimeMs: stat.mtimeMs, size: stat.size });
  }

  /** null when the file may be changed; otherwise the reason it may not. */
  checkUnchanged(absolutePath: string, current: Pick<FileStat, 'mtimeMs' | 'size'>): string | null {
    const before = this.seen.get(absolutePath);
    if (!before) {
      return `${absolutePath} exists and has not been read in this session; read it first (read or grep), then retry`;
    }
    if (before.mtimeMs !== current.mtimeMs || before.size !== current.size) {
      return `${absolutePath} changed on disk since it was read in this session; read it again, then retry`;
    }
    return null;
  }
}
