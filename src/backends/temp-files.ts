import { readdir, readFile, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { nodeCrypto } from '../node-crypto.js';

/**
 * Temporary files that quarry writes beside a target before linking or renaming them into place
 * (the `write` tool, CSV exports): `.NAME.quarry-PID-RANDOM.tmp`. Every failure path removes its
 * own; a process killed outright (kill -9, power loss) cannot, so the next export to the same
 * directory removes those of processes that no longer run, and any older than STALE_AFTER_MS
 * (docs/guide/databases.md "Temporary files").
 */

/** A temporary file untouched this long is garbage even if its process id is in use again. */
export const STALE_AFTER_MS = 24 * 60 * 60 * 1000;
const TEMP_NAME = /^\..+\.quarry-(?:(\d+)-)?[0-9a-f]{12}\.tmp$/;
/** An export's reservation of its target (csv.ts); it holds the owner's process id. */
const LOCK_NAME = /^\..+\.quarry-export\.lock$/;

export function tempPathFor(target: string): string {
  return join(dirname(target), `.${basename(target)}.quarry-${process.pid}-${nodeCrypto().randomBytes(6).toString('hex')}.tmp`);
}

/** Whether a process with this id runs on this machine. */
export function processRuns(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes quarry's temporary files in `dir` left by processes that no longer run (and those
 * older than STALE_AFTER_MS, or without a process id, from older versions, after the same
 * time). Returns the names removed. Never fails: cleaning up is a courtesy, not the job.
 */
export async function removeStaleTempFiles(dir: string, now = Date.now()): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const match = TEMP_NAME.exec(name);
    const lock = !match && LOCK_NAME.test(name);
    if (!match && !lock) continue;
    const path = join(dir, name);
    try {
      const pid = lock ? Number((await readFile(path, 'utf8')).trim()) || null : match![1] ? Number(match![1]) : null;
      const dead = pid !== null && !processRuns(pid);
      if (!dead) {
        const info = await stat(path);
        if (!info.isFile() || now - info.mtimeMs < STALE_AFTER_MS) continue;
      }
      await unlink(path);
      removed.push(name);
    } catch {
      // Gone meanwhile, or not ours to remove.
    }
  }
  return removed;
}
