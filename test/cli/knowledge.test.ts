import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parse } from 'yaml';
import { beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { REPO_ROOT, runQuarry } from '../support/cli.js';

/** `quarry knowledge …`, `quarry tool knowledge` and the folder's formats, through the built CLI on real SQLite files. */

const SAMPLE_DB = join(REPO_ROOT, 'fixtures', 'sample.db');
const SAMPLE_KNOWLEDGE = join(REPO_ROOT, 'fixtures', 'knowledge');

let dir: string;
let home: string;
beforeEach(() => {
  dir = makeTempDir();
  home = makeTempDir('quarry-home-');
});
const env = () => ({ QUARRY_HOME: home, QUARRY_PROFILE: undefined, QUARRY_USER: 'test analyst' });

function folderWith(files: Record<string, string>): string {
  const folder = join(dir, 'knowledge');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(folder, name, '..'), { recursive: true });
    writeFileSync(join(folder, name), text);
  }
  mkdirSync(folder, { recursive: true });
  return folder;
}

describe('the knowledge folder formats', () => {
  it('lists the sample folder', async () => {
    const result = await runQuarry(['knowledge', 'list', '--knowledge', SAMPLE_KNOWLEDGE, '--format', 'json'], { env: env() });
    expect(result.code).toBe(0);
    const listed = JSON.parse(result.stdout) as { queries: unknown[]; metrics: string[]; terms: string[]; rules: string[]; hash: string };
    expect(listed.queries).toHaveLength(readdirSync(join(SAMPLE_KNOWLEDGE, 'queries')).length);
    expect(listed.metrics).toContain('revenue');
    expect(listed.terms).toContain('average order value');
    expect(listed.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  const malformed: Array<[string, Record<string, string>, RegExp]> = [
    [
      'an unknown key in a rule',
      { 'rules.yaml': '- rule: x\n  tabels: [a]\n' },
      /rules\.yaml: rule 1: unknown key "tabels"; allowed keys: rule, tables, database/,
    ],
    ['rules that are not a list', { 'rules.yaml': 'rule: x\n' }, /rules\.yaml: expected a list of \{rule, tables\?, database\?\}/],
    ['a term without a definition', { 'glossary.yaml': 'revenue:\n  synonyms: [sales]\n' }, /glossary\.yaml: revenue: missing required key "definition"/],
    [
      'synonyms that are not a list',
      { 'glossary.yaml': 'revenue:\n  definition: d\n  synonyms: sales\n' },
      /glossary\.yaml: "revenue\.synonyms" must be a list of text, got "sales"/,
    ],
    [
      'an unknown metric key',
      { 'metrics.yaml': 'rev:\n  description: d\n  table: t\n  sql: SUM(x)\n  filter: [a]\n' },
      /metrics\.yaml: rev: unknown key "filter"/,
    ],
    ['a metric without a table', { 'metrics.yaml': 'rev:\n  description: d\n  sql: SUM(x)\n' }, /metrics\.yaml: rev: missing required key "table"/],
    ['invalid YAML', { 'queries/q1.yaml': 'question: [unclosed\n' }, /queries\/q1\.yaml: invalid YAML/],
    [
      'an unknown query key',
      { 'queries/q1.yaml': 'question: q\nsql: SELECT 1\nverified_by: a\nverified_at: 2025-01-01\nowner: b\n' },
      /queries\/q1\.yaml: unknown key "owner"/,
    ],
    [
      'a query without verified_by',
      { 'queries/q1.yaml': 'question: q\nsql: SELECT 1\nverified_at: 2025-01-01\n' },
      /queries\/q1\.yaml: missing required key "verified_by"/,
    ],
    [
      'a bad expect',
      { 'queries/q1.yaml': 'question: q\nsql: SELECT 1\nverified_by: a\nverified_at: 2025-01-01\nexpect: {rows: -1, digest: x}\n' },
      /q1\.yaml: expect: "rows" must be a whole number/,
    ],
    ['an unknown front matter key in a note', { 'notes/n.md': '---\ntable: [a]\n---\ntext\n' }, /notes\/n\.md: front matter: unknown key "table"/],
    ['rules.yml instead of rules.yaml', { 'rules.yml': '- rule: x\n' }, /rules\.yml: the knowledge folder reads rules\.yaml/],
  ];
  for (const [what, files, message] of malformed) {
    it(`refuses ${what} in one line naming the file and the key (exit 2)`, async () => {
      const folder = folderWith(files);
      for (const args of [
        ['knowledge', 'list', '--knowledge', folder],
        ['tool', 'knowledge', '--knowledge', folder, '--args', '{"query":"x"}'],
      ]) {
        const result = await runQuarry(args, { env: env() });
        expect(result.code).toBe(2);
        expect(result.stderr).toMatch(message);
        expect(result.stderr.trim().split('\n')).toHaveLength(1);
        expect(result.stderr).not.toMatch(/\bat .*\.js:\d+/);
      }
    });
  }

  it('uses .quarry/knowledge/ under the working directory, and config.yaml knowledge:', async () => {
    cpSync(SAMPLE_KNOWLEDGE, join(dir, '.quarry', 'knowledge'), { recursive: true });
    const byDefault = await runQuarry(['tool', 'knowledge', '-w', dir, '--args', '{"query":"discontinued products","kind":"query","limit":1}'], { env: env() });
    expect(byDefault.code).toBe(0);
    expect(byDefault.stdout).toMatch(/^query inactive_products/);
    const other = makeTempDir();
    cpSync(SAMPLE_KNOWLEDGE, join(other, 'team'), { recursive: true });
    writeFileSync(join(home, 'config.yaml'), `knowledge: ${join(other, 'team')}\n`);
    const configured = await runQuarry(['tool', 'knowledge', '--args', '{"query":"basket size","kind":"metric","limit":1}'], {
      env: env(),
      cwd: makeTempDir(),
    });
    expect(configured.code).toBe(0);
    expect(configured.stdout).toMatch(/^metric average_order_value/);
    expect(configured.stdout).toContain("WHERE (status NOT IN ('cancelled', 'refunded'))");
    const missing = await runQuarry(['tool', 'knowledge', '--knowledge', join(dir, 'nope'), '--args', '{"query":"x"}'], { env: env() });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--knowledge .*nope: folder not found/);
  });

  it('offers no knowledge tool without a folder', async () => {
    const result = await runQuarry(['tool', 'knowledge', '-w', dir, '--args', '{"query":"x"}'], { env: env(), cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no knowledge folder, so there is no knowledge tool: create \.quarry\/knowledge\/ in .*, pass --knowledge DIR/);
    // A profile may name the tool in its allow-list; without it there, the tool is not offered.
    writeFileSync(join(dir, 'only-read.yaml'), 'tools: [read]\n');
    writeFileSync(join(dir, 'with-knowledge.yaml'), 'tools: [read, knowledge]\n');
    const args = ['tool', 'knowledge', '--knowledge', SAMPLE_KNOWLEDGE, '--args', '{"query":"revenue"}'];
    expect((await runQuarry([...args, '-p', join(dir, 'with-knowledge.yaml')], { env: env() })).code).toBe(0);
    const left = await runQuarry([...args, '-p', join(dir, 'only-read.yaml')], { env: env() });
    expect(left.code).toBe(2);
    expect(left.stderr).toMatch(/unknown tool "knowledge"/);
  });
});

describe('quarry tool knowledge', () => {
  it('ranks entries with their kind and id first, applies synonyms, expands metrics, bounds the limit', async () => {
    const result = await runQuarry(
      ['tool', 'knowledge', '--knowledge', SAMPLE_KNOWLEDGE, '--args', '{"query":"biggest spenders in 2024","limit":2}', '--format', 'json'],
      {
        env: env(),
      },
    );
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout) as { ok: boolean; output: string; metadata: { entries: string[] } };
    expect(output.metadata.entries[0]).toBe('query top_customers_2024');
    expect(output.output).toMatch(/^query top_customers_2024 \(database sales\): verified by Maria Keller \(finance\) on 2025-11-03/);
    expect(output.output).toContain('Question: Which 5 customers spent the most in 2024?');
    expect(output.output).toContain('```sql\nSELECT c.id, c.name');
    const tooMany = await runQuarry(['tool', 'knowledge', '--knowledge', SAMPLE_KNOWLEDGE, '--args', '{"query":"x","limit":21}'], { env: env() });
    expect(tooMany.code).toBe(2);
    const nothing = await runQuarry(['tool', 'knowledge', '--knowledge', SAMPLE_KNOWLEDGE, '--args', '{"query":"zebra giraffe"}'], { env: env() });
    expect(nothing.code).toBe(0);
    expect(nothing.stdout).toMatch(/No entry in the knowledge folder matches "zebra giraffe"/);
  });
});

/** A copy of the sample database and of the sample folder, checked against it. */
function sampleCopy(): { db: string; folder: string } {
  const db = join(dir, 'sample.db');
  cpSync(SAMPLE_DB, db);
  const folder = join(dir, 'knowledge');
  cpSync(SAMPLE_KNOWLEDGE, folder, { recursive: true });
  return { db, folder };
}

describe('quarry knowledge check on SQLite', () => {
  it('passes on the data the folder was recorded on (exit 0)', async () => {
    const { db, folder } = sampleCopy();
    const result = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`], { env: env() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/17 checked: 17 ok, 0 changed, 0 failed/);
  });

  it('flags exactly the queries that deleted rows and a renamed column affect, and --update re-records them', async () => {
    const { db, folder } = sampleCopy();
    const sqlite = new Database(db);
    // Drift: the inactive products and their order lines are deleted, and customers.signup_date
    // is renamed; which queries that changes is computed independently below.
    const inactive = sqlite.prepare('SELECT id FROM products WHERE active = 0').all() as Array<{ id: number }>;
    expect(inactive.length).toBeGreaterThan(0);
    sqlite.prepare('DELETE FROM order_items WHERE product_id IN (SELECT id FROM products WHERE active = 0)').run();
    sqlite.prepare('DELETE FROM products WHERE active = 0').run();
    sqlite.prepare('ALTER TABLE customers RENAME COLUMN signup_date TO created_on').run();
    sqlite.close();
    const result = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`, '--format', 'json'], { env: env() });
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as {
      ok: boolean;
      results: Array<{ id: string; status: string; error?: string; expected?: { rows: number }; actual?: { rows: number } }>;
    };
    expect(report.ok).toBe(false);
    const notOk = Object.fromEntries(report.results.filter((entry) => entry.status !== 'ok').map((entry) => [entry.id, entry]));
    const affected = affectedByDrift();
    expect(Object.keys(notOk).sort()).toEqual(affected.sort());
    expect(notOk.signups_per_year!.status).toBe('failed');
    expect(notOk.signups_per_year!.error).toMatch(/no such column: signup_date/);
    expect(notOk.inactive_products).toMatchObject({ status: 'changed', expected: { rows: inactive.length }, actual: { rows: 0 } });
    const text = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`], { env: env() });
    expect(text.stdout).toMatch(new RegExp(`changed  query inactive_products \\(sales\\): rows ${inactive.length} -> 0`));
    expect(text.stdout).toMatch(/failed {3}query signups_per_year \(sales\): sqlite error \(sales\): no such column: signup_date/);
    // --update re-records what changed; what fails still fails.
    const updated = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`, '--update'], { env: env() });
    expect(updated.code).toBe(1);
    const file = parse(readFileSync(join(folder, 'queries', 'inactive_products.yaml'), 'utf8')) as { expect: { rows: number }; question: string };
    expect(file.expect.rows).toBe(0);
    expect(file.question).toBe('Which products are inactive?');
    const again = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`, '--format', 'json'], { env: env() });
    const left = (JSON.parse(again.stdout) as { results: Array<{ id: string; status: string }> }).results.filter((entry) => entry.status !== 'ok');
    expect(left.map((entry) => entry.id)).toEqual(['signups_per_year']);
  });
});

/**
 * The queries the drift above changes, computed independently: each verified query run on the
 * original and on a drifted copy by better-sqlite3, compared as sorted rows.
 */
function affectedByDrift(): string[] {
  const copy = join(makeTempDir(), 'drift.db');
  cpSync(SAMPLE_DB, copy);
  const drifted = new Database(copy);
  drifted.exec('DELETE FROM order_items WHERE product_id IN (SELECT id FROM products WHERE active = 0); DELETE FROM products WHERE active = 0;');
  drifted.exec('ALTER TABLE customers RENAME COLUMN signup_date TO created_on');
  const original = new Database(SAMPLE_DB, { readonly: true });
  const affected: string[] = [];
  for (const name of readdirSync(join(SAMPLE_KNOWLEDGE, 'queries'))) {
    const { sql } = parse(readFileSync(join(SAMPLE_KNOWLEDGE, 'queries', name), 'utf8')) as { sql: string };
    const rows = (database: Database.Database) => {
      try {
        return JSON.stringify((database.prepare(sql).raw().all() as unknown[][]).map((row) => JSON.stringify(row)).sort());
      } catch (error) {
        return `error: ${(error as Error).message}`;
      }
    };
    if (rows(original) !== rows(drifted)) affected.push(name.replace(/\.yaml$/, ''));
  }
  original.close();
  drifted.close();
  return affected;
}

describe('quarry knowledge add', () => {
  it('runs the SQL read-only, records expect and writes queries/ID.yaml; never overwrites', async () => {
    const { db } = sampleCopy();
    const folder = join(dir, 'new-folder');
    mkdirSync(folder);
    const args = ['knowledge', 'add', '--knowledge', folder, '--db', `sales=${db}`, '--question', 'How many products are in each category?'];
    const sql = 'SELECT category, COUNT(*) AS products FROM products GROUP BY category';
    const result = await runQuarry([...args, '--sql', sql], { env: env() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const file = join(folder, 'queries', 'how_many_products_are_in_each_category.yaml');
    expect(result.stdout).toBe(`saved query how_many_products_are_in_each_category: ${file} (5 rows recorded)\n`);
    const saved = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(saved).toMatchObject({ question: 'How many products are in each category?', database: 'sales', verified_by: 'test analyst', expect: { rows: 5 } });
    expect(saved.verified_at).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const check = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${db}`], { env: env() });
    expect(check.code).toBe(0);
    // The same id again: refused, the file unchanged.
    const before = readFileSync(file, 'utf8');
    const twice = await runQuarry([...args, '--sql', 'SELECT 1'], { env: env() });
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/already exists: choose another --id \(nothing was written\)/);
    expect(readFileSync(file, 'utf8')).toBe(before);
    // A write is refused by the read-only check, and nothing is saved.
    const write = await runQuarry([...args, '--id', 'wipe', '--sql', 'DELETE FROM products'], { env: env() });
    expect(write.code).toBe(2);
    expect(write.stderr).toMatch(/did not run read-only on sales, nothing was saved/);
    expect(existsSync(join(folder, 'queries', 'wipe.yaml'))).toBe(false);
    const count = new Database(db, { readonly: true });
    expect((count.prepare('SELECT COUNT(*) AS n FROM products').get() as { n: number }).n).toBe(120);
    count.close();
    expect(readdirSync(join(folder, 'queries'))).toEqual(['how_many_products_are_in_each_category.yaml']);
  });
});

