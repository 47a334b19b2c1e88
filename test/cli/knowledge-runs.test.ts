import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv } from '../support/agent-cli.js';
import { REPO_ROOT, runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer } from '../support/fake-openai.js';
import { runOnPty } from '../support/pty.js';

/** The knowledge folder in agent runs: the system prompt, the tool, and /verify in the REPL on a real pseudo-terminal. */

const SAMPLE_KNOWLEDGE = join(REPO_ROOT, 'fixtures', 'knowledge');
let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('a run with a knowledge folder', () => {
  it('puts every rule whole and a short index into the system prompt, and offers the knowledge tool', async () => {
    server = await startOpenAIServer(() => ({ text: 'ok' }));
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    cpSync(SAMPLE_KNOWLEDGE, join(work, '.quarry', 'knowledge'), { recursive: true });
    const result = await runQuarry(['--base-url', server.url, '--model', 'm', '-w', work, 'revenue per year?'], { env: cliEnv(home), cwd: work });
    expect(result.code).toBe(0);
    const body = server.requests[0]!.body as { messages: Array<{ role: string; content: string }>; tools: Array<{ function: { name: string } }> };
    const system = body.messages.find((message) => message.role === 'system')!.content;
    const rules = parse(readFileSync(join(SAMPLE_KNOWLEDGE, 'rules.yaml'), 'utf8')) as Array<{ rule: string }>;
    for (const { rule } of rules) expect(system).toContain(rule);
    expect(system).toMatch(/- 14 verified queries: aov_by_shipping_country, customers_by_country/);
    expect(system).toMatch(/- 3 metrics: revenue, order_count, average_order_value/);
    expect(body.tools.map((tool) => tool.function.name)).toContain('knowledge');
    // Without a folder: neither.
    const bare = makeTempDir('quarry-work-');
    await runQuarry(['--base-url', server.url, '--model', 'm', '-w', bare, 'revenue per year?'], { env: cliEnv(home), cwd: bare });
    const plain = server.requests[1]!.body as { messages: Array<{ role: string; content: string }>; tools: Array<{ function: { name: string } }> };
    expect(plain.messages[0]!.content).not.toContain('Team knowledge');
    expect(plain.tools.map((tool) => tool.function.name)).not.toContain('knowledge');
  });

  it('keeps the index within its budget for a folder of 2,000 verified queries', async () => {
    server = await startOpenAIServer(() => ({ text: 'ok' }));
    const home = makeTempDir('quarry-home-');
    const folder = join(makeTempDir(), 'knowledge');
    mkdirSync(join(folder, 'queries'), { recursive: true });
    for (let i = 0; i < 2000; i++)
      writeFileSync(join(folder, 'queries', `q${i}.yaml`), `question: question ${i}\nsql: SELECT ${i}\nverified_by: a\nverified_at: 2025-01-01\n`);
    const result = await runQuarry(['--base-url', server.url, '--model', 'm', '--knowledge', folder, 'hi'], { env: cliEnv(home) });
    expect(result.code).toBe(0);
    const system = (server.requests[0]!.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    const section = system.slice(system.indexOf('Team knowledge'));
    expect(section).toMatch(/- 2000 verified queries: q0, q1, .* and \d+ more/);
    expect(section.length).toBeLessThan(1500);
  });
});

describe('/verify in the REPL', () => {
  it('shows the last question and its SQL, saves nothing on n, and saves the query with its result on y', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const db = join(work, 'shop.db');
    cpSync(join(REPO_ROOT, 'fixtures', 'sample.db'), db);
    const folder = join(work, 'team-knowledge');
    mkdirSync(folder);
    const firstSql = 'SELECT status, COUNT(*) AS orders FROM orders GROUP BY status';
    const secondSql = 'SELECT COUNT(*) AS customers FROM customers';
    const script = join(home, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { text: 'Looking.', tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT nonsense FROM nowhere' } }] },
          { text: 'Again.', tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: firstSql } }] },
          { text: 'Five statuses.' },
          { text: 'Counting.', tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: secondSql } }] },
          { text: '600 customers.' },
        ],
      }),
    );
    const result = await runOnPty(
      ['--model', `script:${script}`, '--db', `sales=${db}`, '--knowledge', folder, '-w', work],
      cliEnv(home, { QUARRY_USER: 'pty analyst' }),
      [
        { expect: 'quarry> ' },
        { send: '/verify\r' },
        { expect: 'nothing to verify yet' },
        { send: 'How many orders per status?\r' },
        { expect: 'Five statuses\\.' },
        { expect: 'quarry> ' },
        { send: '/verify\r' },
        { expect: 'Save it as a verified query' },
        { send: 'n\r' },
        { expect: 'not saved' },
        { expect: 'quarry> ' },
        { send: 'How many customers do we have?\r' },
        { expect: '600 customers\\.' },
        { expect: 'quarry> ' },
        { send: '/verify\r' },
        { expect: 'Save it as a verified query' },
        { send: 'y\r' },
        { expect: 'saved query how_many_customers_do_we_have' },
        { expect: 'quarry> ' },
        { send: '/exit\r' },
      ],
    );
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    // The first answer's SQL was shown (the failed call before it was not), and nothing was saved for it.
    expect(result.transcript).toContain('Question: How many orders per status?');
    expect(result.transcript).toContain(firstSql);
    expect(readdirSync(join(folder, 'queries'))).toEqual(['how_many_customers_do_we_have.yaml']);
    const saved = parse(readFileSync(join(folder, 'queries', 'how_many_customers_do_we_have.yaml'), 'utf8')) as Record<string, unknown>;
    expect(saved).toMatchObject({
      question: 'How many customers do we have?',
      sql: `${secondSql}\n`,
      database: 'sales',
      verified_by: 'pty analyst',
      expect: { rows: 1 },
    });
    expect(existsSync(join(folder, 'queries', 'how_many_orders_per_status.yaml'))).toBe(false);
    // What was saved passes the check.
    const check = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`], { env: cliEnv(home) });
    expect(check.code).toBe(0);
  });
});
