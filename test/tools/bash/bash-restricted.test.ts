import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LocalBackend } from '../../../src/backends/local.js';
import { bashToolOptions, buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { createBashTool } from '../../../src/tools/bash/tool.js';
import { ToolRegistry } from '../../../src/tools/core/registry.js';
import { restrictedEnvironment } from '../../../src/tools/bash/environment.js';
import { bubblewrapSupport, SANDBOX_TMPDIR, sandboxedArgv } from '../../../src/tools/bash/sandbox.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { BENIGN, ESCAPES } from './policy/corpus.js';
import { isAlive, makeCanaryDir, snapshot, startCanaryProcess } from './policy/canary.js';

/**
 * Effect-based checks of the restricted shell (issue 6): every escape of the corpus is refused
 * and leaves the canary directory (names, sizes, hashes, modes) and the canary process as they
 * were; every benign command prints exactly what it should; with and without the OS layer.
 */

const SECRET = 'sk-canary-secret-0123456789';
const DB_PASSWORD = 'canary-db-password';
const POOL = 4;

let dir: string;
let before: Record<string, string>;
let canary: ChildProcess;

beforeAll(() => {
  process.env.QUARRY_TEST_API_KEY = SECRET;
  process.env.QUARRY_TEST_DB = `postgres://app:${DB_PASSWORD}@db.internal/prod`;
  process.env.PGPASSWORD = DB_PASSWORD;
  dir = makeCanaryDir();
  before = snapshot(dir);
  canary = startCanaryProcess();
});

afterAll(() => {
  canary.kill('SIGKILL');
  delete process.env.QUARRY_TEST_API_KEY;
  delete process.env.QUARRY_TEST_DB;
  delete process.env.PGPASSWORD;
});

async function runPool<T, R>(items: T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: POOL }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!);
      }
    }),
  );
  return results;
}

/** Where bubblewrap cannot run (not installed, no user namespaces), the OS-layer tests are skipped and say why. */
const bwrap = bubblewrapSupport();
const withoutBwrap = bwrap.path ? '' : ` (skipped: ${bwrap.reason})`;

const layers = [
  ...(bwrap.path ? [{ name: 'with the OS layer', registry: () => buildToolRegistry(loadProfile('readonly')) }] : []),
  {
    name: 'with the policy layer only',
    registry: () => {
      const registry = new ToolRegistry();
      registry.register(createBashTool({ ...bashToolOptions(loadProfile('readonly')), osSandbox: false }));
      return registry;
    },
  },
];

test.skipIf(!bwrap.path)(`bubblewrap works on this machine (the OS layer is active)${withoutBwrap}`, () => {
  expect(bubblewrapSupport()).toMatchObject({ reason: '' });
  expect(bubblewrapSupport().path).toMatch(/bwrap$/);
  expect(buildToolRegistry(loadProfile('readonly')).get('bash')?.description).toContain('OS layer active');
  expect(createBashTool({ ...bashToolOptions(loadProfile('readonly')), osSandbox: false }).description).toContain('OS layer NOT active');
});

