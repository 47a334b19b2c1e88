import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { NO_ONE_TO_ASK } from '../../src/tools/ask-user/tool.js';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer, type RecordedRequest, type Reply } from '../support/fake-openai.js';
import { runOnPty } from '../support/pty.js';

/**
 * ask_user (docs/guide/tools.md "ask_user") through the built CLI and a loopback model that records what it is
 * sent: on a terminal (one-shot and REPL, on a real pseudo-terminal) the person's answer reaches
 * the model; without a terminal the model is told no one can be asked; past the profile's budget
 * the same; and `quarry eval` answers from a question's clarifications (or says no one can be
 * asked) and counts the calls.
 */

const QUESTION = { question: 'Which quarter: fiscal or calendar?', options: ['fiscal quarter (Feb-Apr)', 'calendar quarter (Jan-Mar)'] };
const ask = (id: string) => ({ id, name: 'ask_user', arguments: JSON.stringify(QUESTION) });

let servers: FakeServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((server) => server.close()));
  servers = [];
});

async function model(source: Reply[] | ((request: RecordedRequest, index: number) => Reply)): Promise<FakeServer> {
  const server = await startOpenAIServer(source);
  servers.push(server);
  return server;
}

/** What each ask_user call returned, as sent to the model in its last request. */
function toolResults(server: FakeServer): string[] {
  const last = server.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>;
  return last.filter((message) => message.role === 'tool').map((message) => message.content);
}

function setup(): { home: string; work: string; env: Record<string, string | undefined> } {
  const home = makeTempDir('quarry-ask-home-');
  return { home, work: makeTempDir('quarry-ask-work-'), env: cliEnv(home, { OPENAI_API_KEY: 'test-key' }) };
}

