/// <reference lib="dom" />
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer } from '../support/fake-openai.js';

/**
 * `quarry refresh` and `quarry report --refresh` (docs/guide/sessions.md "Refreshing a session") of a real agent
 * session over SQLite, PostgreSQL and MariaDB (the suite's servers): queries, an export and a
 * chart. The data is then changed (rows added, a value updated, a column renamed) and the
 * refresh must show exactly those changes, with the documented exit codes, no request to the
 * model's endpoint (the recording server), the original files untouched, and a page Chromium
 * renders without requests.
 */

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
const PG_TABLE = 'h8_refresh_orders';
const MY_TABLE = 'h8_refresh_customers';

let home: string;
let work: string;
let model: FakeServer;
let pgAdmin: pg.Client;
let myAdmin: mysql.Connection;
let dbFlags: string[];
let originals: Record<string, string>;

const hash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const env = () => cliEnv(home, { OPENAI_API_KEY: 'test-key' });
const refresh = (...args: string[]) => runCli(['refresh', 'latest', ...args, ...dbFlags.flatMap((flag) => ['--db', flag])], { env: env(), timeoutMs: 60_000 });

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: JSON.stringify(args) });

beforeAll(async () => {
  home = makeTempDir('quarry-refresh-home-');
  work = makeTempDir('quarry-refresh-work-');
  const db = new Database(join(work, 'shop.db'));
  db.exec("CREATE TABLE sales (region TEXT, amount REAL); INSERT INTO sales VALUES ('north', 10), ('south', 25.5), ('east', 7);");
  db.close();
  pgAdmin = new pg.Client({ connectionString: process.env.QUARRY_TEST_PG_ADMIN_URL });
  await pgAdmin.connect();
  await pgAdmin.query(
    `DROP TABLE IF EXISTS ${PG_TABLE}; CREATE TABLE ${PG_TABLE} (id int PRIMARY KEY, status text, total numeric(10,2));
     INSERT INTO ${PG_TABLE} VALUES (1, 'open', 10.50), (2, 'open', 4.00), (3, 'paid', 20.00); ALTER TABLE ${PG_TABLE} OWNER TO quarry_test;`,
  );
  myAdmin = await mysql.createConnection({ uri: process.env.QUARRY_TEST_MYSQL_ADMIN_URL!, multipleStatements: true });
  await myAdmin.query(
    `DROP TABLE IF EXISTS ${MY_TABLE}; CREATE TABLE ${MY_TABLE} (id INT PRIMARY KEY, name VARCHAR(40), city VARCHAR(40));
     INSERT INTO ${MY_TABLE} VALUES (1, 'Ada', 'Oslo'), (2, 'Bob', 'Rome'), (3, 'Cyd', 'Lima');`,
  );
  dbFlags = [`shop=${join(work, 'shop.db')}`, `pg=${process.env.QUARRY_TEST_PG_URL}`, `crm=${process.env.QUARRY_TEST_MYSQL_URL}`];
  model = await startOpenAIServer([
    {
      toolCalls: [
        call('sqlite', { operation: 'query', sql: 'SELECT count(*) AS n, sum(amount) AS total FROM sales' }),
        call('postgres', { operation: 'query', sql: `SELECT status, count(*) AS n FROM ${PG_TABLE} GROUP BY status ORDER BY status` }),
        call('mysql', { operation: 'query', sql: `SELECT name, city FROM ${MY_TABLE} ORDER BY name` }),
      ],
      usage: { input: 100, output: 20 },
    },
    {
      toolCalls: [
        call('sqlite', { operation: 'export_query', sql: 'SELECT region, amount FROM sales ORDER BY region', output_path: 'sales.csv' }),
        call('chart', {
          database: 'pg',
          sql: `SELECT status, sum(total) AS total FROM ${PG_TABLE} GROUP BY status`,
          x: 'status',
          y: 'total',
          output_path: 'orders.png',
        }),
      ],
      usage: { input: 200, output: 30 },
    },
    { text: 'There were 3 sales totalling 42.5. Orders: 2 open and 1 paid. Customers live in Oslo, Rome and Lima.', usage: { input: 300, output: 40 } },
  ]);
  const run = await runCli(
    ['-m', 'gpt-test', '--base-url', model.url, ...dbFlags.flatMap((flag) => ['--db', flag]), '-w', work, '--yes', 'How are sales, orders and customers?'],
    { env: env(), timeoutMs: 90_000 },
  );
  expect(run.code, run.stderr).toBe(0);
  expect(model.requests).toHaveLength(3);
  originals = Object.fromEntries(['sales.csv', 'orders.png', 'orders.svg', 'orders.vl.json', 'shop.db'].map((name) => [name, hash(join(work, name))]));
}, 120_000);

