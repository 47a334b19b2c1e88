import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { describeDatabase, loadDatabaseConfigs } from '../../src/config/databases.js';
import { checkHostKey, keyFingerprint, knownKeyTypes } from '../../src/tools/database/known-hosts.js';
import { scrubSecrets } from '../../src/tools/database/secrets.js';
import { makeTempDir } from '../support/context.js';

/** The `ssh:` block of a database entry and known_hosts matching (docs/guide/databases.md "SSH tunnels"). */

function hostKey(dir: string, name: string): { line: string; blob: Buffer } {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path]);
  const line = readFileSync(`${path}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
  return { line, blob: Buffer.from(line.split(' ')[1]!, 'base64') };
}

describe('known_hosts', () => {
  const dir = makeTempDir('quarry-known-hosts-');
  const key = hostKey(dir, 'a');
  const other = hostKey(dir, 'b');

  test('port 22 is listed by bare name, any other port as [host]:port', () => {
    const file = join(dir, 'plain');
    writeFileSync(file, `# comment\nbastion.example,10.0.0.1 ${key.line}\n[bastion.example]:2222 ${other.line}\n`);
    expect(checkHostKey(file, 'bastion.example', 22, key.blob)).toEqual({ ok: true });
    expect(checkHostKey(file, '10.0.0.1', 22, key.blob)).toEqual({ ok: true });
    expect(checkHostKey(file, 'BASTION.example', 2222, other.blob)).toEqual({ ok: true });
    // The port-22 key does not vouch for port 2222, nor the reverse.
    expect(checkHostKey(file, 'bastion.example', 2222, key.blob)).toMatchObject({ ok: false, message: expect.stringContaining('has CHANGED') });
    expect(checkHostKey(file, 'bastion.example', 22, other.blob)).toMatchObject({ ok: false, message: expect.stringContaining('line 2 holds another') });
    expect(knownKeyTypes(file, 'bastion.example', 22)).toEqual(['ssh-ed25519']);
  });

  test('hashed entries (ssh-keygen -H) match; wildcards, negation and @revoked are honoured', () => {
    const file = join(dir, 'hashed');
    writeFileSync(file, `[db.internal]:2200 ${key.line}\n`);
    execFileSync('ssh-keygen', ['-q', '-H', '-f', file], { stdio: 'ignore' });
    expect(readFileSync(file, 'utf8')).not.toContain('db.internal');
    expect(checkHostKey(file, 'db.internal', 2200, key.blob)).toEqual({ ok: true });
    expect(checkHostKey(file, 'db.internal', 22, key.blob)).toMatchObject({ ok: false, message: expect.stringContaining('is unknown') });

    const patterns = join(dir, 'patterns');
    writeFileSync(patterns, `*.corp,!evil.corp ${key.line}\n@revoked * ${other.line}\n`);
    expect(checkHostKey(patterns, 'db.corp', 22, key.blob)).toEqual({ ok: true });
    expect(checkHostKey(patterns, 'evil.corp', 22, key.blob)).toMatchObject({ ok: false, message: expect.stringContaining('is unknown') });
    expect(checkHostKey(patterns, 'db.corp', 22, other.blob)).toMatchObject({ ok: false, message: expect.stringContaining('marked @revoked') });
  });

  test('a refusal names the fingerprint as ssh-keygen prints it', () => {
    const printed = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', join(dir, 'a.pub')], { encoding: 'utf8' }).split(' ')[1];
    expect(keyFingerprint(key.blob)).toBe(printed);
    const verdict = checkHostKey(join(dir, 'absent'), 'h', 2022, key.blob);
    expect(verdict).toMatchObject({ ok: false });
    expect(!verdict.ok && verdict.message).toContain(`is unknown (ssh-ed25519 ${printed}; not in ${join(dir, 'absent')}); refused`);
  });
});

describe('ssh: block', () => {
  const dir = makeTempDir('quarry-ssh-config-');
  const load = (yaml: string, env: NodeJS.ProcessEnv = {}) => {
    const file = join(dir, 'databases.yaml');
    writeFileSync(file, yaml);
    return loadDatabaseConfigs({ databasesFile: file, env: { HOME: '/home/ana', ...env }, cwd: dir });
  };

  test('defaults, ~ and relative paths, jump hosts; shown without secrets', () => {
    const [config] = load(
      'databases:\n  prod:\n    url: postgres://app:dbpass@10.0.0.5/sales\n    ssh:\n      host: bastion\n      user: ana\n      identity_file: ~/.ssh/id_prod\n' +
        '      passphrase: ${PHRASE}\n      jump: [{host: edge, port: 2222, user: ana, identity_file: keys/edge}]\n',
      { PHRASE: 'open-sesame-42' },
    );
    expect(config!.ssh).toEqual({
      host: 'bastion',
      port: 22,
      user: 'ana',
      identityFile: '/home/ana/.ssh/id_prod',
      passphrase: 'open-sesame-42',
      knownHosts: '/home/ana/.ssh/known_hosts',
      jump: [{ host: 'edge', port: 2222, user: 'ana', identityFile: join(dir, 'keys/edge') }],
      keepaliveSeconds: 30,
    });
    expect(describeDatabase(config!)).toBe('postgres app@10.0.0.5:5432/sales (ssh ana@bastion:22 via ana@edge:2222)');
    expect(scrubSecrets('bad passphrase open-sesame-42 for key', config!)).toBe('bad passphrase *** for key');
  });

  test('mistakes are one ConfigError that says what to fix', () => {
    expect(() => load('databases:\n  p:\n    url: postgres://h/db\n    ssh: {host: b, user: u, identty_file: k}\n')).toThrow(
      /databases\.p\.ssh: unknown key "identty_file"; allowed keys: host, port, user, identity_file/,
    );
    expect(() => load('databases:\n  p:\n    url: postgres://h/db\n    ssh: {user: u}\n')).toThrow(/databases\.p\.ssh: needs "host"/);
    expect(() => load('databases:\n  p:\n    url: postgres://h/db\n    ssh: {host: b, user: u, port: 99999}\n')).toThrow(/ssh\.port must be a port number/);
    expect(() => load(`databases:\n  f:\n    type: sqlite\n    path: ${join(dir, 'databases.yaml')}\n    ssh: {host: b, user: u}\n`)).toThrow(
      /a sqlite database is a local file; ssh: is for server engines/,
    );
  });
});