describe('ask_user in a run', () => {
  it('one-shot on a terminal: the question and its options are shown, and the chosen option reaches the model', async () => {
    const { work, env } = setup();
    const server = await model([{ toolCalls: [ask('c1')] }, { text: 'Using the fiscal quarter: done.' }]);
    const result = await runOnPty(['-m', 'gpt-test', '--base-url', server.url, '-w', work, 'Revenue last quarter?'], env, [
      { expect: 'Question from the agent: Which quarter' },
      { expect: '2\\. calendar quarter' },
      { expect: 'Answer \\(a number' },
      { send: '1\r' },
      { expect: 'Using the fiscal quarter: done\\.' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(server.requests).toHaveLength(2);
    expect(toolResults(server)).toEqual(['The user answered: fiscal quarter (Feb-Apr)']);
  }, 60_000);

  it("in the REPL: asked at the prompt, answered in the person's own words", async () => {
    const { work, env } = setup();
    const server = await model([{ toolCalls: [ask('c1')] }, { text: 'Calendar it is.' }]);
    const result = await runOnPty(['-m', 'gpt-test', '--base-url', server.url, '-w', work], env, [
      { expect: 'quarry> ' },
      { send: 'Revenue last quarter?\r' },
      { expect: 'Question from the agent' },
      { send: 'the calendar one, Q3\r' },
      { expect: 'Calendar it is\\.' },
      { expect: 'quarry> ' },
      { send: '\u0004' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(toolResults(server)).toEqual(['The user answered: the calendar one, Q3']);
  }, 60_000);

  it('without a terminal: no one can be asked, and the run goes on', async () => {
    const { work, env } = setup();
    const server = await model([{ toolCalls: [ask('c1')] }, { text: 'Assuming the calendar quarter.' }]);
    const result = await runCli(['-m', 'gpt-test', '--base-url', server.url, '-w', work, 'Revenue last quarter?'], { env, timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Assuming the calendar quarter.');
    expect(toolResults(server)).toEqual([NO_ONE_TO_ASK]);
  }, 30_000);

  it('over the budget (ask_user_budget: 1): the second question is not put to the person', async () => {
    const { home, work, env } = setup();
    const profile = join(home, 'one-question.yaml');
    writeFileSync(profile, 'name: one-question\nask_user_budget: 1\n');
    const server = await model([{ toolCalls: [ask('c1')] }, { toolCalls: [ask('c2')] }, { text: 'Went with fiscal.' }]);
    const result = await runOnPty(['-m', 'gpt-test', '--base-url', server.url, '-p', profile, '-w', work, 'Revenue last quarter?'], env, [
      { expect: 'Answer \\(a number' },
      { send: '1\r' },
      { expect: 'Went with fiscal\\.' },
    ]);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(result.transcript.match(/Question from the agent/g)).toHaveLength(1);
    expect(toolResults(server)).toEqual(['The user answered: fiscal quarter (Feb-Apr)', `${NO_ONE_TO_ASK} (the 1 question allowed per request are used up)`]);
  }, 60_000);

  it('a profile with a bad budget is a usage error', async () => {
    const { home, env } = setup();
    const profile = join(home, 'bad.yaml');
    writeFileSync(profile, 'name: bad\nask_user_budget: -1\n');
    const result = await runCli(['-m', 'script:x.json', '-p', profile, 'hi'], { env });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('"ask_user_budget" must be a whole number of questions from 0 to 100, got -1');
  });
});

describe('ask_user in quarry eval', () => {
  it('answers from clarifications, else says no one can be asked, and reports how often it was called', async () => {
    const { home, env } = setup();
    const shop = join(home, 'shop.db');
    const db = new Database(shop);
    db.exec("CREATE TABLE sales (quarter TEXT, amount REAL); INSERT INTO sales VALUES ('fiscal', 10), ('calendar', 20);");
    db.close();
    const suite = join(home, 'suite.yaml');
    writeFileSync(
      suite,
      [
        'questions:',
        '  - {id: clarified, question: Sales last quarter?, database: shop, expected_sql: "SELECT amount FROM sales WHERE quarter = \'fiscal\'", clarifications: fiscal}',
        '  - {id: unclear, question: Sales this quarter?, database: shop, expected_sql: "SELECT amount FROM sales WHERE quarter = \'calendar\'"}',
        '',
      ].join('\n'),
    );
    // The model asks once, then queries the quarter it was told (calendar when no one answered).
    const server = await model((request) => {
      const messages = request.body.messages as Array<{ role: string; content: string }>;
      const tool = messages.filter((message) => message.role === 'tool');
      if (tool.length === 0) return { toolCalls: [ask('c1')] };
      const quarter = tool[0]!.content.includes('fiscal') ? 'fiscal' : 'calendar';
      return { text: `\`\`\`sql\nSELECT amount FROM sales WHERE quarter = '${quarter}'\n\`\`\`` };
    });
    const out = join(home, 'out');
    const result = await runCli(['eval', suite, '--db', `shop=${shop}`, '-m', 'gpt-test', '--base-url', server.url, '--out', out, '--format', 'json'], {
      env,
      timeoutMs: 60_000,
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = readFileSync(join(out, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    const byId = Object.fromEntries(lines.map((entry) => [entry.id, entry]));
    expect(byId.clarified.correct).toBe(true);
    expect(byId.unclear.correct).toBe(true);
    expect(byId.clarified.attempts[0].ask_user_calls).toBe(1);
    expect(byId.unclear.attempts[0].ask_user_calls).toBe(1);
    const toolContents = server.requests
      .flatMap((request) => (request.body.messages as Array<{ role: string; content: string }>).filter((message) => message.role === 'tool'))
      .map((message) => message.content);
    expect(new Set(toolContents)).toEqual(new Set(['The user answered: fiscal', NO_ONE_TO_ASK]));
    const report = JSON.parse(result.stdout);
    expect(report.total.ask_user_calls).toBe(2);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('ask_user: called 2 times, in 2 attempts');
  }, 60_000);
});
