// Shared measuring helpers for bench modules.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Runs a command `runs` times (after one warm-up) under bench/tree-usage.py (or GNU time) and returns
 * median wall milliseconds and median peak RSS in MB.
 */
export function measure(argv, { runs = 5, cwd, env, warmup = 1, input } = {}) {
  const times = [];
  const rss = [];
  for (let i = 0; i < runs + warmup; i++) {
    const { ms, rssMb } = runOnce(argv, { cwd, env, input });
    if (i < warmup) continue;
    times.push(ms);
    if (rssMb !== undefined) rss.push(rssMb);
  }
  return { ms: median(times), rssMb: rss.length ? median(rss) : undefined, stdout: '' };
}

/**
 * Two commands measured in alternation (a, b, a, b, ...) after a warm-up of each, so that the
 * shared machine's slow and fast spells fall on both alike. Returns each one's medians and the
 * median of the per-pair time ratios a/b, which drifts far less than a ratio of two medians.
 */
export function measurePair(a, b, { runs = 5, warmup = 1 } = {}) {
  const result = { a: { times: [], rss: [], cpu: [] }, b: { times: [], rss: [], cpu: [] }, ratios: [] };
  for (let i = 0; i < runs + warmup; i++) {
    const first = runOnce(a);
    const second = runOnce(b);
    if (i < warmup) continue;
    for (const [side, run] of [
      [result.a, first],
      [result.b, second],
    ]) {
      side.times.push(run.ms);
      if (run.rssMb !== undefined) side.rss.push(run.rssMb);
      if (run.cpuMs !== undefined) side.cpu.push(run.cpuMs);
    }
    result.ratios.push(first.ms / second.ms);
  }
  const summary = (side) => ({
    ms: median(side.times),
    rssMb: side.rss.length ? median(side.rss) : undefined,
    cpuMs: side.cpu.length ? median(side.cpu) : undefined,
  });
  return { a: summary(result.a), b: summary(result.b), ratio: median(result.ratios) };
}

const hasTime = spawnSync('/usr/bin/time', ['-f', '%M', 'true']).status === 0;
/**
 * The whole process tree's CPU and peak memory (tree-usage.py says why), where the system's python3
 * runs (not a pyenv shim, whose interpreter added about 50 ms of CPU to every command); else GNU time.
 */
const treeUsage = fileURLToPath(new URL('tree-usage.py', import.meta.url));
const hasTreeUsage = spawnSync('/usr/bin/python3', [treeUsage, 'true']).status === 0;

function runOnce(argv, { cwd, env, input } = {}) {
  const command = hasTreeUsage ? ['/usr/bin/python3', treeUsage, ...argv] : hasTime ? ['/usr/bin/time', '-f', '__RSS_KB=%M __CPU_S=%U+%S', ...argv] : argv;
  const started = process.hrtime.bigint();
  const result = spawnSync(command[0], command.slice(1), { cwd, env, input, maxBuffer: 1024 * 1024 * 1024, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) {
    throw new Error(`${argv.join(' ')} exited ${result.status}: ${(result.stderr ?? '').slice(-500)}`);
  }
  const match = /__RSS_KB=(\d+)/.exec(result.stderr ?? '');
  // User + system CPU seconds of the command and everything it started: less disturbed than wall
  // time by other work on a shared machine.
  const cpu = /__CPU_S=([\d.]+)\+([\d.]+)/.exec(result.stderr ?? '');
  return { ms, rssMb: match ? Number(match[1]) / 1024 : undefined, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : undefined };
}