describe('quarry eval --knowledge', () => {
  it('records the folder and its hash in report.json; a changed file changes the hash', async () => {
    const { folder } = sampleCopy();
    const evalRun = (out: string) =>
      runQuarry(
        [
          'eval',
          join(REPO_ROOT, 'fixtures/eval/sample-bird.json'),
          '--db-dir',
          join(REPO_ROOT, 'fixtures/eval/dbs'),
          '--model',
          `script:${join(REPO_ROOT, 'fixtures/eval/sample-bird.script.json')}`,
          '--limit',
          '1',
          '--out',
          out,
          '--knowledge',
          folder,
        ],
        { env: env(), timeoutMs: 60_000 },
      );
    const listed = JSON.parse((await runQuarry(['knowledge', 'list', '--knowledge', folder, '--format', 'json'], { env: env() })).stdout) as { hash: string };
    const first = await evalRun(join(dir, 'run1'));
    expect(first.code).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'run1', 'report.json'), 'utf8')) as { config: Record<string, string> };
    expect(report.config).toMatchObject({ knowledge_dir: folder, knowledge_sha256: listed.hash });
    writeFileSync(join(folder, 'rules.yaml'), `${readFileSync(join(folder, 'rules.yaml'), 'utf8')}- rule: Amounts are in EUR.\n`);
    expect((await evalRun(join(dir, 'run2'))).code).toBe(0);
    const second = JSON.parse(readFileSync(join(dir, 'run2', 'report.json'), 'utf8')) as { config: Record<string, string> };
    expect(second.config.knowledge_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(second.config.knowledge_sha256).not.toBe(listed.hash);
  });
});

