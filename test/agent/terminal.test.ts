import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processesMatching } from '../support/processes.js';
import { cliEnv } from '../support/agent-cli.js';
import { CLI_PATH } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { runOnPty } from '../support/pty.js';

/** What needs a terminal: the REPL and its slash commands, interactive approval, Ctrl+C in the REPL. */

function scriptFile(dir: string, turns: unknown[]): string {
  const path = join(dir, 'script.json');
  writeFileSync(path, JSON.stringify({ turns }));
  return path;
}

function profileFile(dir: string, body: string): string {
  const path = join(dir, 'profile.yaml');
  writeFileSync(path, body);
  return path;
}

describe('on a terminal', () => {
  it('asks before each write: no refuses, always approves this tool for the rest of the run', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const write = (path: string) => ({ tool_calls: [{ name: 'write', arguments: { path, content: `${path} content` } }] });
    const script = scriptFile(home, [write('a.txt'), write('b.txt'), write('c.txt'), { text: 'All done.' }]);
    const profile = profileFile(home, 'name: careful\ndescription: asks\nfile_write: create-only\napproval:\n  mode: dangerous\n');
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work, 'write three files'], cliEnv(home), [
      { expect: 'Allow write \\{"path":"a.txt"' },
      { expect: '\\[a\\]lways for write: ' },
      { send: 'n\r' },
      { expect: 'Allow write \\{"path":"b.txt"' },
      { send: 'a\r' },
      { expect: 'All done\\.' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(existsSync(join(work, 'a.txt'))).toBe(false);
    expect(readFileSync(join(work, 'b.txt'), 'utf8')).toBe('b.txt content');
    expect(readFileSync(join(work, 'c.txt'), 'utf8')).toBe('c.txt content');
    expect(result.transcript).not.toMatch(/Allow write \{"path":"c\.txt"/);
    expect(result.transcript).toMatch(/refused write a\.txt .*refused by the user/);
  });

  it('Ctrl+C at an approval question cancels the one-shot run (exit 130, nothing written)', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const script = scriptFile(home, [{ tool_calls: [{ name: 'write', arguments: { path: 'x.txt', content: 'x' } }] }, { text: 'never' }]);
    const profile = profileFile(home, 'name: careful\ndescription: asks\nfile_write: create-only\napproval:\n  mode: dangerous\n');
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work, 'write it'], cliEnv(home), [
      { expect: '\\[a\\]lways for write: ' },
      { send: '\u0003' },
      { expect: 'cancelled' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(130);
    expect(existsSync(join(work, 'x.txt'))).toBe(false);
    expect(result.transcript).not.toContain('never');
  });

  it('runs the REPL: slash commands, a question, Ctrl+C cancels a running command, Ctrl+C twice exits', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const marker = `sleep 41.${process.pid}`;
    const script = scriptFile(home, [
      { text: 'First answer.' },
      { text: 'Sleeping.', tool_calls: [{ name: 'bash', arguments: { command: marker } }] },
      { text: 'After the cancel.' },
    ]);
    const profile = profileFile(home, 'name: shell\ndescription: shell\nshell: unrestricted\napproval:\n  mode: none\n');
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work], cliEnv(home), [
      { expect: 'quarry> ' },
      { send: '/help\r' },
      { expect: '/compact' },
      { expect: 'quarry> ' },
      { send: '/tools\r' },
      { expect: 'bash' },
      { expect: 'quarry> ' },
      { send: 'first question\r' },
      { expect: 'First answer\\.' },
      { expect: 'quarry> ' },
      { send: 'now sleep\r' },
      { expect: 'Sleeping\\.' },
      { sleep: 0.5 },
      { send: '\u0003' },
      { expect: 'cancelled' },
      { expect: 'quarry> ' },
      { send: 'again\r' },
      { expect: 'After the cancel\\.' },
      { expect: 'quarry> ' },
      { send: '/bogus\r' },
      { expect: 'unknown command /bogus' },
      { expect: 'quarry> ' },
      { send: '\u0003' },
      { expect: 'Ctrl\\+C again' },
      { send: '\u0003' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    const [id] = readdirSync(join(home, 'sessions'));
    const trace = readFileSync(join(home, 'sessions', id as string, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; status?: string; message?: { role: string; content: string } });
    expect(trace.filter((e) => e.type === 'run_end').map((e) => e.status)).toEqual(['completed', 'cancelled', 'completed']);
    const users = trace.filter((e) => e.type === 'message' && e.message?.role === 'user').map((e) => e.message?.content);
    expect(users).toEqual(['first question', 'now sleep', 'again']);
    expect(readFileSync(join(home, 'repl_history'), 'utf8')).toContain('first question');
    // The cancelled sleep left no process behind (pgrep exits 1 when nothing matches).
    expect(processesMatching(marker)).toEqual([]);
  });

  it("/resume continues only a session that ran under the REPL's own profile, and lets go of the session it leaves", async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const env = cliEnv(home);
    const answer = join(home, 'answer.json');
    writeFileSync(answer, JSON.stringify({ turns: [{ text: 'One-shot answer.' }] }));
    const start = (profile: string) =>
      JSON.parse(
        execFileSync(process.execPath, [CLI_PATH, '-m', `script:${answer}`, '-p', profile, '-w', work, '--format', 'json', 'first'], {
          env: env as NodeJS.ProcessEnv,
          encoding: 'utf8',
        }),
      ) as { session_id: string };
    const underEval = start('eval').session_id;
    const underReadonly = start('readonly').session_id;
    const evalTrace = readFileSync(join(home, 'sessions', underEval, 'trace.jsonl'), 'utf8');
    const script = scriptFile(home, [{ text: 'Continued.' }]);
    const result = await runOnPty(['--model', `script:${script}`, '-w', work], env, [
      { expect: 'quarry> ' },
      { send: `/resume ${underEval}\r` },
      {
        expect:
          `session ${underEval} ran under profile eval \\(built-in\\), not this REPL's readonly \\(built-in\\); continue it with quarry --resume ` +
          `${underEval}`,
      },
      { expect: 'quarry> ' },
      { send: `/resume ${underReadonly}\r` },
      { expect: `resumed session ${underReadonly} \\(2 messages\\)` },
      { expect: 'quarry> ' },
      { send: 'next\r' },
      { expect: 'Continued\\.' },
      { expect: 'quarry> ' },
      { send: '\u0004' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(readFileSync(join(home, 'sessions', underEval, 'trace.jsonl'), 'utf8')).toBe(evalTrace);
    const users = readFileSync(join(home, 'sessions', underReadonly, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; message?: { role: string; content: string } })
      .filter((e) => e.type === 'message' && e.message?.role === 'user')
      .map((e) => e.message?.content);
    expect(users).toEqual(['first', 'next']);
    // Three sessions (two one-shots and the REPL's own), none left locked.
    const sessions = readdirSync(join(home, 'sessions'));
    expect(sessions).toHaveLength(3);
    for (const id of sessions) expect(existsSync(join(home, 'sessions', id, 'lock'))).toBe(false);
  });
});
