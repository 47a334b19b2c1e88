import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDaytonaBackend } from '../../src/backends/daytona.js';
import { DEFAULT_SANDBOX_IMAGE, sandboxSpecFromEnv } from '../../src/backends/daytona-sdk.js';
import { shellCommandLine, shellQuote } from '../../src/backends/shell-quote.js';
import { BackendUnavailableError } from '../../src/backends/types.js';
import { openWorkspace } from '../../src/agent/workspace.js';
import { buildToolRegistry } from '../../src/agent/toolset.js';
import { loadProfile } from '../../src/profiles/load.js';
import { NASTY_ARGUMENTS } from '../support/backend-contract.js';
import { makeTempDir, makeToolContext } from '../support/context.js';
import { fakeDaytona, SANDBOX_FILES_SEPARATE } from '../support/fake-daytona.js';

describe('shell quoting for a remote command line', () => {
  it('brings every nasty argument through a real sh unchanged', () => {
    const out = execFileSync('sh', ['-c', shellCommandLine(['printf', '%s\\0', ...NASTY_ARGUMENTS])], { encoding: 'utf8' });
    expect(out.split('\0').slice(0, -1)).toEqual(NASTY_ARGUMENTS);
  });

  it('quotes anything but plain words, and never lets "=" make a first word an assignment', () => {
    expect(shellQuote('plain/path-1.txt')).toBe('plain/path-1.txt');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('X=1')).toBe(`'X=1'`);
    expect(execFileSync('sh', ['-c', `${shellQuote('X=1')} 2>&1 || true`], { encoding: 'utf8' })).toMatch(/not found/);
    expect(() => shellQuote('a\0b')).toThrow(/NUL byte/);
  });
});

describe('daytona sandbox settings from the environment', () => {
  it('uses ubuntu:latest by default and converts memory from MB to GiB', () => {
    expect(sandboxSpecFromEnv({ DAYTONA_API_KEY: 'k' })).toEqual({
      apiKey: 'k',
      apiUrl: undefined,
      image: DEFAULT_SANDBOX_IMAGE,
      cpu: undefined,
      memoryGiB: undefined,
      diskGiB: undefined,
    });
    expect(DEFAULT_SANDBOX_IMAGE).toBe('ubuntu:latest');
    expect(
      sandboxSpecFromEnv({
        DAYTONA_API_KEY: 'k',
        DAYTONA_API_URL: 'https://d.example/api',
        DAYTONA_SANDBOX_IMAGE: 'debian:12',
        DAYTONA_SANDBOX_CPU: '2',
        DAYTONA_SANDBOX_MEMORY: '3000',
        DAYTONA_SANDBOX_DISK: '10',
      }),
    ).toEqual({ apiKey: 'k', apiUrl: 'https://d.example/api', image: 'debian:12', cpu: 2, memoryGiB: 3, diskGiB: 10 });
  });

  it('names a bad number and a missing key', () => {
    expect(() => sandboxSpecFromEnv({ DAYTONA_API_KEY: 'k', DAYTONA_SANDBOX_CPU: 'two' })).toThrow(
      'DAYTONA_SANDBOX_CPU must be a positive number (cores), got "two"',
    );
    expect(() => sandboxSpecFromEnv({})).toThrow(/needs DAYTONA_API_KEY/);
  });
});

