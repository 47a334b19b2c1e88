// Shared measuring helpers for bench modules.
import { spawnSync } from 'node:child_process';

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Runs a command `runs` times (after one warm-up) under GNU time when available and returns
 * median wall milliseconds and median peak RSS in MB.
 */
export function measure(argv, { runs = 5, cwd, env, warmup = 1, input } = {}) {
  const times = [];
  const rss = [];
  const hasTime = spawnSync('/usr/bin/time', ['-f', '%M', 'true']).status === 0;
  for (let i = 0; i < runs + warmup; i++) {
    const command = hasTime ? ['/usr/bin/time', '-f', '__RSS_KB=%M', ...argv] : argv;
    const started = process.hrtime.bigint();
    const result = spawnSync(command[0], command.slice(1), { cwd, env, input, maxBuffer: 1024 * 1024 * 1024, encoding: 'utf8' });
    const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
    if (result.status !== 0) {
      throw new Error(`${argv.join(' ')} exited ${result.status}: ${(result.stderr ?? '').slice(-500)}`);
    }
    if (i < warmup) continue;
    times.push(elapsed);
    const match = /__RSS_KB=(\d+)/.exec(result.stderr ?? '');
    if (match) rss.push(Number(match[1]) / 1024);
  }
  return { ms: median(times), rssMb: rss.length ? median(rss) : undefined, stdout: '' };
}
