import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processesMatching } from '../support/processes.js';
import { cliEnv } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { runOnPty } from '../support/pty.js';

/** The REPL on a real pseudo-terminal, as a new user drives it (issue 12, item 19). */

function files(home: string, turns: unknown[]): { script: string; profile: string } {
  const script = join(home, 'script.json');
  writeFileSync(script, JSON.stringify({ turns }));
  const profile = join(home, 'shell.yaml');
  writeFileSync(profile, 'name: shell\nshell: unrestricted\napproval:\n  mode: none\n');
  return { script, profile };
}

function userMessages(home: string, id: string): string[] {
  return readFileSync(join(home, 'sessions', id, 'trace.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; message?: { role: string; content: string } })
    .filter((e) => e.type === 'message' && e.message?.role === 'user')
    .map((e) => e.message!.content);
}

describe('the REPL', () => {
  it('queues a line typed during a turn and runs it after; Ctrl+D during a turn cancels it and exits', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const marker = `sleep 43.${process.pid}`;
    const { script, profile } = files(home, [
      { text: 'Working.', tool_calls: [{ name: 'bash', arguments: { command: 'sleep 1' } }] },
      { text: 'First done.' },
      { text: 'Second answer.' },
      { text: 'Sleeping.', tool_calls: [{ name: 'bash', arguments: { command: marker } }] },
      { text: 'never shown' },
    ]);
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work], cliEnv(home), [
      { expect: 'quarry> ' },
      { send: 'first\r' },
      { expect: 'Working\\.' },
      { send: 'second\r' },
      { expect: 'queued: runs after the current turn' },
      { expect: 'First done\\.' },
      { expect: 'Second answer\\.' },
      { expect: 'quarry> ' },
      { send: 'third\r' },
      { expect: 'Sleeping\\.' },
      { sleep: 0.5 },
      { send: '\u0004' },
    ]);
    expect(result.failed).toBeNull();
    // The process ended on its own after Ctrl+D, with the turn cancelled and nothing left running.
    expect(result.code).toBe(0);
    expect(result.transcript).not.toContain('never shown');
    expect(processesMatching(marker)).toEqual([]);
    const [id] = readdirSync(join(home, 'sessions'));
    expect(userMessages(home, id!)).toEqual(['first', 'second', 'third']);
    const ends = readFileSync(join(home, 'sessions', id!, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; status?: string })
      .filter((e) => e.type === 'run_end')
      .map((e) => e.status);
    expect(ends).toEqual(['completed', 'completed', 'cancelled']);
  });

  it('/tools is one line per tool, /tools NAME the full text; the Ctrl+C hint is on its own line; /compact reports once; /resume opens another ' +
    'session', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    // An earlier session to resume.
    const earlier = files(home, [{ text: 'Earlier answer.' }]);
    await runOnPty(['--model', `script:${earlier.script}`, '--profile', earlier.profile, '-w', work, 'earlier question'], cliEnv(home), [
      { expect: 'Earlier answer' },
    ]);
    const [earlierId] = readdirSync(join(home, 'sessions'));
    const { script, profile } = files(home, [{ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' }, { text: 'Summary of the talk.' }]);
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work], cliEnv(home, { COLUMNS: '100' }), [
      { expect: 'quarry> ' },
      { send: '/tools\r' },
      { expect: '/tools NAME shows one tool in full' },
      { send: '/tools grep\r' },
      { expect: 'arguments: ' },
      { expect: 'quarry> ' },
      { send: 'a\r' },
      { expect: 'One\\.' },
      { expect: 'quarry> ' },
      { send: 'b\r' },
      { expect: 'Two\\.' },
      { expect: 'quarry> ' },
      { send: 'c\r' },
      { expect: 'Three\\.' },
      { expect: 'quarry> ' },
      { send: '/compact\r' },
      { expect: 'compact' },
      { expect: 'quarry> ' },
      { send: '/resume\r' },
      { expect: 'resumed session' },
      { expect: 'quarry> ' },
      { send: '\u0003' },
      { expect: 'Ctrl\\+C again' },
      { send: '\u0003' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    const text = result.transcript.replace(/\r/g, '');
    const toolsBlock = text.slice(text.indexOf('/tools\n'), text.indexOf('/tools NAME shows'));
    const rows = toolsBlock.split('\n').filter((line) => /^ {2}\w+( \(read-only\))?: /.test(line));
    expect(rows.map((row) => row.trim().split(/[ :]/)[0])).toEqual(expect.arrayContaining(['read', 'grep', 'bash', 'list', 'glob']));
    for (const row of rows) expect(row.length).toBeLessThanOrEqual(100);
    // The grep description in full has more lines than its one-line row.
    expect(text.slice(text.indexOf('/tools grep')).split('arguments: ')[0]!.split('\n').length).toBeGreaterThan(3);
    expect(text.match(/compacted \d+ earlier messages|compaction failed|nothing to compact yet/g)).toHaveLength(1);
    expect(text).toContain(`resumed session ${earlierId}`);
    // The hint starts a line: it is not glued after the prompt.
    expect(text).toMatch(/\n\(Ctrl\+C again or Ctrl\+D to exit\)/);
    expect(text).not.toMatch(/quarry> \(Ctrl\+C again/);
  }, 60_000);

  it('a tool row does not count the time spent at the approval question', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const script = join(home, 'script.json');
    writeFileSync(script, JSON.stringify({ turns: [{ tool_calls: [{ name: 'write', arguments: { path: 'a.txt', content: 'a' } }] }, { text: 'Written.' }] }));
    const profile = join(home, 'asks.yaml');
    writeFileSync(profile, 'name: asks\nfile_write: create-only\napproval:\n  mode: dangerous\n');
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work, 'write a'], cliEnv(home), [
      { expect: '\\[a\\]lways for write: ' },
      { sleep: 2 },
      { send: 'y\r' },
      { expect: 'Written\\.' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(readFileSync(join(work, 'a.txt'), 'utf8')).toBe('a');
    const [id] = readdirSync(join(home, 'sessions'));
    const end = readFileSync(join(home, 'sessions', id!, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; name?: string; duration_ms?: number })
      .find((e) => e.type === 'tool_end' && e.name === 'write');
    expect(end?.duration_ms).toBeLessThan(1000);
  });
});

describe('the REPL on a terminal shows the answer as Markdown, a live line while a tool runs, and exits on a new line', () => {
  it('renders bold, code and tables; names the running tool with its seconds; leaves the shell prompt on its own line', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const { script, profile } = files(home, [
      { text: 'Checking.', tool_calls: [{ name: 'bash', arguments: { command: 'sleep 2' } }] },
      {
        text: [
          '## Sales by region',
          '',
          'The **south** leads; the query was `SELECT region, amount FROM sales`.',
          '',
          '| region | amount |',
          '|---|--:|',
          '| south | 25.5 |',
          '| north | 10 |',
          '',
          '- one bullet',
        ].join('\n'),
      },
    ]);
    const result = await runOnPty(['--model', `script:${script}`, '--profile', profile, '-w', work], cliEnv(home), [
      { expect: 'quarry> ' },
      { send: 'sales?\r' },
      { expect: 'bash 1\\.\\d s' },
      { expect: 'one bullet' },
      { expect: 'quarry> ' },
      { send: '\u0004' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    const text = result.transcript.replace(/\r/g, '');
    // Markdown marks are gone (NO_COLOR: no escape codes either), the table is aligned with the
    // numbers right-aligned, the bullet is a bullet.
    expect(text).toContain('Sales by region\n');
    expect(text).not.toContain('## Sales');
    expect(text).toContain('The south leads; the query was SELECT region, amount FROM sales.');
    expect(text).toMatch(/ {2}region {2}amount\n {2}─{6} {2}─{6}\n {2}south {5}25\.5\n {2}north {7}10\n/);
    expect(text).toContain('• one bullet');
    // At exit the cursor leaves the "quarry> " line: the transcript ends on a new line.
    const plain = text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
    expect(plain.endsWith('quarry> \n')).toBe(true);
  }, 40_000);
});
