import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bubblewrapCandidates } from '../../../src/tools/bash/bubblewrap-probe.js';
import { bashToolOptions } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { createBashTool } from '../../../src/tools/bash/tool.js';
import { ToolRegistry } from '../../../src/tools/core/registry.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { isAlive, snapshot } from './policy/canary.js';

/**
 * The gap without bubblewrap (issue 20, item 13): a tree holding symbolic links planted to
 * another process's /proc/PID/environ, to /proc, to / and to a directory that leads on, read
 * through patterns, recursion, find -exec, xargs and the new loops and substitutions. With the
 * OS layer off (the policy layer alone), every attempt must be refused or print no secret; the
 * same commands on a tree without such links still run.
 */

const SECRET = 'sk-nobwrap-secret-4242';
let dir: string;
let victim: ChildProcess;

function plant(root: string, pid: number): void {
  mkdirSync(join(root, 'sub'));
  writeFileSync(join(root, 'sub', 'plain.txt'), 'plain\n');
  symlinkSync(`/proc/${pid}/environ`, join(root, 'sub', 'env'));
  mkdirSync(join(root, 'deep', 'er'), { recursive: true });
  symlinkSync('/', join(root, 'deep', 'er', 'root'));
  symlinkSync('/proc', join(root, 'r'));
  symlinkSync(`/proc/${pid}`, join(root, 'victim'));
  mkdirSync(join(root, 'elsewhere'));
  symlinkSync(`/proc/${pid}/environ`, join(root, 'elsewhere', 'e'));
  mkdirSync(join(root, 'tree'));
  symlinkSync(join(root, 'elsewhere'), join(root, 'tree', 'hop')); // a link to a directory that holds the link
  writeFileSync(join(root, 'notes.txt'), 'alpha\n');
}

/** Attempts from the list and around it: patterns, recursion, find, xargs, loops and substitutions. */
function attempts(pid: number): string[] {
  return [
    'cat sub/*',
    'tail -n +1 sub/*',
    'head -c 2000 sub/*',
    'grep -a SECRET sub/*',
    'strings sub/*',
    'od -c sub/* | head',
    'xxd sub/e*',
    'cat */e*',
    'tail -n +1 */*',
    'cat */*',
    'grep -a -h QUARRY */*',
    'cat r*/p*/' + pid + '/e*',
    'cat r/' + pid + '/e*',
    'cat r/*/environ',
    'cat victim/e*',
    'cat vic*/environ',
    'grep -a . victim/*',
    'cat deep/*/root/proc/' + pid + '/e*',
    'cat tree/*/*',
    'cat tree/hop/*',
    'grep -R -a SECRET .',
    'grep -Ra SECRET sub',
    'grep -R -a SECRET tree',
    'grep -r -a SECRET .',
    'grep -R -a SECRET deep',
    'grep -R -l SECRET .',
    'egrep -R -a SECRET .',
    'fgrep -R -a SECRET .',
    'rg -L -a SECRET .',
    'rg -a --follow SECRET',
    'zgrep -a SECRET sub/*',
    'diff -r sub tree',
    'find . -exec cat {} +',
    'find . -exec cat {} ;',
    'find -L . -exec cat {} +',
    'find . -type l -exec cat {} +',
    'find sub -exec grep -a SECRET {} +',
    'find . -name "e*" -exec tail -n +1 {} +',
    'find tree -exec cat {} +',
    'find -L tree -type f -exec cat {} +',
    'find . -exec strings {} +',
    'ls | xargs cat',
    'cd sub && ls | xargs cat',
    'find . | xargs cat',
    'find sub | xargs grep -a SECRET',
    'ls -d */* | xargs cat',
    'find . -print0 | xargs -0 cat',
    'grep -l -R x . | xargs cat',
    'find tree | xargs cat',
    'cd tree/hop && ls | xargs cat',
    'for f in sub/*; do cat "$f"; done',
    'for f in */*; do cat $f; done',
    'for f in *; do grep -R -a SECRET "$f"; done',
    'for d in sub tree; do cat "$d"/*; done',
    'cat $(find . -name "e*")',
    'cat $(ls -d sub/*)',
    'cat "$(ls sub/e*)"',
    'grep -a SECRET $(find .)',
    'wc -c sub/* && cat sub/*',
    'cat $(find -L tree)',
    'cd sub && cat *',
    'cd sub && cat e*',
    'cd r && cat */environ',
    'cd victim && cat *',
    'cd deep && grep -R -a SECRET .',
    'cd tree && cat */*',
    'cd / && grep -a SECRET proc/' + pid + '/env*',
    'cat sub/env',
    'cat victim/environ',
    'tail -n +1 r/' + pid + '/environ',
    'less sub/*',
    'more */*',
  ];
}

