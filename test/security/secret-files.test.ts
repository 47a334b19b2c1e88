import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../support/agent-cli.js';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

/**
 * Credential files are out of the model's reach (docs/security.md): read, grep, glob roots,
 * list and the restricted shell refuse $QUARRY_HOME/config.yaml, ~/.pgpass, ~/.my.cnf, ~/.aws,
 * ~/.ssh, by path and through a link, and the refusal shows no part of the secret.
 */

const SECRET = 'db.internal:5432:*:analyst:pg-SECRET-7f3a';
let home: string;
let work: string;
let env: Record<string, string | undefined>;

beforeAll(() => {
  home = makeTempDir('quarry-secrets-home-');
  work = makeTempDir('quarry-secrets-work-');
  const quarryHome = join(home, '.quarry');
  mkdirSync(quarryHome);
  writeFileSync(
    join(quarryHome, 'config.yaml'),
    `mcp_servers: {crm: {type: http, url: "https://x.example/mcp", headers: {Authorization: "Bearer mcp-SECRET-9c1d"}}}\n`,
  );
  writeFileSync(join(home, '.pgpass'), `${SECRET}\n`, { mode: 0o600 });
  writeFileSync(join(home, '.my.cnf'), '[client]\npassword=my-SECRET-1b2c\n');
  mkdirSync(join(home, '.aws'));
  writeFileSync(join(home, '.aws', 'credentials'), '[default]\naws_secret_access_key=aws-SECRET-4d5e\n');
  mkdirSync(join(home, '.ssh'));
  writeFileSync(join(home, '.ssh', 'id_ed25519'), 'ssh-SECRET-6f7a\n');
  writeFileSync(join(work, 'notes.txt'), 'nothing secret here\n');
  symlinkSync(join(home, '.pgpass'), join(work, 'innocent.txt'));
  env = cliEnv(quarryHome, { HOME: home });
});

async function tool(name: string, args: Record<string, unknown>, flags: string[] = []) {
  const result = await runQuarry(['tool', name, '--args', JSON.stringify(args), '-w', work, ...flags], { env, timeoutMs: 30_000 });
  return { code: result.code, text: result.stdout + result.stderr };
}

describe('secret files', () => {
  it.each([
    ['read', { path: '~/.pgpass' }],
    ['read', { path: 'innocent.txt' }],
    ['read', { path: '~/.quarry/config.yaml' }],
    ['read', { path: '~/.aws/credentials' }],
    ['read', { path: '~/.my.cnf' }],
    ['list', { path: '~/.ssh' }],
    ['glob', { pattern: '*', path: '~/.ssh' }],
    ['grep', { pattern: 'SECRET', path: '~/.pgpass' }],
    ['grep', { pattern: 'SECRET', path: '~' }],
    ['bash', { command: 'cat ~/.pgpass' }],
    ['bash', { command: 'cat innocent.txt' }],
    ['bash', { command: 'grep -r SECRET ~' }],
    ['bash', { command: 'head ~/.ssh/id_ed25519' }],
  ])('%s %j is refused without showing the secret', async (name, args) => {
    const { code, text } = await tool(name, args);
    expect(code, text).not.toBe(0);
    expect(text).toMatch(/credentials/);
    expect(text).not.toMatch(/SECRET-/);
  });

  it('everyday reads still work: the working directory, and the home directory listed by name', async () => {
    expect((await tool('read', { path: 'notes.txt' })).text).toContain('nothing secret here');
    expect((await tool('grep', { pattern: 'secret', path: '.' })).text).toContain('nothing secret here');
    const listing = await tool('list', { path: '~', show_hidden: true });
    expect(listing.code).toBe(0);
    expect(listing.text).toContain('.my.cnf');
    expect(listing.text).not.toMatch(/SECRET-/);
  });

  it.each([
    ['edit', { path: '~/.pgpass', old_string: 'SECRET', new_string: 'x' }],
    ['edit', { path: 'innocent.txt', old_string: 'SECRET', new_string: 'x' }],
    ['write', { path: '~/.my.cnf', content: '[client]\n' }],
  ])('%s %j of a credential file is refused under developer, the file unchanged and unshown', async (name, args) => {
    const files = [join(home, '.pgpass'), join(home, '.my.cnf')];
    const before = files.map((file) => readFileSync(file, 'utf8'));
    const { code, text } = await tool(name, args, ['-p', 'developer']);
    expect(code, text).not.toBe(0);
    expect(text).toMatch(/credentials/);
    expect(text).not.toMatch(/SECRET-/);
    expect(files.map((file) => readFileSync(file, 'utf8'))).toEqual(before);
  });

  it('no write mode writes $QUARRY_HOME: write and edit under file_write: full are refused, directly and through a link', async () => {
    const config = join(home, '.quarry', 'config.yaml');
    const before = readFileSync(config, 'utf8');
    symlinkSync(config, join(work, 'settings.yaml'));
    const attempts = [
      await tool('write', { path: '~/.quarry/config.yaml', content: 'mcp_servers: {evil: {type: stdio, command: [sh]}}\n' }, ['-p', 'developer']),
      await tool('write', { path: 'settings.yaml', content: 'mcp_servers: {}\n' }, ['-p', 'developer']),
      await tool('edit', { path: '~/.quarry/config.yaml', old_string: 'crm', new_string: 'evil' }, ['-p', 'developer']),
      await tool('write', { path: '~/.quarry/profiles/mine.yaml', content: 'shell: unrestricted\n' }, ['-p', 'developer']),
    ];
    for (const attempt of attempts) {
      expect(attempt.code, attempt.text).not.toBe(0);
      expect(attempt.text).toMatch(/is quarry's home/);
    }
    expect(readFileSync(config, 'utf8')).toBe(before);
    expect(existsSync(join(home, '.quarry', 'profiles'))).toBe(false);
  });
});
