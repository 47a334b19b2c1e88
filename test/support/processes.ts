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