describe.each(layers)('restricted bash $name', ({ registry: makeRegistry }) => {
  const escapes = Object.entries(ESCAPES).flatMap(([category, commands]) => commands.map((command) => ({ category, command })));

  test(`${escapes.length} escape attempts are refused and change nothing`, async () => {
    const registry = makeRegistry();
    const context = makeToolContext({ workingDir: dir });
    const results = await runPool(escapes, async ({ category, command }) => {
      const result = await registry.run('bash', { command: command.replaceAll('{PID}', String(canary.pid)) }, context);
      return { category, command, ok: result.ok, output: result.output };
    });
    const escaped = results.filter((result) => result.ok || !result.output.includes('refused'));
    expect(escaped).toEqual([]);
    const leaked = results.filter((result) => result.output.includes(SECRET) || result.output.includes(DB_PASSWORD));
    expect(leaked).toEqual([]);
    expect(snapshot(dir)).toEqual(before);
    expect(isAlive(canary.pid!)).toBe(true);
  });

  test(`${BENIGN.length} inspection commands run and print the right output`, async () => {
    const registry = makeRegistry();
    const context = makeToolContext({ workingDir: dir });
    const results = await runPool(BENIGN, async ({ command, expect: expected }) => {
      const result = await registry.run('bash', { command }, context);
      const parsed = result.ok ? (JSON.parse(result.output) as { output: string }) : { output: `NOT OK: ${result.output}` };
      const good = typeof expected === 'string' ? parsed.output === expected : expected.test(parsed.output);
      return { command, good, output: parsed.output };
    });
    expect(results.filter((result) => !result.good)).toEqual([]);
    expect(snapshot(dir)).toEqual(before);
    expect(isAlive(canary.pid!)).toBe(true);
  }, 120_000); // about 150 real commands, each under bubblewrap, on a shared machine

  test('env and printenv never print secrets (a known escape of the Python original)', async () => {
    const registry = makeRegistry();
    const context = makeToolContext({ workingDir: dir });
    for (const command of ['env', 'printenv', 'env -0', 'printenv QUARRY_TEST_API_KEY PGPASSWORD QUARRY_TEST_DB']) {
      const result = await registry.run('bash', { command }, context);
      expect(result.ok).toBe(true);
      expect(result.output).not.toContain(SECRET);
      expect(result.output).not.toContain(DB_PASSWORD);
    }
    const env = JSON.parse((await registry.run('bash', { command: 'env' }, context)).output) as { output: string };
    expect(env.output).toMatch(/^PATH=/m);
    expect(env.output).not.toMatch(/^(QUARRY_TEST_API_KEY|PGPASSWORD|QUARRY_TEST_DB)=/m);
  });
});

/** A repository whose own configuration names programs git would run on read commands (the "known gap" of issue 6). */
function makeRepositoryWithPrograms(marker: string): string {
  const repo = makeTempDir('quarry-evil-repo-');
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: repo,
      stdio: 'ignore',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@e',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@e',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
    });
  git('init', '-q');
  writeFileSync(join(repo, 'f.txt'), 'a\n');
  writeFileSync(join(repo, '.gitattributes'), '*.txt diff=evil filter=evil\n');
  git('add', '.');
  git('commit', '-q', '-m', 'x');
  writeFileSync(join(repo, 'f.txt'), 'a\nb\n');
  for (const key of ['diff.evil.textconv', 'diff.evil.command', 'filter.evil.clean', 'filter.evil.process']) git('config', key, `touch ${marker}; cat`);
  return repo;
}

describe.each(layers)('git under a repository configuration that names programs, $name', ({ registry: makeRegistry }) => {
  test('every read subcommand is refused, naming the key, and the programs never run', async () => {
    const marker = join(makeTempDir('quarry-marker-'), 'ran');
    const repo = makeRepositoryWithPrograms(marker);
    const registry = makeRegistry();
    const context = makeToolContext({ workingDir: repo });
    for (const command of [
      'git status',
      'git diff',
      'git log -p',
      'git show',
      'git blame f.txt',
      'git grep a',
      'git diff --no-ext-diff --no-textconv',
      'cd .. && git -C ' + repo + ' diff',
    ]) {
      const result = await registry.run('bash', { command }, context);
      expect(result.ok, command).toBe(false);
      expect(result.output, command).toMatch(/configuration sets (diff|filter)\.evil\./);
    }
    expect(existsSync(marker)).toBe(false);
  });
});

describe.each(layers)('from the root directory, $name', ({ registry: makeRegistry }) => {
  test('listing works; recursive reads and patterns that could reach /proc are refused', async () => {
    const registry = makeRegistry();
    const context = makeToolContext({ workingDir: '/' });
    const listing = await registry.run('bash', { command: 'ls | grep -cx proc' }, context);
    expect(JSON.parse(listing.output)).toMatchObject({ output: '1\n', exit_code: 0 });
    for (const command of [
      'grep -r QUARRY',
      'rg QUARRY',
      'ls *',
      'cat */1/e*',
      'grep -ra QUARRY proc/1',
      'find . -maxdepth 1 -name proc -exec grep -r x {} +',
    ]) {
      const result = await registry.run('bash', { command }, context);
      expect(result.ok, command).toBe(false);
      expect(result.output, command).not.toContain(SECRET);
    }
  });
});

