import type { ChildProcess } from 'node:child_process';

/**
 * Ends a process group when quarry ends, however it ends (kill -9 included): a tiny `sh` holds
 * the read end of a pipe whose only write end is quarry's; when quarry is gone the read returns
 * (end of file) and the shell kills the group. Linux's PR_SET_PDEATHSIG is not reachable from
 * Node, and would reach only the direct child, not what it started.
 *
 * The watchdog is in a process group of its own, so a Ctrl+C at the terminal does not end it,
 * and it keeps nothing of quarry's alive (unref'd). Returns the function that dismisses it (when
 * the group ended or was killed by quarry itself).
 */
export function watchProcessGroup(spawn: typeof import('node:child_process').spawn, groupId: number): () => void {
  let watchdog: ChildProcess | null = null;
  try {
    watchdog = spawn('/bin/sh', ['-c', 'read _ignored; kill -s KILL -- "-$1" 2>/dev/null', 'quarry-watchdog', String(groupId)], {
      // `read` and `kill` are the shell's own: it needs no environment, and gets none of quarry's
      // (its keys and passwords would sit in this process's /proc/PID/environ all along).
      env: {},
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
    });
  } catch {
    return () => undefined;
  }
  watchdog.on('error', () => undefined);
  watchdog.stdin?.on('error', () => undefined);
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return () => {
    if (!watchdog) return;
    const ending = watchdog;
    watchdog = null;
    try {
      ending.kill('SIGKILL');
    } catch {
      // already gone
    }
    ending.stdin?.destroy();
  };
}