describe('quarry knowledge import dbt', () => {
  const project = join(REPO_ROOT, 'test', 'tools', 'knowledge', 'dbt-project');

  it('turns model docs into notes, tests into glossary entries and rules, MetricFlow metrics into metrics that run', async () => {
    const folder = join(dir, 'knowledge');
    const result = await runQuarry(['knowledge', 'import', 'dbt', project, '--knowledge', folder], { env: env() });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('skipped metric refund_ratio: type ratio');
    expect(result.stdout).toContain('skipped metric median_order_value: measure median_order aggregates with median');
    expect(readdirSync(join(folder, 'notes')).sort()).toEqual(['dbt_customers.md', 'dbt_orders.md']);
    expect(readFileSync(join(folder, 'notes', 'dbt_orders.md'), 'utf8')).toContain('- `total`: Sum of quantity * unit_price * (1 - discount), in EUR.');
    const glossary = parse(readFileSync(join(folder, 'glossary.yaml'), 'utf8')) as Record<string, { definition: string }>;
    expect(Object.keys(glossary).sort()).toEqual(['customers.segment', 'order_totals.status']);
    expect(glossary['order_totals.status']!.definition).toContain("'pending', 'shipped', 'delivered', 'cancelled', 'refunded'");
    const rules = parse(readFileSync(join(folder, 'rules.yaml'), 'utf8')) as Array<{ rule: string; tables: string[] }>;
    expect(rules).toContainEqual({
      rule: 'order_totals.customer_id references customers.id: join order_totals to customers on order_totals.customer_id = customers.id.',
      tables: ['order_totals', 'customers'],
    });
    const metrics = parse(readFileSync(join(folder, 'metrics.yaml'), 'utf8')) as Record<string, Record<string, unknown>>;
    expect(Object.keys(metrics)).toEqual(['revenue', 'order_count', 'customers']);
    expect(metrics.revenue).toMatchObject({
      table: 'order_totals',
      sql: 'SUM(total)',
      filters: ["status NOT IN ('cancelled', 'refunded')"],
      time_column: 'ordered_at',
    });
    expect(metrics.customers).toMatchObject({ table: 'customers', sql: 'COUNT(DISTINCT id)', filters: ["segment != 'reseller'"] });
    // The imported metrics run on the data they describe, and give what SQL written by hand gives.
    const check = await runQuarry(['knowledge', 'check', '--knowledge', folder, '--db', `sales=${SAMPLE_DB}`, '--format', 'json'], { env: env() });
    expect(check.code).toBe(0);
    const sqlite = new Database(SAMPLE_DB, { readonly: true });
    const customers = sqlite.prepare("SELECT COUNT(DISTINCT id) AS n FROM customers WHERE segment <> 'reseller'").get() as { n: number };
    sqlite.close();
    const tool = await runQuarry(['tool', 'knowledge', '--knowledge', folder, '--args', '{"query":"customers","kind":"metric","limit":1}'], { env: env() });
    expect(tool.stdout).toContain("SELECT COUNT(DISTINCT id) AS customers\nFROM customers\nWHERE (segment != 'reseller')");
    expect(customers.n).toBeGreaterThan(0);
    // A second import keeps what is there and writes nothing new.
    const before = readFileSync(join(folder, 'rules.yaml'), 'utf8');
    const again = await runQuarry(['knowledge', 'import', 'dbt', join(project, 'target', 'manifest.json'), '--knowledge', folder], { env: env() });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing new to write');
    expect(readFileSync(join(folder, 'rules.yaml'), 'utf8')).toBe(before);
  });

  it('refuses what is not a dbt manifest in one line (exit 2), writing nothing', async () => {
    const notManifest = join(dir, 'manifest.json');
    writeFileSync(notManifest, '{"nodes": {}}');
    const folder = join(dir, 'knowledge');
    const result = await runQuarry(['knowledge', 'import', 'dbt', notManifest, '--knowledge', folder], { env: env() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/manifest\.json: not a dbt manifest/);
    expect(existsSync(folder)).toBe(false);
    writeFileSync(notManifest, '{"nodes": ');
    const broken = await runQuarry(['knowledge', 'import', 'dbt', notManifest], { env: env(), cwd: dir });
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/manifest\.json: not valid JSON/);
    expect(existsSync(join(dir, '.quarry'))).toBe(false);
  });
});

describe('the folder cache', () => {
  it('answers from $QUARRY_HOME/cache/knowledge/ and reloads as soon as a file changes', async () => {
    const { folder } = sampleCopy();
    const ask = () =>
      runQuarry(['tool', 'knowledge', '--knowledge', folder, '--args', '{"query":"discontinued products","kind":"query","limit":1}'], { env: env() });
    expect((await ask()).stdout).toContain('Question: Which products are inactive?');
    expect(readdirSync(join(home, 'cache', 'knowledge'))).toHaveLength(1);
    expect((await ask()).stdout).toContain('Question: Which products are inactive?');
    const file = join(folder, 'queries', 'inactive_products.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('Which products are inactive?', 'Which products are retired?'));
    expect((await ask()).stdout).toContain('Question: Which products are retired?');
    writeFileSync(file, `${readFileSync(file, 'utf8')}owner: someone\n`);
    const broken = await ask();
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/inactive_products\.yaml: unknown key "owner"/);
  });
});