afterAll(async () => {
  await pgAdmin?.query(`DROP TABLE IF EXISTS ${PG_TABLE}`);
  await pgAdmin?.end();
  await myAdmin?.query(`DROP TABLE IF EXISTS ${MY_TABLE}`);
  await myAdmin?.end();
  await model?.close();
});

describe('refreshing a session', () => {
  it('nothing changed: exit 0 even with --fail-on-change, every step unchanged, new files beside the old', async () => {
    const result = await refresh('--fail-on-change', '--format', 'json');
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report.status).toBe('unchanged');
    expect(report.tokens).toBe(0);
    expect(report.steps.map((step: { tool: string; operation: string; status: string }) => `${step.tool} ${step.operation} ${step.status}`)).toEqual([
      'sqlite query unchanged',
      'postgres query unchanged',
      'mysql query unchanged',
      'sqlite export_query unchanged',
      'chart chart unchanged',
    ]);
    const exported = report.steps[3].after.path as string;
    expect(exported).toMatch(/sales\.refreshed-\d{8}-\d{6}\.csv$/);
    expect(readFileSync(exported, 'utf8')).toBe(readFileSync(join(work, 'sales.csv'), 'utf8'));
    expect(report.steps[4].after.files.map((file: string) => file.replace(/.*\//, '').replace(/\d{8}-\d{6}/, 'T'))).toEqual([
      'orders.refreshed-T.svg',
      'orders.refreshed-T.png',
      'orders.refreshed-T.vl.json',
    ]);
    expect(model.requests).toHaveLength(3);
  }, 60_000);

  it('rows added and a value updated: exactly those changes; exit 3 with --fail-on-change, 0 within --tolerance', async () => {
    const db = new Database(join(work, 'shop.db'));
    db.exec("INSERT INTO sales VALUES ('west', 12)");
    db.close();
    await pgAdmin.query(`UPDATE ${PG_TABLE} SET status = 'paid' WHERE id = 2`);
    const result = await refresh('--fail-on-change', '--format', 'json');
    expect(result.code, result.stderr).toBe(3);
    const report = JSON.parse(result.stdout);
    expect(report.status).toBe('changed');
    const [count, orders, customers, exported, chart] = report.steps;
    expect(count.values).toEqual([
      { row: '', column: 'n', old: '3', new: '4', delta: 1, percent: (1 / 3) * 100 },
      { row: '', column: 'total', old: '42.5', new: '54.5', delta: 12, percent: (12 / 42.5) * 100 },
    ]);
    expect(orders.values.map((value: { row: string; old: string; new: string }) => `${value.row}: ${value.old} -> ${value.new}`)).toEqual([
      'open: 2 -> 1',
      'paid: 1 -> 2',
    ]);
    expect(orders.appeared).toEqual([]);
    expect(customers.status).toBe('unchanged');
    expect(exported.before.rows).toBe(3);
    expect(exported.after.rows).toBe(4);
    expect(exported.appeared).toEqual([['west', '12']]);
    expect(exported.disappeared).toEqual([]);
    expect(chart.status).toBe('changed');
    expect(chart.values.map((value: { row: string; old: string; new: string }) => `${value.row}: ${value.old} -> ${value.new}`)).toEqual([
      'open: 14.5 -> 10.5',
      'paid: 20 -> 24',
    ]);
    expect(report.answers[0].changed_figures).toEqual([
      { old: '3', new: '4' },
      { old: '42.5', new: '54.5' },
      { old: '2', new: '1' },
      { old: '1', new: '2' },
    ]);
    // Without --fail-on-change a change is exit 0; the text names the changes.
    const text = await refresh();
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('without the model (0 tokens)');
    expect(text.stdout).toContain('total 42.5 → 54.5 (+12, +28.2%)');
    expect(text.stdout).toContain('appeared: west | 12');
    expect(text.stdout).toContain('answer 1: 3 → 4, 42.5 → 54.5, 2 → 1, 1 → 2');
    // Every change is within 150%: nothing counts.
    expect((await refresh('--fail-on-change', '--tolerance', '150')).code).toBe(0);
    expect((await refresh('--fail-on-change', '--tolerance', '50')).code).toBe(3);
    expect(model.requests).toHaveLength(3);
  }, 90_000);

  it('a column renamed: the query fails with its error and the new name; exit 1; report --refresh renders it in Chromium without requests', async () => {
    await myAdmin.query(`ALTER TABLE ${MY_TABLE} RENAME COLUMN city TO town`);
    const result = await refresh('--format', 'json');
    expect(result.code, result.stderr).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.status).toBe('failed');
    const customers = report.steps[2];
    expect(customers.status).toBe('failed');
    expect(customers.message).toContain("Unknown column 'city'");
    // What it suggests depends on the test user's other tables (test files running beside this one
    // create some with a city column): either those names, or this table's columns now.
    expect(customers.message).toMatch(new RegExp(`no name like "city" now; columns now: ${MY_TABLE} \\(id, name, town\\)|names like "city" now: `));
    expect(report.steps.filter((step: { status: string }) => step.status === 'failed')).toHaveLength(1);

    const page = join(work, 'refreshed.html');
    const made = await runCli(['report', 'latest', '--refresh', '-o', page, ...dbFlags.flatMap((flag) => ['--db', flag])], { env: env(), timeoutMs: 60_000 });
    expect(made.code, made.stderr).toBe(1);
    expect(made.stdout.trim()).toBe(page);
    const html = readFileSync(page, 'utf8');
    expect(html).toContain('<strong>0 tokens</strong>');
    expect(html).toContain('<mark class="changed" title="changed by the refresh"><del>42.5</del> → <ins>54.5</ins></mark>');
    expect(html).toContain('1 step now fails, so the figures from it could not be checked');
    expect(html).not.toMatch(/<script/i);
    // The originals are untouched; no request reached the model.
    for (const [name, digest] of Object.entries(originals)) if (name !== 'shop.db') expect(hash(join(work, name)), name).toBe(digest);
    expect(model.requests).toHaveLength(3);
    expect(readdirSync(work).filter((name) => name.includes('.quarry-') || name.endsWith('.tmp'))).toEqual([]);

    if (!CHROMIUM) return;
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    try {
      const tab = await browser.newPage({ viewport: { width: 1000, height: 800 } });
      const requests: string[] = [];
      const errors: string[] = [];
      tab.on('request', (request) => requests.push(request.url()));
      tab.on('pageerror', (error) => errors.push(error.message));
      tab.on('console', (message) => {
        if (message.type() === 'error') errors.push(message.text());
      });
      const url = pathToFileURL(page).href;
      await tab.goto(url, { waitUntil: 'load' });
      expect(errors).toEqual([]);
      expect(requests.filter((request) => request !== url && !request.startsWith('data:'))).toEqual([]);
      expect(await tab.locator('.answer mark.changed').allInnerTexts()).toEqual(['3 → 4', '42.5 → 54.5', '2 → 1', '1 → 2']);
      // Both charts, the original and the one redrawn, are shown.
      const widths = await tab.locator('img.chart').evaluateAll((nodes) => nodes.map((node) => (node as HTMLImageElement).naturalWidth));
      expect(widths).toHaveLength(2);
      for (const width of widths) expect(width).toBeGreaterThan(300);
      expect(await tab.locator('.step.failed').innerText()).toContain(`columns now: ${MY_TABLE} (id, name, town)`);
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('refuses a session whose profile changed, and one whose database now points elsewhere', async () => {
    const other = join(work, 'other.db');
    writeFileSync(other, '');
    const moved = await runCli(['refresh', 'latest', '--db', `shop=${other}`, '--db', dbFlags[1]!, '--db', dbFlags[2]!], { env: env() });
    expect(moved.code).toBe(2);
    expect(moved.stderr).toMatch(/used database shop \(.*shop\.db.*\), which is now .*other\.db/);
    const noPasswords = await runCli(['refresh', 'latest'], { env: env() });
    expect(noPasswords.code).toBe(2);
    expect(noPasswords.stderr).toContain('whose password quarry does not keep');
    // The session's meta says it ran under a profile other than readonly's settings now.
    const sessions = join(home, 'sessions');
    const id = readdirSync(sessions)[0]!;
    const metaPath = join(sessions, id, 'meta.json');
    const meta = JSON.parse(readFileSync(metaPath, 'utf8'));
    writeFileSync(metaPath, JSON.stringify({ ...meta, profile_content: { ...meta.profile_content, shell: 'off' } }));
    const changed = await refresh();
    expect(changed.code).toBe(2);
    expect(changed.stderr).toContain('which has changed since (shell: "off" -> "restricted")');
    expect(changed.stderr.trim().split('\n')).toHaveLength(1);
    writeFileSync(metaPath, JSON.stringify(meta));
  }, 60_000);
});
