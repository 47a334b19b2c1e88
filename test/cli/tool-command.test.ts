import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { REPO_ROOT, runQuarry } from '../support/cli.js';

let dir: string;
let home: string;
beforeEach(() => {
  dir = makeTempDir();
  home = makeTempDir('quarry-home-');
  writeFileSync(join(dir, 'notes.txt'), 'alpha\nbeta\ngamma\n');
});

const env = () => ({ QUARRY_HOME: home, QUARRY_PROFILE: undefined });

describe('quarry --version', () => {
  it('prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const result = await runQuarry(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it('prints the version also after other flags, without running anything', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const args of [
      ['--no-color', '--version'],
      ['-p', 'readonly', '-V'],
      ['--verbose', '--version', 'a question'],
    ]) {
      const result = await runQuarry(args, { env: env() });
      expect(result).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
    }
  });
});

describe('quarry tool', () => {
  it('runs a read and exits 0, printing one JSON object with --format json', async () => {
    const result = await runQuarry(['tool', 'read', '--args', '{"path":"notes.txt"}', '-w', dir, '--format', 'json'], { env: env() });
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as { ok: boolean; output: string; metadata: object };
    expect(Object.keys(parsed).sort()).toEqual(['metadata', 'ok', 'output']);
    expect(parsed.ok).toBe(true);
    expect(parsed.output).toContain('beta');
  });

  it('exits 1 when the tool fails, with the reason and no stack trace', async () => {
    const result = await runQuarry(['tool', 'read', '--args', '{"path":"missing.txt"}', '-w', dir], { env: env() });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('missing.txt');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('names the kind of every tool error in metadata.error; only invalid_arguments is a usage error', async () => {
    const run = async (args: string) => {
      const result = await runQuarry(['tool', 'read', '--args', args, '-w', dir, '--format', 'json'], { env: env() });
      return { code: result.code, ...(JSON.parse(result.stdout) as { ok?: boolean; output?: string; metadata?: { error?: string }; status?: string }) };
    };
    expect(await run('{"path":""}')).toMatchObject({
      code: 1,
      ok: false,
      output: 'path is empty; give a file or directory path',
      metadata: { error: 'bad_value' },
    });
    expect(await run('{"path":"missing.txt"}')).toMatchObject({ code: 1, ok: false, metadata: { error: 'not_found' } });
    expect(await run('{"path":"notes.txt","start_line":9}')).toMatchObject({ code: 1, ok: false, metadata: { error: 'bad_range' } });
    expect(await run('{"nope":1}')).toMatchObject({ code: 2, status: 'error' });
  });

  it('exits 2 for an unknown tool, naming the tools of the profile', async () => {
    const result = await runQuarry(['tool', 'frobnicate', '-w', dir], { env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^quarry: unknown tool "frobnicate"; tools under profile "readonly": /);
    const listed = result.stderr.trim().split(': ').at(-1)!.split(', ');
    expect(listed).toEqual(expect.arrayContaining(['read', 'grep', 'glob', 'list']));
    expect(listed).not.toContain('write');
  });

  it('exits 2 for a tool the profile does not offer, saying why', async () => {
    const result = await runQuarry(['tool', 'write', '--args', '{"path":"x.txt","content":"x"}', '-w', dir], { env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('tool "write" is not available under profile "readonly": file_write is off in this profile');
  });

  it('exits 2 for bad JSON and for arguments that fail the schema', async () => {
    const badJson = await runQuarry(['tool', 'read', '--args', '{path:', '-w', dir], { env: env() });
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('--args is not valid JSON');
    const notObject = await runQuarry(['tool', 'read', '--args', '[1]', '-w', dir], { env: env() });
    expect(notObject.code).toBe(2);
    const badField = await runQuarry(['tool', 'read', '--args', '{"path":"notes.txt","start_line":"two"}', '-w', dir], { env: env() });
    expect(badField.code).toBe(2);
    expect(badField.stderr).toContain('field "start_line" must be integer');
  });

  it('exits 2 for an unknown profile or a missing working directory', async () => {
    const profile = await runQuarry(['tool', 'read', '--args', '{"path":"notes.txt"}', '-p', 'nosuch', '-w', dir], { env: env() });
    expect(profile.code).toBe(2);
    expect(profile.stderr).toContain('unknown profile "nosuch"');
    const missing = await runQuarry(['tool', 'read', '--args', '{"path":"notes.txt"}', '-w', join(dir, 'nope')], { env: env() });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('working directory does not exist');
  });

  it("create-only writes and exports never go into quarry's home, also when QUARRY_HOME lies inside the working directory", async () => {
    // A config.yaml there would start its mcp_servers' commands at the next run.
    const quarryHome = join(dir, 'qhome');
    mkdirSync(quarryHome);
    const profile = join(dir, 'creator.yaml');
    writeFileSync(profile, 'file_write: create-only\napproval: {mode: none}\n');
    const db = join(REPO_ROOT, 'fixtures', 'sample.db');
    const calls = [
      ['write', { path: 'qhome/config.yaml', content: 'mcp_servers: {}\n' }, join(quarryHome, 'config.yaml')],
      ['write', { path: join(quarryHome, 'profiles', 'mine.yaml'), content: 'shell: unrestricted\n' }, join(quarryHome, 'profiles', 'mine.yaml')],
      ['sqlite', { operation: 'export_query', sql: 'SELECT 1 AS one', output_path: 'qhome/sessions/x.csv' }, join(quarryHome, 'sessions', 'x.csv')],
    ] as const;
    for (const [tool, args, target] of calls) {
      const result = await runQuarry(['tool', tool, '--args', JSON.stringify(args), '-p', profile, '-w', dir, '--db', db], {
        env: { ...env(), QUARRY_HOME: quarryHome },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `refused: ${target}: ${quarryHome} is quarry's home (QUARRY_HOME: its config.yaml, profiles and sessions are ` + `never written)\n`,
      );
    }
    expect(readdirSync(quarryHome)).toEqual([]);
    // Beside it, the working directory takes new files as before.
    const beside = await runQuarry(['tool', 'write', '--args', '{"path":"qhome-notes.txt","content":"ok"}', '-p', profile, '-w', dir], {
      env: { ...env(), QUARRY_HOME: quarryHome },
    });
    expect(beside.code).toBe(0);
    expect(readFileSync(join(dir, 'qhome-notes.txt'), 'utf8')).toBe('ok');
  });

  it('under the daytona profile, an export into a working directory that exists only in the sandbox creates nothing on this machine', async () => {
    // The working directory is the sandbox's (checked there); database tools and their export files stay here.
    const sandboxOnly = join(dir, 'sandbox', 'work');
    const db = join(REPO_ROOT, 'fixtures', 'sample.db');
    const calls = [
      ['sqlite', { operation: 'export_query', sql: 'SELECT 1 AS one', output_path: 'out.csv' }],
      ['sqlite', { operation: 'profile', table_name: 'orders', output_path: 'profile.md' }],
      ['chart', { sql: 'SELECT 1 AS a, 2 AS b', x: 'a', y: 'b', output_path: 'chart.svg' }],
    ] as const;
    for (const [tool, args] of calls) {
      const result = await runQuarry(['tool', tool, '--args', JSON.stringify(args), '-p', 'daytona', '-w', sandboxOnly, '--db', db, '--yes'], {
        env: { ...env(), DAYTONA_API_KEY: undefined },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `refused: ${join(sandboxOnly, args.output_path)}: the working directory ${sandboxOnly} does not exist where this file is ` +
          `written (export files of a Daytona session are written on this machine); give a path in the temporary directory or the profile's write_roots\n`,
      );
      expect(existsSync(join(dir, 'sandbox'))).toBe(false);
    }
  });

  it('refuses an approval-requiring call without --yes and leaves the disk untouched', async () => {
    const profileDir = join(home, 'profiles');
    mkdirSync(profileDir, { recursive: true });
    writeFileSync(join(profileDir, 'careful.yaml'), 'file_write: full\napproval: {mode: dangerous}\n');
    const refused = await runQuarry(['tool', 'write', '--args', '{"path":"new.txt","content":"hello"}', '-p', 'careful', '-w', dir, '--format', 'json'], {
      env: env(),
    });
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ ok: false, metadata: { error: 'approval_required' } });
    expect(JSON.parse(refused.stdout).output).toContain('Pass --yes to approve');
    expect(() => readFileSync(join(dir, 'new.txt'))).toThrow(/ENOENT/);

    const approved = await runQuarry(['tool', 'write', '--args', '{"path":"new.txt","content":"hello"}', '-p', 'careful', '-w', dir, '--yes'], { env: env() });
    expect(approved.code).toBe(0);
    expect(readFileSync(join(dir, 'new.txt'), 'utf8')).toBe('hello');
  });

  it('answers for the daytona profile without DAYTONA_API_KEY with a clear error, not a crash', async () => {
    const result = await runQuarry(['tool', 'read', '--args', '{"path":"notes.txt"}', '-p', 'daytona', '-w', dir], {
      env: { ...env(), DAYTONA_API_KEY: undefined },
    });
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      'read failed: the daytona backend needs DAYTONA_API_KEY (create a key at https://app.daytona.io/dashboard/keys and export it); or use a profile with ' +
        'backend: local',
    );
  });
});

describe('quarry tools and profiles', () => {
  it('lists the tools of a profile with their schemas', async () => {
    const result = await runQuarry(['tools', '--format', 'json', '-p', 'developer'], { env: env() });
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as { profile: string; tools: Array<{ name: string; parameters: { type: string } }> };
    expect(parsed.profile).toBe('developer');
    expect(parsed.tools.map((t) => t.name)).toEqual(expect.arrayContaining(['read', 'grep', 'glob', 'list', 'write', 'edit']));
    expect(parsed.tools.every((t) => t.parameters.type === 'object')).toBe(true);
  });

  it('lists a tool per configured database engine, and with --all what the profile does not offer', async () => {
    const db = join(REPO_ROOT, 'fixtures', 'sample.db');
    const result = await runQuarry(['tools', '--format', 'json', '--db', `sales=${db}`, '--all'], { env: env() });
    expect(result.code).toBe(0);
    const parsed = JSON.parse(result.stdout) as {
      tools: Array<{ name: string; available: boolean; unavailableReason?: string; parameters: { properties: Record<string, { enum?: string[] }> } }>;
    };
    const sqlite = parsed.tools.find((t) => t.name === 'sqlite');
    expect(sqlite?.available).toBe(true);
    expect(sqlite?.parameters.properties.database?.enum).toEqual(['sales']);
    expect(parsed.tools.some((t) => t.name === 'postgres')).toBe(false);
    expect(parsed.tools.find((t) => t.name === 'write')).toMatchObject({ available: false, unavailableReason: 'file_write is off in this profile' });
  });

  it('lists profiles and shows one in full', async () => {
    const list = await runQuarry(['profiles'], { env: env() });
    expect(list.code).toBe(0);
    expect(
      list.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(['readonly', 'developer', 'eval', 'daytona']);
    const show = await runQuarry(['profiles', 'show', 'developer'], { env: env() });
    expect(show.stdout).toContain('shell:         unrestricted');
    expect(show.stdout).toContain('approval:      granular (tools: sqlite, postgres, mysql, oracle, vertica; patterns: none)');
  });

  it('reports a bad user profile in one line with exit 2', async () => {
    mkdirSync(join(home, 'profiles'), { recursive: true });
    writeFileSync(join(home, 'profiles', 'broken.yaml'), 'shell: maybe\n');
    const result = await runQuarry(['profiles', 'show', 'broken'], { env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('"shell" is "maybe"; allowed values: restricted, unrestricted');
  });
});
