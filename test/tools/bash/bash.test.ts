import { describe, expect, test } from 'vitest';
import { processesLeft } from '../../support/processes.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { BASH_OUTPUT_HEAD_BYTES, BASH_OUTPUT_TAIL_BYTES } from '../../../src/tools/bash/tool.js';
import { HeadTailBuffer } from '../../../src/tools/bash/head-tail-buffer.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

interface BashOutput {
  output: string;
  exit_code: number | null;
  duration_seconds: number;
}

const developer = loadProfile('developer');
const readonly = loadProfile('readonly');

async function runBash(profile: typeof developer, args: Record<string, unknown>, workingDir = makeTempDir(), signal?: AbortSignal) {
  const registry = buildToolRegistry(profile);
  const result = await registry.run('bash', args, makeToolContext({ workingDir, ...(signal ? { signal } : {}) }));
  return { ...result, parsed: JSON.parse(result.output) as BashOutput };
}

describe('bash tool', () => {
  test('returns JSON with output, exit code and duration; stdout and stderr interleaved in order', async () => {
    const script = 'for i in 1 2 3; do echo out$i; echo err$i >&2; done; exit 3';
    for (const profile of [developer, readonly]) {
      const command = profile === readonly ? 'echo out1; echo err1 >&2; echo out2; cat missing-file; echo out3' : script;
      const result = await runBash(profile, { command });
      expect(result.ok).toBe(true);
      if (profile === developer) {
        expect(result.parsed).toMatchObject({ output: 'out1\nerr1\nout2\nerr2\nout3\nerr3\n', exit_code: 3 });
      } else {
        expect(result.parsed).toMatchObject({ output: 'out1\nerr1\nout2\ncat: missing-file: No such file or directory\nout3\n', exit_code: 0 });
      }
      expect(result.parsed.duration_seconds).toBeGreaterThanOrEqual(0);
    }
  });

  test('the timeout kills the whole process group, background children included, and keeps the output so far', async () => {
    const marker = `quarry-bg-${process.pid}-${Date.now()}`;
    const started = performance.now();
    const result = await runBash(developer, {
      command: `echo before; (sleep 300; echo ${marker}) & sleep 301 ${marker} & exec -a ${marker} sleep 302`,
      timeout: 1,
    });
    expect(performance.now() - started).toBeLessThan(20_000); // the children sleep 300 s
    expect(result.ok).toBe(false);
    expect(result.parsed.exit_code).toBe(124);
    expect(result.parsed.output).toMatch(/^before\n[\s\S]*timed out after 1 s/);
    expect(await processesLeft(marker)).toEqual([]);
  });

  test('the restricted shell is killed on timeout too (sandboxed: the whole namespace dies)', async () => {
    // A duration no other test uses: other files run `sleep 30` at the same time (pgrep sees the whole machine).
    const sleep = `sleep 30.${process.pid}`;
    const result = await runBash(readonly, { command: sleep, timeout: 1 });
    expect(result.parsed.exit_code).toBe(124);
    expect(await processesLeft(sleep)).toEqual([]);
  });

  test('cancelling kills the command and keeps the output so far', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 500);
    const result = await runBash(developer, { command: 'echo started; sleep 60' }, makeTempDir(), controller.signal);
    expect(result.ok).toBe(false);
    expect(result.parsed.output).toMatch(/^started\n[\s\S]*cancelled/);
  });

  test('300 MB of output keeps only head and tail, says how much was dropped, and does not grow memory', async () => {
    const rssBefore = process.memoryUsage().rss;
    const result = await runBash(developer, { command: "head -c 300000000 /dev/zero | tr '\\0' 'x'; echo; echo THE-END" }, makeTempDir());
    const rssGrowth = process.memoryUsage().rss - rssBefore;
    expect(result.ok).toBe(true);
    const { output } = result.parsed;
    expect(output.startsWith('x'.repeat(BASH_OUTPUT_HEAD_BYTES))).toBe(true);
    expect(output.endsWith('\nTHE-END\n')).toBe(true);
    const dropped = 300_000_000 + 9 - BASH_OUTPUT_HEAD_BYTES - BASH_OUTPUT_TAIL_BYTES;
    expect(output).toContain(`(${dropped} bytes) of output dropped`);
    expect(output.length).toBeLessThan(BASH_OUTPUT_HEAD_BYTES + BASH_OUTPUT_TAIL_BYTES + 500);
    expect(rssGrowth).toBeLessThan(100 * 1024 * 1024);
  });

  test('working_dir resolves against the working directory and must exist', async () => {
    const dir = makeTempDir();
    mkdirSync(join(dir, 'sub'));
    const inside = await runBash(readonly, { command: 'pwd', working_dir: 'sub' }, dir);
    expect(inside.parsed.output).toBe(`${join(dir, 'sub')}\n`);
    const registry = buildToolRegistry(readonly);
    const missing = await registry.run('bash', { command: 'pwd', working_dir: 'nope' }, makeToolContext({ workingDir: dir }));
    expect(missing).toMatchObject({ ok: false });
    expect(missing.output).toMatch(/working_dir nope does not exist/);
    const proc = await registry.run('bash', { command: 'ls', working_dir: '/proc/self' }, makeToolContext({ workingDir: dir }));
    expect(proc.output).toMatch(/under \/proc is refused/);
  });

  test('no terminal: stdin is empty', async () => {
    const result = await runBash(developer, { command: 'cat; tty; echo rc=$?' });
    expect(result.parsed.output).toMatch(/not a tty\nrc=1\n$/);
  });

  test('the timeout argument is capped by the schema at 600 s', async () => {
    const registry = buildToolRegistry(developer);
    const result = await registry.run('bash', { command: 'true', timeout: 601 }, makeToolContext({ workingDir: makeTempDir() }));
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/timeout/);
  });

  test('the head/tail buffer keeps exact head and tail across odd chunk sizes', () => {
    const buffer = new HeadTailBuffer(10, 7);
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''));
    for (let offset = 0; offset < data.length; offset += 13) buffer.push(data.subarray(offset, offset + 13));
    expect(buffer.dropped).toBe(983);
    expect(buffer.render((n) => `[${n}]`).toString()).toBe(`${data.subarray(0, 10)}[983]${data.subarray(993)}`);
  });
});
