import { cpSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { runOnPty } from '../support/pty.js';

/**
 * Every command that takes `--config` reads config.yaml through one place (src/config/home.ts,
 * src/config/config-file.ts), so a missing file and a mistake in the file are the same one-line
 * usage error (exit 2) from each, and nothing is started or written first.
 */

let home: string;
let work: string;
let script: string;
beforeAll(() => {
  home = makeTempDir('quarry-home-');
  work = makeTempDir('quarry-work-');
  cpSync(join(REPO_ROOT, 'fixtures', 'sample.db'), join(work, 'sample.db'));
  writeFileSync(join(work, 'app.log'), 'INFO start\n');
  script = join(work, 'script.json');
  writeFileSync(script, JSON.stringify({ turns: [{ text: 'never used' }] }));
});

/** Each command that takes --config, as a user would run it (without the --config). */
function commands(out: string): Array<[string, string[]]> {
  return [
    ['tools', ['tools']],
    ['tool', ['tool', 'read', '--args', '{"path":"app.log"}']],
    ['db list', ['db', 'list']],
    ['db check', ['db', 'check', '--db', 'sample.db']],
    ['mcp', ['mcp']],
    ['run', ['-m', `script:${script}`, 'a question']],
    [
      'eval',
      [
        'eval',
        join(REPO_ROOT, 'fixtures', 'eval', 'sample-bird.json'),
        '--db-dir',
        join(REPO_ROOT, 'fixtures', 'eval', 'dbs'),
        '-m',
        `script:${script}`,
        '--out',
        out,
      ],
    ],
  ];
}

async function expectSameErrorEverywhere(config: string, line: string): Promise<void> {
  const out = join(makeTempDir('quarry-eval-'), 'out');
  for (const [name, args] of commands(out)) {
    const result = await runCli([...args, '--config', config], { cwd: work, env: cliEnv(home) });
    expect(result, name).toMatchObject({ code: 2, stdout: '', stderr: `quarry: ${line}\n` });
  }
  // eval stops before it writes its output folder.
  expect(existsSync(out)).toBe(false);
  // The REPL (a terminal on stdin, no prompt) stops before its first prompt.
  const repl = await runOnPty(['-m', `script:${script}`, '-w', work, '--config', config], cliEnv(home), [{ expect: 'quarry: ' }]);
  expect(repl.failed).toBeNull();
  expect(repl.code).toBe(2);
  expect(repl.transcript).toContain(`quarry: ${line}`);
  expect(repl.transcript).not.toContain('quarry> ');
}

describe('--config, the same for every command', () => {
  it('a named file that is missing is one line, exit 2', async () => {
    await expectSameErrorEverywhere('/nonexistent.yaml', '--config /nonexistent.yaml: file not found');
  }, 120_000);

  it('an unknown key in config.yaml is one line naming it, exit 2', async () => {
    const config = join(work, 'typo.yaml');
    writeFileSync(config, 'mcp_server:\n  files: {type: stdio, command: [x]}\n');
    await expectSameErrorEverywhere(config, `${config}: unknown key "mcp_server"; allowed keys: databases, mcp_servers, knowledge`);
  }, 120_000);

  it('the default $QUARRY_HOME/config.yaml is read by every command alike, and may be absent', async () => {
    const own = makeTempDir('quarry-home-');
    const absent = await runCli(['db', 'list'], { cwd: work, env: cliEnv(own) });
    expect(absent).toMatchObject({ code: 0, stdout: expect.stringContaining('No databases configured.') });
    writeFileSync(join(own, 'config.yaml'), 'databases:\n  sales: {type: sqlite, path: ' + join(work, 'sample.db') + '}\n');
    const listed = await runCli(['db', 'list'], { cwd: work, env: cliEnv(own) });
    expect(listed).toMatchObject({ code: 0, stdout: `sales  sqlite ${join(work, 'sample.db')}  (from ${join(own, 'config.yaml')} (databases.sales))\n` });
    const tools = await runCli(['tools', '--format', 'json'], { cwd: work, env: cliEnv(own) });
    expect(tools.code).toBe(0);
    expect((JSON.parse(tools.stdout) as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name)).toContain('sqlite');
  }, 60_000);
});