beforeAll(() => {
  victim = spawn('sleep', ['3600'], { stdio: 'ignore', env: { ...process.env, NOBWRAP_SECRET: SECRET } });
  dir = makeTempDir('quarry-nobwrap-');
  plant(dir, victim.pid!);
});

afterAll(() => {
  victim.kill('SIGKILL');
});

function policyOnly(): ToolRegistry {
  const registry = new ToolRegistry();
  registry.register(createBashTool({ ...bashToolOptions(loadProfile('readonly')), osSandbox: false }));
  return registry;
}

describe('the restricted shell without bubblewrap (policy layer alone)', () => {
  test('the planted links really lead to the secret (the test can fail)', () => {
    const leak = spawnSync('cat', [join(dir, 'sub', 'env')]);
    expect(leak.stdout.toString()).toContain(SECRET);
  });

  test('every attempt through planted links is refused or prints no secret, and nothing changes', async () => {
    const registry = policyOnly();
    const context = makeToolContext({ workingDir: dir });
    const before = snapshot(dir);
    const list = attempts(victim.pid!);
    expect(list.length).toBeGreaterThanOrEqual(72);
    const leaked: string[] = [];
    const allowed: string[] = [];
    for (const command of list) {
      const result = await registry.run('bash', { command, timeout: 5 }, context);
      if (result.output.includes(SECRET) || result.output.includes('NOBWRAP_SECRET')) leaked.push(command);
      if (result.ok) allowed.push(command);
    }
    expect(leaked).toEqual([]);
    // Refused, not merely failing: each names the link or the /proc path it would reach.
    expect(allowed).toEqual([]);
    expect(snapshot(dir)).toEqual(before);
    expect(isAlive(victim.pid!)).toBe(true);
  }, 600_000);

  test('refusals name the link and what it leads to', async () => {
    const registry = policyOnly();
    const result = await registry.run('bash', { command: 'grep -R -a SECRET tree' }, makeToolContext({ workingDir: join(dir, 'tree') }));
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/symbolic link ".*elsewhere\/e" leads to \/proc\/\d+\/environ.*install bubblewrap/);
  });

  test('the same reads run on a tree without such links', async () => {
    const clean = makeTempDir('quarry-nobwrap-clean-');
    mkdirSync(join(clean, 'sub'));
    writeFileSync(join(clean, 'sub', 'a.txt'), 'alpha\n');
    symlinkSync('a.txt', join(clean, 'sub', 'b.txt'));
    const registry = policyOnly();
    const context = makeToolContext({ workingDir: clean });
    for (const [command, expected] of [
      ['cat sub/*', 'alpha\nalpha\n'],
      ['grep -R -c alpha .', './sub/a.txt:1\n./sub/b.txt:1\n'],
      ['find sub -name "*.txt" -exec cat {} +', 'alpha\nalpha\n'],
      ['for f in sub/*; do wc -l < "sub/a.txt"; done', '1\n1\n'],
      ['ls -d sub/* | xargs cat', 'alpha\nalpha\n'],
    ] as const) {
      const result = await registry.run('bash', { command }, context);
      expect(result.ok, `${command}: ${result.output}`).toBe(true);
      const output = (JSON.parse(result.output) as { output: string }).output;
      expect(output.split('\n').sort().join('\n'), command).toBe(expected.split('\n').sort().join('\n'));
    }
  });
});

describe('finding and turning off bubblewrap', () => {
  test('bwrap is looked for on PATH too (absolute entries only), after the usual places', () => {
    const candidates = bubblewrapCandidates('/opt/bw/bin:relative:/usr/bin');
    expect(candidates.slice(0, 3)).toEqual(['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']);
    expect(candidates).toContain('/opt/bw/bin/bwrap');
    expect(candidates.some((candidate) => candidate.startsWith('relative'))).toBe(false);
    expect(candidates.filter((candidate) => candidate === '/usr/bin/bwrap')).toHaveLength(1);
  });

  test('QUARRY_NO_BWRAP=1 turns the OS layer off, and the tool says so', () => {
    const script =
      "const { bubblewrapSupport } = await import('./dist/tools/bash/sandbox.js'); const { allBuiltinTools } = await import('./dist/agent/toolset.js'); " +
      "console.log(JSON.stringify({ support: bubblewrapSupport(), description: allBuiltinTools().find((tool) => tool.name === 'bash').description }));";
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, QUARRY_NO_BWRAP: '1' }, encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const { support, description } = JSON.parse(run.stdout) as { support: { path: string | null; reason: string }; description: string };
    expect(support.path).toBeNull();
    expect(support.reason).toMatch(/turned off by QUARRY_NO_BWRAP=1/);
    expect(description).toMatch(/OS layer NOT active \(turned off by QUARRY_NO_BWRAP=1\)/);
  });
});