describe('daytona backend lifecycle (fake sandbox)', () => {
  it('creates no sandbox until the first call, then one shared by every call, with the settings asked for', async () => {
    const fake = fakeDaytona({ DAYTONA_SANDBOX_IMAGE: 'debian:12', DAYTONA_SANDBOX_MEMORY: '2048' });
    const backend = createDaytonaBackend(fake.env, fake.factory);
    expect(fake.sandboxes).toHaveLength(0);
    expect(backend.started).toBe(false);
    await Promise.all([backend.which('sh'), backend.stat('/'), backend.homeDir(), backend.listDir('/')]);
    await backend.readFile('/etc/hostname');
    expect(fake.sandboxes).toHaveLength(1);
    expect(fake.sandboxes[0]!.spec).toMatchObject({ image: 'debian:12', memoryGiB: 2, apiKey: 'test-key' });
    await backend.dispose();
    expect(fake.sandboxes[0]!.deleted).toBe(true);
  });

  it('fails at the first remote call, not at start, with a clear message when DAYTONA_API_KEY is missing', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend({}, fake.factory);
    await expect(backend.stat('/')).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(backend.stat('/')).rejects.toThrow(/needs DAYTONA_API_KEY/);
    expect(fake.sandboxes).toHaveLength(0);
    const dir = makeTempDir();
    const registry = buildToolRegistry(loadProfile('daytona'));
    const result = await registry.run('read', { path: 'x.txt' }, makeToolContext({ workingDir: dir, backend }));
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/^read failed: the daytona backend needs DAYTONA_API_KEY/);
    await backend.dispose();
  });

  it('deletes the sandbox once at dispose, and refuses calls afterwards', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    await backend.which('sh');
    await Promise.all([backend.dispose(), backend.dispose()]);
    expect(fake.sandboxes.map((sandbox) => sandbox.deleted)).toEqual([true]);
    await expect(backend.stat('/')).rejects.toThrow('the Daytona sandbox of this session has already been deleted');
  });

  it('with the real SDK and an unreachable API, the first call fails with a clear message (no crash, no hang)', async () => {
    const backend = createDaytonaBackend({ DAYTONA_API_KEY: 'test-key', DAYTONA_API_URL: 'http://127.0.0.1:9/api' });
    await expect(backend.stat('/')).rejects.toThrow(/^could not create a Daytona sandbox \(image ubuntu:latest\): .*ECONNREFUSED/);
    await backend.dispose();
  });

  it('disposes without creating anything when no call was made', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    await backend.dispose();
    expect(fake.sandboxes).toHaveLength(0);
  });

  it('runs one command line per metadata call', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    await backend.stat('/');
    const sandbox = fake.sandboxes[0]!;
    const before = sandbox.commands.length;
    await backend.lstat('/tmp');
    await backend.realpath('/tmp');
    expect(sandbox.commands.length - before).toBe(2);
    await backend.dispose();
  });

  it("gives commands the sandbox's environment, never this machine's", async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    process.env.QUARRY_TEST_LOCAL_SECRET_KEY = 'local-only-value';
    try {
      const env = await backend.environment();
      expect(env.HOME).toBe(fake.sandboxes[0]!.home);
      expect(env.QUARRY_TEST_LOCAL_SECRET_KEY).toBeUndefined();
      const registry = buildToolRegistry(loadProfile('daytona'));
      const dir = fake.makeDir();
      const result = await registry.run(
        'bash',
        { command: 'echo "home=$HOME secret=${QUARRY_TEST_LOCAL_SECRET_KEY:-none}"' },
        makeToolContext({ workingDir: dir, backend }),
      );
      expect(JSON.parse(result.output).output).toBe(`home=${fake.sandboxes[0]!.home} secret=none\n`);
      expect(fake.sandboxes[0]!.commands.join('\n')).not.toContain('local-only-value');
    } finally {
      delete process.env.QUARRY_TEST_LOCAL_SECRET_KEY;
      await backend.dispose();
    }
  });

  it('the workspace of the daytona profile deletes nothing it never created, and closes cleanly', async () => {
    const dir = makeTempDir();
    const workspace = await openWorkspace({ profile: 'daytona', workingDir: dir, mcp: false });
    expect(workspace.backend.name).toBe('daytona');
    await workspace.close();
    await workspace.close();
  });
});

describe('the working directory of a daytona profile is checked in the sandbox, not on this machine', () => {
  const apart = SANDBOX_FILES_SEPARATE ? '' : " (skipped: bubblewrap cannot run here, so the fake sandbox shares this machine's files)";

  it.skipIf(!SANDBOX_FILES_SEPARATE)(
    `accepts a directory that exists only in the sandbox, and refuses one that exists only on this machine with one line${apart}`,
    async () => {
      const fake = fakeDaytona();
      const daytona = { env: fake.env, createSandbox: fake.factory };
      const hostOnly = makeTempDir('quarry-host-only-');
      const sandboxOnly = fake.makeDir('quarry-sandbox-only-');
      writeFileSync(fake.hostPath(join(sandboxOnly, 'x.txt')), 'in the sandbox\n');
      expect(existsSync(sandboxOnly)).toBe(false);

      const accepted = await openWorkspace({ profile: 'daytona', workingDir: sandboxOnly, mcp: false, daytona });
      try {
        const result = await accepted.registry.run('read', { path: 'x.txt' }, makeToolContext({ workingDir: accepted.workingDir, backend: accepted.backend }));
        expect(result.ok).toBe(true);
        expect(result.output).toContain('in the sandbox');
      } finally {
        await accepted.close();
      }

      const refused = await openWorkspace({ profile: 'daytona', workingDir: hostOnly, mcp: false, daytona });
      try {
        const context = makeToolContext({ workingDir: refused.workingDir, backend: refused.backend });
        const result = await refused.registry.run('list', { path: '.' }, context);
        expect(result.ok).toBe(false);
        expect(result.output).toBe(
          `list failed: working directory does not exist in the Daytona sandbox: ${hostOnly} (the sandbox has its own files; give -w a directory that ` +
            `exists there)`,
        );
        // The accepted workspace's sandbox was deleted at close; this one as soon as its check failed.
        expect(fake.sandboxes.map((sandbox) => sandbox.deleted)).toEqual([true, true]);
        // Later calls say the same, without another sandbox.
        expect((await refused.registry.run('read', { path: 'x.txt' }, context)).output).toMatch(
          /^read failed: working directory does not exist in the Daytona sandbox: /,
        );
        expect(fake.sandboxes).toHaveLength(2);
      } finally {
        await refused.close();
      }
    },
  );
});
