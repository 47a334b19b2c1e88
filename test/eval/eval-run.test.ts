import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, collect, runCli, spawnCli } from '../support/agent-cli.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { openAIEvents, type ScriptedToolCall } from '../support/fake-openai.js';

/**
 * `quarry eval` end to end through the built CLI: the bundled BIRD-format suite with the
 * scripted provider; a loopback OpenAI-compatible model whose answers are right, wrong, failing
 * or too slow; voting; Ctrl+C and --resume; the concurrency limit; Spider and YAML suites;
 * `eval compare`.
 */

interface ModelReply {
  text?: string;
  toolCalls?: ScriptedToolCall[];
  delayMs?: number;
  status?: number;
}

/** A loopback Chat Completions server whose reply depends on the question (the first user message) and the call count. */
async function startModel(
  answer: (question: string, call: number, body: Record<string, unknown>) => ModelReply,
): Promise<{ url: string; requests: number; close(): Promise<void> }> {
  const calls = new Map<string, number>();
  const state = { requests: 0 };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      state.requests++;
      const parsed = JSON.parse(body) as { messages: Array<{ role: string; content: unknown }> };
      const question = String(parsed.messages.find((message) => message.role === 'user')?.content ?? '');
      const count = (calls.get(question) ?? 0) + 1;
      calls.set(question, count);
      const reply = answer(question, count, parsed as unknown as Record<string, unknown>);
      const send = () => {
        if (res.destroyed) return;
        if (reply.status) {
          res.writeHead(reply.status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `status ${reply.status} from the test model`, type: 'invalid_request_error' } }));
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const event of openAIEvents({
          ...(reply.text !== undefined ? { text: reply.text } : {}),
          ...(reply.toolCalls ? { toolCalls: reply.toolCalls } : {}),
        }))
          res.write(event);
        res.end();
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get requests() {
      return state.requests;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const isToolResultTurn = (body: Record<string, unknown>) => (body.messages as Array<{ role: string }>).some((message) => message.role === 'tool');

let home: string;
let dbDir: string;

/** A BIRD-layout database dir with one small database "shop". */
function makeShop(root: string): void {
  mkdirSync(join(root, 'shop'), { recursive: true });
  const db = new Database(join(root, 'shop', 'shop.sqlite'));
  db.exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, kind TEXT);
    INSERT INTO items (name, price, kind) VALUES ('apple', 1.5, 'fruit'), ('pear', 2.25, 'fruit'), ('kale', 3.0, 'veg'), ('leek', 0.75, 'veg');`);
  db.close();
}

function writeSuite(dir: string, name: string, entries: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof entries === 'string' ? entries : JSON.stringify(entries, null, 2));
  return path;
}

const QUESTIONS = [
  {
    question_id: 1,
    db_id: 'shop',
    question: 'How many fruits are there?',
    evidence: "fruit refers to kind = 'fruit'",
    SQL: "SELECT COUNT(*) FROM items WHERE kind = 'fruit'",
    difficulty: 'simple',
  },
  {
    question_id: 2,
    db_id: 'shop',
    question: 'Which item is cheapest?',
    evidence: '',
    SQL: 'SELECT name FROM items ORDER BY price LIMIT 1',
    difficulty: 'simple',
  },
  {
    question_id: 3,
    db_id: 'shop',
    question: 'What is the total price of vegetables?',
    evidence: "vegetables refers to kind = 'veg'",
    SQL: "SELECT SUM(price) FROM items WHERE kind = 'veg'",
    difficulty: 'moderate',
  },
  { question_id: 4, db_id: 'shop', question: 'List every item name.', evidence: '', SQL: 'SELECT name FROM items', difficulty: 'moderate' },
];

beforeAll(() => {
  home = makeTempDir('quarry-eval-home-');
  dbDir = join(home, 'dbs');
  makeShop(dbDir);
});

function readJsonl(path: string): Array<Record<string, any>> {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

describe('quarry eval with the bundled suite', () => {
  it('runs fixtures/eval/sample-bird.json with the scripted model and writes report.md, report.json and one session per question', async () => {
    const out = join(home, 'bundled');
    const result = await runCli(
      [
        'eval',
        'fixtures/eval/sample-bird.json',
        '--db-dir',
        'fixtures/eval/dbs',
        '-m',
        'script:fixtures/eval/sample-bird.script.json',
        '--out',
        out,
        '--format',
        'json',
      ],
      { env: cliEnv(home), cwd: REPO_ROOT, timeoutMs: 120_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    // The script answers 3 questions wrongly on purpose and one without a fenced block.
    expect(report.total).toMatchObject({ count: 20, correct: 17, unscored: 0 });
    expect(report.sql_sources).toEqual({ answer: 19, last_query: 1 });
    expect(report.groups.map((group: { group: string }) => group.group)).toEqual(['simple', 'moderate', 'challenging']);
    expect(report.config).toMatchObject({ suite_format: 'bird', compare: 'set', model: 'script:fixtures/eval/sample-bird.script.json', profile: 'readonly' });
    expect(report.config.prompt_sha256).toMatch(/^[0-9a-f]{64}$/);
    const markdown = readFileSync(join(out, 'report.md'), 'utf8');
    expect(markdown).toMatch(/\| total \| 20 \| 85\.0% \(17\) \|/);
    // Database operations per question: the script looks up "Tea" and "Toronto" with find_values before filtering on them.
    expect(report.operations.totals.find_values).toEqual({ calls: 2, questions: 2 });
    expect(report.operations.totals.list_tables.questions).toBe(20);
    const torontoId = readJsonl(join(out, 'results.jsonl')).find((entry) => String(entry.question).includes('Toronto'))!.id;
    const toronto = report.operations.per_question.find((entry: { id: string }) => entry.id === torontoId);
    expect(toronto.operations).toEqual({ list_tables: 1, find_values: 1, query: 1 });
    expect(markdown).toMatch(/## Database operations\n\nCalls in all: .*find_values 2 \(in 2 questions\)/);
    const results = readJsonl(join(out, 'results.jsonl'));
    // Every wrong question is listed with its reason, its SQL and a few rows of each side, the
    // rows being those the scorer compared (results.jsonl holds them too).
    const wrong = results.filter((entry) => !entry.correct);
    expect(report.wrong.map((entry: { id: string }) => entry.id)).toEqual(wrong.map((entry) => entry.id));
    expect(markdown).toContain(`## Wrong answers (${wrong.length})`);
    for (const entry of wrong) {
      const section = markdown.slice(markdown.indexOf(`### ${entry.id}: `));
      const own = section.slice(0, section.indexOf('\n### ', 4) > 0 ? section.indexOf('\n### ', 4) : undefined);
      expect(own).toContain(`- reason: ${entry.attempts[0].mismatch ?? entry.attempts[0].error}`);
      expect(own).toMatch(new RegExp(`- expected \\(${entry.expected_rows} rows?\\):`));
      expect(own).toMatch(new RegExp(`- returned \\(${entry.attempts[0].rows} rows?\\):`));
      const firstExpected = entry.expected_sample[0];
      if (firstExpected) expect(own).toContain(`| ${firstExpected.map((value: unknown) => (value === null ? 'NULL' : String(value))).join(' | ')} |`);
    }
    expect(results).toHaveLength(20);
    expect(new Set(results.map((entry) => entry.id)).size).toBe(20);
    const sessions = readdirSync(join(out, 'sessions'));
    expect(sessions).toHaveLength(20);
    for (const entry of results) expect(sessions).toContain(entry.attempts[0].session_id);
    // The gold SQL of the bundled suite all runs (checked against fixtures/sample.db).
    expect(results.filter((entry) => entry.gold_error)).toEqual([]);
  }, 120_000);
});

