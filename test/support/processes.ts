import { execFileSync } from 'node:child_process';

/** Ids of the processes whose command line contains `marker` (pgrep leaves itself out; it exits 1 when none match). */
export function processesMatching(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** The processes still matching `marker` once they are gone, or after `waitMs` (SIGKILL follows SIGTERM after a grace period). */
export async function processesLeft(marker: string, waitMs = 15_000): Promise<string[]> {
  const until = Date.now() + waitMs;
  let left = processesMatching(marker);
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    left = processesMatching(marker);
  }
  return left;
}

/**
 * The direct children of `parent` whose command line matches `pattern`, once there are at least
 * `count` of them (or what there is after about 5 s): ids and command lines.
 */
export async function childProcesses(parent: number, pattern: RegExp, count = 1): Promise<{ pid: number; args: string }[]> {
  let found: { pid: number; args: string }[] = [];
  for (let i = 0; i < 100; i++) {
    let listing = '';
    try {
      listing = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(parent)], { encoding: 'utf8' });
    } catch {
      // ps exits 1 when there is none yet
    }
    found = listing
      .split('\n')
      .filter((line) => pattern.test(line))
      .map((line) => ({ pid: Number(line.trim().split(/\s+/)[0]), args: line.trim() }));
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return found;
}
