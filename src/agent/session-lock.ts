import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../errors.js';
import { nodeCrypto } from '../node-crypto.js';

/**
 * One process at a time owns a session directory: it holds `ID/lock`, a file created with
 * O_EXCL (`open(..., 'wx')`) that names the process (pid, its start time, the host). The owner
 * removes it when it lets go of the session (also on a normal exit, see the exit hook below).
 * A lock whose process is gone (`kill -9`, a crash, a reboot) is stale: the next process takes
 * it over. Liveness is the pid plus the process's start time from /proc where there is one, so
 * a pid reused by an unrelated process does not keep a dead session locked; a lock from another
 * host cannot be checked and counts as held (fail closed: the message says which file to remove).
 */

export const LOCK_FILE = 'lock';

export interface LockHolder {
  pid: number;
  /** The process's start time in clock ticks since boot (Linux /proc/PID/stat field 22), when known. */
  started?: string;
  host: string;
  nonce: string;
  at: string;
}

/** Another live process owns the session: a usage error (exit 2), nothing was run. */
export class SessionLockedError extends UsageError {
  override name = 'SessionLockedError';
  constructor(
    message: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(message);
  }
}

/** A lock file whose content could not be read yet is taken for a lock being written this long. */
const UNREADABLE_LOCK_GRACE_MS = 10_000;

/** The start time of a process (Linux); undefined where /proc does not say. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

const ownStart = processStartTime(process.pid);

/** Whether the process is alive and, when its start time was recorded, the same process. */
export function isProcessAlive(pid: number, started?: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (started === undefined) return true;
  const now = processStartTime(pid);
  return now === undefined || now === started;
}

export function ownProcessStart(): string | undefined {
  return ownStart;
}

export function readLockHolder(dir: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as LockHolder;
    return typeof holder.pid === 'number' ? holder : undefined;
  } catch {
    return undefined;
  }
}

function lockExists(dir: string): { exists: boolean; ageMs: number } {
  try {
    return { exists: true, ageMs: Date.now() - statSync(join(dir, LOCK_FILE)).mtimeMs };
  } catch {
    return { exists: false, ageMs: 0 };
  }
}

/** Whether a holder (from a lock file) is a live process; one on another host is assumed to be. */
export function holderAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true;
  return isProcessAlive(holder.pid, holder.started);
}

/** The live holder of a session's lock, if any. */
export function liveLockHolder(dir: string): LockHolder | undefined {
  const holder = readLockHolder(dir);
  return holder && holderAlive(holder) ? holder : undefined;
}

const held = new Map<string, string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A normal exit, process.exit() included, lets go of every session this process holds.
  process.on('exit', () => {
    for (const dir of [...held.keys()]) releaseSessionLock(dir);
  });
}

/**
 * Takes the session's lock or throws SessionLockedError naming the live holder. A stale lock
 * is taken over by renaming it aside (atomic: of several processes that find it stale, one
 * renames it); the renamed file is checked to be the stale one before it is deleted. Returns
 * false when this process already held it.
 */
export function acquireSessionLock(dir: string, describe: (holder: LockHolder | undefined) => string): boolean {
  if (held.has(dir)) return false;
  const path = join(dir, LOCK_FILE);
  const me: LockHolder = {
    pid: process.pid,
    ...(ownStart ? { started: ownStart } : {}),
    host: hostname(),
    nonce: nodeCrypto().randomBytes(8).toString('hex'),
    at: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 400; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = readLockHolder(dir);
      if (!holder) {
        const { exists, ageMs } = lockExists(dir);
        if (!exists) continue;
        // Created but not yet written by its owner, or left empty by a crash long ago.
        if (ageMs < UNREADABLE_LOCK_GRACE_MS) throw new SessionLockedError(describe(undefined), undefined);
      } else if (holderAlive(holder)) {
        throw new SessionLockedError(describe(holder), holder);
      }
      takeOverStale(dir, path, holder);
      continue;
    }
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
    } finally {
      closeSync(fd);
    }
    held.set(dir, me.nonce);
    installExitHook();
    return true;
  }
  throw new SessionLockedError(describe(readLockHolder(dir)), readLockHolder(dir));
}

/** A takeover mutex older than this was left by a process that died in the middle of one. */
const TAKEOVER_STALE_MS = 10_000;
/** How long a process waits for another's takeover to finish before it looks again. */
const TAKEOVER_WAIT_MS = 5;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Removes a stale lock, at most one process at a time: the remover holds `lock.takeover`
 * (created with O_EXCL) and removes the lock only when it still is the stale one it saw (same
 * nonce; or still unreadable and older than the grace). While the mutex is held nothing else
 * removes a lock (its dead owner cannot), so the lock read is the lock removed. Renaming the
 * lock aside, as before, could move a new owner's lock that was created but not yet written,
 * and two processes then both held the session (seen under load in CI).
 */
function takeOverStale(dir: string, path: string, stale: LockHolder | undefined): void {
  const mutex = `${path}.takeover`;
  let fd: number;
  try {
    fd = openSync(mutex, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    try {
      if (Date.now() - statSync(mutex).mtimeMs > TAKEOVER_STALE_MS) rmSync(mutex, { force: true });
    } catch {
      // Gone already: the other takeover finished.
    }
    sleepSync(TAKEOVER_WAIT_MS);
    return;
  }
  try {
    closeSync(fd);
    const current = readLockHolder(dir);
    const same = stale ? current?.nonce === stale.nonce : current === undefined && lockExists(dir).exists && lockExists(dir).ageMs >= UNREADABLE_LOCK_GRACE_MS;
    if (same) rmSync(path, { force: true });
  } finally {
    rmSync(mutex, { force: true });
  }
}

/** Lets go of the session if this process holds it (and the file is still ours). */
export function releaseSessionLock(dir: string): void {
  const nonce = held.get(dir);
  if (nonce === undefined) return;
  held.delete(dir);
  if (readLockHolder(dir)?.nonce === nonce) rmSync(join(dir, LOCK_FILE), { force: true });
}

export function holdsSessionLock(dir: string): boolean {
  return held.has(dir);
}