describe('quarry eval with a model over the wire', () => {
  it('scores right, wrong and failing SQL; --vote picks the majority of equal results', async () => {
    const model = await startModel((question, call, body) => {
      const answer = (sql: string) => ({ text: `Done.\n\`\`\`sql\n${sql}\n\`\`\`` });
      if (question.includes('fruits')) return answer("SELECT COUNT(*) FROM items WHERE kind = 'fruit'");
      if (question.includes('cheapest')) return answer('SELECT name FROM items ORDER BY price DESC LIMIT 1'); // wrong
      if (question.includes('vegetables')) return answer('SELECT SUM(prise) FROM items'); // fails to run
      if (question.includes('every item')) {
        // First query, then answer: attempts alternate wrong, right, right (voting fixes attempt 1).
        if (!isToolResultTurn(body))
          return { toolCalls: [{ name: 'sqlite', arguments: JSON.stringify({ operation: 'query', sql: 'SELECT name FROM items' }) }] };
        return answer(call % 3 === 2 ? "SELECT name FROM items WHERE kind = 'veg'" : 'SELECT name FROM items ORDER BY name');
      }
      return { text: 'unexpected' };
    });
    try {
      const suite = writeSuite(home, 'wire.json', QUESTIONS);
      const out = join(home, 'wire');
      const result = await runCli(
        ['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--out', out, '--vote', '3', '--format', 'json'],
        { env: cliEnv(home), timeoutMs: 120_000 },
      );
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout);
      const byId = Object.fromEntries(readJsonl(join(out, 'results.jsonl')).map((entry) => [entry.id, entry]));
      expect(byId['1']).toMatchObject({ correct: true, voted: { correct: true, votes: 3, groups: 1 } });
      expect(byId['2']).toMatchObject({ correct: false });
      expect(byId['2'].attempts[0].mismatch).toBe('a different set of rows');
      expect(byId['3'].correct).toBe(false);
      expect(byId['3'].attempts[0].error).toMatch(/^predicted SQL failed: .*prise/);
      // Attempts: wrong (call 2), right (call 4), right (call 6) → voted right.
      expect(byId['4'].attempts.map((attempt: { correct: boolean }) => attempt.correct)).toEqual([false, true, true]);
      expect(byId['4'].voted).toMatchObject({ correct: true, votes: 2, groups: 2, sql: 'SELECT name FROM items ORDER BY name' });
      expect(report.total).toMatchObject({ count: 4, correct: 1, voted_correct: 2 });
      expect(report.total.mean_tokens).toBeGreaterThan(0);
      expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('voted (k=3)');
    } finally {
      await model.close();
    }
  }, 120_000);

  it('a run over its --timeout and a model that keeps failing are recorded, and the eval goes on', async () => {
    const model = await startModel((question) => {
      if (question.includes('fruits')) return { text: 'slow', delayMs: 20_000 };
      if (question.includes('cheapest')) return { status: 400 };
      return { text: '```sql\nSELECT name FROM items\n```' };
    });
    try {
      const suite = writeSuite(home, 'faults.json', QUESTIONS);
      const out = join(home, 'faults');
      const started = Date.now();
      const result = await runCli(
        ['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--out', out, '--timeout', '2', '--format', 'json'],
        { env: cliEnv(home), timeoutMs: 60_000 },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(Date.now() - started).toBeLessThan(15_000);
      const byId = Object.fromEntries(readJsonl(join(out, 'results.jsonl')).map((entry) => [entry.id, entry]));
      expect(byId['1'].attempts[0]).toMatchObject({ status: 'timeout', error: 'timed out after 2 s', correct: false });
      expect(byId['2'].attempts[0].status).toBe('failed');
      expect(byId['2'].attempts[0].error).toContain('status 400 from the test model');
      expect(byId['4'].correct).toBe(true);
    } finally {
      await model.close();
    }
  }, 60_000);

  it('never runs more than --concurrency agent runs at once', async () => {
    let active = 0;
    let peak = 0;
    const model = await startModel(() => ({ text: '```sql\nSELECT 1\n```', delayMs: 300 }));
    try {
      const many = Array.from({ length: 8 }, (_, index) => ({ ...QUESTIONS[0], question_id: index + 1, question: `Question number ${index + 1}?` }));
      const suite = writeSuite(home, 'many.json', many);
      const out = join(home, 'many');
      const result = await runCli(['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--out', out, '--concurrency', '3'], {
        env: cliEnv(home),
        timeoutMs: 60_000,
      });
      expect(result.code, result.stderr).toBe(0);
      // The overlap of the runs, from each session's own trace (run_start to run_end).
      const spans = readdirSync(join(out, 'sessions')).map((id) => {
        const events = readJsonl(join(out, 'sessions', id, 'trace.jsonl'));
        return [Date.parse(events.find((event) => event.type === 'run_start')!.ts), Date.parse(events.find((event) => event.type === 'run_end')!.ts)] as const;
      });
      expect(spans).toHaveLength(8);
      const points = spans
        .flatMap(
          ([start, end]) =>
            [
              [start, 1],
              [end, -1],
            ] as const,
        )
        .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      for (const [, delta] of points) {
        active += delta;
        peak = Math.max(peak, active);
      }
      expect(peak).toBeLessThanOrEqual(3);
      expect(peak).toBeGreaterThanOrEqual(2);
    } finally {
      await model.close();
    }
  }, 60_000);

  it('Ctrl+C stops cleanly with the finished questions reported; --resume runs only the rest', async () => {
    const asked: string[] = [];
    const model = await startModel((question) => {
      asked.push(question);
      return { text: '```sql\nSELECT 1\n```', delayMs: 400 };
    });
    try {
      const many = Array.from({ length: 6 }, (_, index) => ({
        ...QUESTIONS[0],
        question_id: index + 1,
        question: `Resumable question ${index + 1}?`,
        SQL: 'SELECT 1',
      }));
      const suite = writeSuite(home, 'resume.json', many);
      const out = join(home, 'resume');
      const child = spawnCli(
        ['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--out', out, '--concurrency', '1', '--format', 'json'],
        { env: cliEnv(home) as NodeJS.ProcessEnv },
      );
      const done = collect(child, 60_000);
      const results = join(out, 'results.jsonl');
      const started = Date.now();
      while (!(existsSync(results) && readJsonl(results).length >= 2)) {
        if (Date.now() - started > 20_000) throw new Error('no results appeared');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      child.kill('SIGINT');
      const first = await done;
      expect(first.code).toBe(130);
      const report = JSON.parse(first.stdout);
      const finished = readJsonl(results);
      expect(report.cancelled).toBe(true);
      expect(report.questions).toBe(finished.length);
      expect(report.unfinished).toBe(6 - finished.length);
      expect(finished.length).toBeGreaterThanOrEqual(2);
      expect(finished.length).toBeLessThan(6);
      const askedBefore = asked.length;

      const second = await runCli(
        ['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--out', out, '--resume', '--format', 'json'],
        { env: cliEnv(home), timeoutMs: 60_000 },
      );
      expect(second.code, second.stderr).toBe(0);
      const all = readJsonl(results);
      expect(all.map((entry) => entry.id).sort()).toEqual(['1', '2', '3', '4', '5', '6']);
      expect(JSON.parse(second.stdout).total).toMatchObject({ count: 6, correct: 6 });
      // Finished questions were not asked again.
      const askedAgain = asked.slice(askedBefore);
      for (const entry of finished) expect(askedAgain.some((question) => question.includes(`question ${entry.id}?`))).toBe(false);

      // Without --resume, a directory with results is refused (exit 2); --resume without --out too.
      const refused = await runCli(['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--out', out], { env: cliEnv(home) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('already holds results');
      const noOut = await runCli(['eval', suite, '--db-dir', dbDir, '--base-url', model.url, '-m', 'test-model', '--resume'], { env: cliEnv(home) });
      expect(noOut.code).toBe(2);
      expect(noOut.stderr).toContain('--resume needs --out');
    } finally {
      await model.close();
    }
  }, 90_000);
});

describe('other suite formats and commands', () => {
  it('Spider JSON and quarry YAML (expected rows, CSV, order, tolerance) with a scripted model; eval compare', async () => {
    const shop = join(dbDir, 'shop', 'shop.sqlite');
    const spider = writeSuite(home, 'spider.json', [
      { db_id: 'shop', question: 'Spider: count the items', query: 'SELECT count(*) FROM items' },
      { db_id: 'shop', question: 'Spider: names of vegetables', query: "SELECT name FROM items WHERE kind = 'veg'" },
    ]);
    const script = writeSuite(home, 'script.json', {
      by_prompt: [
        { match: 'count the items', turns: [{ text: '```sql\nSELECT COUNT(id) FROM items\n```' }] },
        { match: 'names of vegetables', turns: [{ text: "```sql\nSELECT name FROM items WHERE kind = 'fruit'\n```" }] },
        { match: 'prices in order', turns: [{ text: '```sql\nSELECT name, price FROM items ORDER BY price\n```' }] },
        { match: 'average price', turns: [{ text: '```sql\nSELECT AVG(price) FROM items\n```' }] },
        { match: 'kinds', turns: [{ text: '```sql\nSELECT kind, COUNT(*) FROM items GROUP BY kind\n```' }] },
        { match: 'unordered names', turns: [{ text: '```sql\nSELECT name, price FROM items ORDER BY price\n```' }] },
      ],
    });
    const spiderOut = join(home, 'spider');
    const first = await runCli(['eval', spider, '--db-dir', dbDir, '-m', `script:${script}`, '--out', spiderOut, '--format', 'json'], {
      env: cliEnv(home),
      timeoutMs: 60_000,
    });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).total).toMatchObject({ count: 2, correct: 1 });

    writeFileSync(join(home, 'kinds.csv'), 'kind,n\r\nfruit,2\r\nveg,2\r\n');
    const yaml = writeSuite(
      home,
      'team.yaml',
      [
        'questions:',
        '  - id: ordered',
        '    question: Item prices in order, cheapest first',
        '    database: shop',
        '    order_matters: true',
        '    expected_rows: [[leek, 0.75], [apple, 1.5], [pear, 2.25], [kale, 3.0]]',
        '  - {id: mean, question: The average price, database: shop, expected_rows: [[1.87]], tolerance: 0.01, tags: [kpi]}',
        '  - {id: kinds, question: Count items by kinds, database: shop, expected_csv: kinds.csv, tags: [kpi]}',
        '  - id: unordered-wrong-order',
        '    question: unordered names and prices',
        '    database: shop',
        '    order_matters: true',
        '    expected_rows: [[apple, 1.5], [pear, 2.25], [kale, 3.0], [leek, 0.75]]',
        '',
      ].join('\n'),
    );
    const yamlOut = join(home, 'yaml');
    const second = await runCli(['eval', yaml, '--db', `shop=${shop}`, '-m', `script:${script}`, '--out', yamlOut, '--format', 'json'], {
      env: cliEnv(home),
      timeoutMs: 60_000,
    });
    expect(second.code, second.stderr).toBe(0);
    const report = JSON.parse(second.stdout);
    const byId = Object.fromEntries(readJsonl(join(yamlOut, 'results.jsonl')).map((entry) => [entry.id, entry]));
    expect(byId.ordered.correct).toBe(true);
    expect(byId.mean.correct).toBe(true);
    expect(byId.kinds.correct).toBe(true);
    expect(byId['unordered-wrong-order'].correct).toBe(false);
    expect(report.groups.map((group: { group: string }) => group.group)).toEqual(['(untagged)', 'kpi']);
    // --compare set overrides the per-question rule: the wrongly ordered rows now count.
    const setOut = join(home, 'yaml-set');
    const third = await runCli(['eval', yaml, '--db', `shop=${shop}`, '-m', `script:${script}`, '--out', setOut, '--compare', 'set', '--format', 'json'], {
      env: cliEnv(home),
      timeoutMs: 60_000,
    });
    expect(JSON.parse(third.stdout)).toMatchObject({ compare_rule: 'set', total: { correct: 4 } });

    const compared = await runCli(['eval', 'compare', yamlOut, setOut], { env: cliEnv(home) });
    expect(compared.code, compared.stderr).toBe(0);
    expect(compared.stdout).toContain('both correct: 3');
    expect(compared.stdout).toContain('correct only in B (1): unordered-wrong-order');
    expect(compared.stdout).toContain('differs: compare: A per question, B set');

    const unknownAlias = await runCli(['eval', yaml, '--db', `other=${shop}`, '--db', `more=${shop}`, '-m', `script:${script}`, '--out', join(home, 'bad')], {
      env: cliEnv(home),
    });
    expect(unknownAlias.code).toBe(2);
    expect(unknownAlias.stderr).toContain('not configured: shop');
  }, 120_000);

  it('bad input: a malformed suite, a missing database, bad flags (exit 2, one line, no stack trace)', async () => {
    const broken = writeSuite(home, 'broken.json', [{ question_id: 1, db_id: 'shop', question: 'q' }]);
    const cases: Array<[string[], RegExp]> = [
      [['eval', broken, '--db-dir', dbDir, '-m', 'script:x.json'], /entry 1 \(question_id 1\): missing field "SQL"/],
      [
        [
          'eval',
          writeSuite(home, 'nodb.json', [{ ...QUESTIONS[0], db_id: 'nope' }]),
          '--db-dir',
          dbDir,
          '-m',
          `script:${join(REPO_ROOT, 'fixtures/eval/sample-bird.script.json')}`,
          '--out',
          join(home, 'nodb'),
        ],
        /database "nope" not found: expected .*nope\/nope\.sqlite/,
      ],
      [['eval', writeSuite(home, 'ok.json', QUESTIONS), '-m', 'script:x.json'], /needs --db-dir DIR/],
      // Red team: a db_id that leads out of --db-dir (DIR/../x.sqlite exists) or that would change the alias's target.
      [
        ['eval', writeSuite(home, 'escape.json', [{ ...QUESTIONS[0], db_id: `../${basename(dbDir)}/shop/shop` }]), '--db-dir', dbDir, '-m', 'script:x.json'],
        /field "db_id" must be a plain name .*"\.\.\//,
      ],
      [
        ['eval', writeSuite(home, 'alias.json', [{ ...QUESTIONS[0], db_id: 'shop=sqlite:x' }]), '--db-dir', dbDir, '-m', 'script:x.json'],
        /field "db_id" must be a plain name/,
      ],
      [['eval', join(home, 'ok.json'), '--db-dir', dbDir, '-m', 'script:x.json', '--concurrency', '0'], /--concurrency expects a whole number ≥ 1/],
      [['eval', join(home, 'ok.json'), '--db-dir', dbDir, '-m', 'script:x.json', '--only', '99'], /--only: no question with id 99/],
      [['eval', 'compare', join(home, 'wire')], /needs two eval output directories/],
    ];
    for (const [args, pattern] of cases) {
      const result = await runCli(args, { env: cliEnv(home) });
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toMatch(pattern);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  }, 60_000);
});