describe.skipIf(!bwrap.path)(`the OS layer on its own (policy bypassed)${withoutBwrap}`, () => {
  const backend = new LocalBackend();
  const runSandboxed = async (script: string) => {
    const argv = sandboxedArgv(['/bin/bash', '-c', `exec 2>&1; ${script}`], dir);
    expect(argv).not.toBeNull();
    return backend.execFile(argv!, { cwd: dir, env: restrictedEnvironment(process.env, { TMPDIR: SANDBOX_TMPDIR }), timeoutMs: 20_000 });
  };

  test('destructive commands fail with a read-only file system and change nothing', async () => {
    const result = await runSandboxed(
      'rm -rf notes.txt logs; echo x > data.csv; chmod 777 readonly.txt; touch new; mkdir d; ln -s a b; mv data.json moved; echo done',
    );
    const text = result.stdout.toString();
    expect(text).toContain('Read-only file system');
    expect(text).toContain('done');
    expect(snapshot(dir)).toEqual(before);
  });

  test('host processes cannot be signalled, their environments cannot be read, and the network is off', async () => {
    const pid = canary.pid!;
    const result = await runSandboxed(
      `kill -9 ${pid}; echo kill=$?; cat /proc/${pid}/environ >/dev/null; echo environ=$?; ps -e | grep -c sleep; cat < /dev/tcp/127.0.0.1/22; echo net=$?; ` +
        `ls /sys/class/net`,
    );
    const text = result.stdout.toString();
    expect(text).toMatch(/kill=1/);
    expect(text).toMatch(/environ=1/);
    expect(text).toMatch(/net=1/);
    expect(text.trim().split('\n').at(-1)).toBe('lo');
    expect(isAlive(pid)).toBe(true);
  });

  test("ps in the restricted shell lists the host's processes (the canary among them)", async () => {
    const registry = buildToolRegistry(loadProfile('readonly'));
    const result = await registry.run('bash', { command: 'ps -e -o pid=,comm=' }, makeToolContext({ workingDir: dir }));
    expect(result.metadata?.sandboxed).toBe(true);
    const rows = (JSON.parse(result.output) as { output: string }).output.split('\n').map((line) => line.trim());
    expect(rows).toContain(`${canary.pid} sleep`);
    expect(rows.length).toBeGreaterThan(3);
  });

  test("shell_network none takes the network away; loopback and all keep the host's", async () => {
    const server = createServer((_, response) => response.end('metric_total 7\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      for (const [network, expected] of [
        ['none', /net=1/],
        ['loopback', /metric_total 7\nnet=0/],
        ['all', /metric_total 7\nnet=0/],
      ] as const) {
        const argv = sandboxedArgv(['/bin/bash', '-c', `exec 2>&1; curl -s --max-time 3 http://127.0.0.1:${port}/; echo net=$?`], dir, network);
        const result = await backend.execFile(argv!, { cwd: dir, env: restrictedEnvironment(process.env, { TMPDIR: SANDBOX_TMPDIR }), timeoutMs: 20_000 });
        expect(result.stdout.toString(), network).toMatch(network === 'none' ? /net=[1-9]/ : expected);
      }
    } finally {
      server.close();
    }
  });

  test('a private scratch directory (TMPDIR) is writable; the host /tmp is not', async () => {
    const result = await runSandboxed('echo scratch > "$TMPDIR/x"; cat "$TMPDIR/x"; touch /tmp/quarry-sandbox-probe; echo tmp=$?');
    expect(result.stdout.toString()).toMatch(/^scratch\n/);
    expect(result.stdout.toString()).toMatch(/tmp=1/);
  });
});
