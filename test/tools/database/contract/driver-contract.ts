import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import type { DatabaseConfig, Engine } from '../../../../src/tools/database/types.js';
import { benignCorpus, mutationCorpus } from '../corpus.js';
import { makeRunner, tableCells } from '../helpers.js';

/**
 * The behaviour every database engine shares, run against each real engine by its own test file
 * (postgres.test.ts, mysql.test.ts, contract/sqlite.test.ts, contract/duckdb.test.ts): queries
 * with the row limit and its notice, exact values, the catalogue operations, export_query
 * byte-exact with the engine's own client, refused writes that leave the data as it was, cancel
 * and the statement timeout, and the eval profile's writes. What only one engine can show stays
 * in that engine's file.
 *
 * Each engine's fixture holds the corpus schema (corpus.ts: customers and audit_log with their
 * three rows each) and big(id, label, amount): 20,000 rows of (i, 'row ' || i, i / 4 with two
 * decimals).
 */
export interface ContractTarget {
  /** The one database, as loaded from the engine's flag or config. */
  configs: DatabaseConfig[];
  /** The working directory exports are written to. */
  dir: string;
  /** Data, schema and counters as one comparable value, read past quarry. */
  snapshot(): Promise<string>;
  /** What the engine's own client writes for the statement as CSV with a header, records ended by CRLF. */
  clientCsv(sql: string): Promise<string>;
  /** Statements still running at the server whose text contains `marker` (omitted for embedded engines). */
  running?(marker: string): Promise<number>;
  /** Rows of audit_log whose action is `action`, read past quarry; and their removal. */
  countAction(action: string): Promise<number>;
  removeAction(action: string): Promise<void>;
}

export interface ContractEngine {
  tool: Engine;
  /** A statement of exact values (big numbers, a date, NULL) and the table line it must show. */
  exact: { sql: string; line: string };
  /** What list_tables and describe of audit_log must show on this engine. */
  listTables: { pattern?: string; shows: (string | RegExp)[] };
  describe: { table: string; shows: (string | RegExp)[] };
  /** A read that takes more than 20 seconds; `marker` appears in its text. */
  slow: { sql: string; marker: string };
  /** An export that fails part-way, and what its error says. */
  failingExport: { sql: string; says?: string };
  /** A wrong password and what the engine answers (server engines). */
  wrongPassword?: { configs(target: ContractTarget): DatabaseConfig[]; password: string; says: string };
  /** A refusal worded otherwise than "refused: …" on this engine (a known wording, named where it is set). */
  alsoRefusedAs?: RegExp;
  /** The header, first and last lines of big's export where the engine's own CSV quotes text (ClickHouse). */
  exportLines?: [string, string, string];
  /** What explain answers where the server has no EXPLAIN (ClickHouse before 20.6). */
  explainAbsent?: string;
  /** Benign reads this engine's server cannot parse, with the reason. */
  benignUnsupported?: { sql: string[]; why: string };
  /** A known bug that makes the eval profile's insert fail: the test then expects the failure (test.fails), so a fix shows. */
  evalInsertBug?: string;
  /** What the eval profile's insert says on this engine (omitted: only ok). */
  insertSays?: string;
}

export function driverContract(engine: ContractEngine, target: () => ContractTarget): void {
  const { tool } = engine;
  let runner: ReturnType<typeof makeRunner>;
  let dir: string;
  const run = (args: Record<string, unknown>, signal?: AbortSignal) => runner.run(tool, args, signal);

  describe(`${tool} contract`, () => {
    beforeAll(() => {
      dir = target().dir;
      runner = makeRunner(target().configs, dir);
    });

    describe('query', () => {
      test('rows as a table; big numbers and dates exact', async () => {
        const result = await run({ operation: 'query', sql: engine.exact.sql });
        expect(result.ok, result.output).toBe(true);
        expect(result.output).toContain(engine.exact.line);
      });

      test('stops after the row limit, says more rows exist, and the next call runs', async () => {
        const result = await run({ operation: 'query', sql: 'SELECT id, label, amount FROM big ORDER BY id' });
        expect(result.metadata).toMatchObject({ rows: 100, more: true });
        expect(result.output).toMatch(/│ 100 +│ row 100 +│ 25\.00 +│/);
        expect(result.output.endsWith('more rows exist; use COUNT(*) or export_query')).toBe(true);
        const next = await run({ operation: 'query', sql: 'SELECT COUNT(*) AS n FROM big' });
        expect(next.output).toMatch(/│ 20000 +│/);
      });

      test('row_limit keeps the order and the column names of the statement', async () => {
        const result = await run({ operation: 'query', sql: 'SELECT id, label FROM big ORDER BY id DESC', row_limit: 3 });
        expect(result.metadata).toMatchObject({ rows: 3, more: true, columns: ['id', 'label'] });
        expect(tableCells(result.output)).toEqual([
          ['20000', 'row 20000'],
          ['19999', 'row 19999'],
          ['19998', 'row 19998'],
        ]);
        const own = await run({ operation: 'query', sql: 'SELECT id FROM big ORDER BY id LIMIT 5' });
        expect(own.metadata).toMatchObject({ rows: 5, more: false });
      });
    });

    describe('catalogue', () => {
      test('list_tables and describe', async () => {
        const tables = await run({ operation: 'list_tables', ...(engine.listTables.pattern ? { table_pattern: engine.listTables.pattern } : {}) });
        expect(tables.ok, tables.output).toBe(true);
        for (const shown of engine.listTables.shows) expect(tables.output).toMatch(shown);
        const described = await run({ operation: 'describe', table_name: engine.describe.table });
        expect(described.ok, described.output).toBe(true);
        for (const shown of engine.describe.shows) expect(described.output).toMatch(shown);
      });

      test('search, sample, profile and explain', async () => {
        const found = await run({ operation: 'search', pattern: 'update_co' });
        expect(found.ok, found.output).toBe(true);
        expect(found.output).toMatch(/│ column +│.*│ audit_log +│ update_count +│/);
        const sample = await run({ operation: 'sample', table_name: 'big', row_limit: 5 });
        expect(sample.ok, sample.output).toBe(true);
        expect(tableCells(sample.output).length).toBe(5);
        expect(sample.output).toMatch(/row \d+/);
        const profile = await run({ operation: 'profile', table_name: 'big' });
        expect(profile.ok, profile.output).toBe(true);
        expect(profile.output).toMatch(/│ label +│/);
        expect(profile.output).toMatch(/│ amount +│/);
        const explained = await run({ operation: 'explain', sql: 'SELECT COUNT(*) FROM big WHERE id > 10' });
        if (engine.explainAbsent) expect(explained.output).toBe(engine.explainAbsent);
        else {
          expect(explained.ok, explained.output).toBe(true);
          expect(explained.output.length).toBeGreaterThan(0);
        }
      });
    });

    describe('read-only', () => {
      test.each(mutationCorpus(tool))('refuses %j and changes nothing', async (sql) => {
        const before = await target().snapshot();
        const result = await run({ operation: 'query', sql });
        expect(result.ok).toBe(false);
        if (!engine.alsoRefusedAs?.test(result.output)) expect(result.output).toMatch(/^refused/);
        expect(await target().snapshot()).toBe(before);
        expect(existsSync('/tmp/quarry-evil.csv') || existsSync('/tmp/quarry-evil') || existsSync('/tmp/quarry-evil.txt')).toBe(false);
      });

      test.each(benignCorpus(tool).filter((sql) => !engine.benignUnsupported?.sql.includes(sql)))('runs %j', async (sql) => {
        const result = await run({ operation: 'query', sql });
        expect(result.output).not.toMatch(/^refused/);
        expect(result.ok, result.output).toBe(true);
      });
    });

    describe('export_query', () => {
      test("writes what the engine's own client writes, byte for byte, and reports rows, bytes and a preview", async () => {
        const sql = 'SELECT id, label, amount FROM big ORDER BY id';
        const result = await run({ operation: 'export_query', sql, output_path: 'big.csv' });
        expect(result.ok, result.output).toBe(true);
        const csv = readFileSync(join(dir, 'big.csv'), 'utf8');
        expect(csv === (await target().clientCsv(sql))).toBe(true);
        const lines = csv.split('\r\n');
        const [header, first, last] = engine.exportLines ?? ['id,label,amount', '1,row 1,0.25', '20000,row 20000,5000.00'];
        expect(lines[0]).toBe(header);
        expect(lines[1]).toBe(first);
        expect(lines[20000]).toBe(last);
        expect(result.metadata).toMatchObject({ rows: 20000, bytes: Buffer.byteLength(csv), columns: ['id', 'label', 'amount'] });
        expect(result.output).toMatch(/│ 1 +│ row 1 +│ 0\.25 +│/);
      });

      test("dates, text and integers of the fixture come out as the engine's own client writes them", async () => {
        const sql = 'SELECT id, email, created_at FROM customers ORDER BY id';
        const result = await run({ operation: 'export_query', sql, output_path: 'customers.csv' });
        expect(result.ok, result.output).toBe(true);
        const csv = readFileSync(join(dir, 'customers.csv'), 'utf8');
        expect(csv).toBe(await target().clientCsv(sql));
        expect(csv).toMatch(/^.*\r\n1,"?ada@example\.com"?,"?2024-01-02"?\r\n/);
        expect(result.metadata).toMatchObject({ rows: 3 });
      });

      test('an error part-way leaves no file', async () => {
        const before = readdirSync(dir).sort();
        const result = await run({ operation: 'export_query', sql: engine.failingExport.sql, output_path: 'broken.csv' });
        expect(result.ok).toBe(false);
        if (engine.failingExport.says) expect(result.output).toContain(engine.failingExport.says);
        expect(readdirSync(dir).sort()).toEqual(before);
      });
    });

    describe('cancel and timeout', () => {
      test('cancelling stops the running statement, at the server too, and the next call runs', async () => {
        const controller = new AbortController();
        const started = Date.now();
        setTimeout(() => controller.abort(), 300);
        const result = await run({ operation: 'query', sql: engine.slow.sql }, controller.signal);
        expect(result).toMatchObject({ ok: false, metadata: { error: 'cancelled' } });
        expect(Date.now() - started).toBeLessThan(15_000); // the statement runs for more than 20 s
        const running = target().running;
        if (running) {
          const deadline = Date.now() + 5000;
          while ((await running(engine.slow.marker)) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
          expect(await running(engine.slow.marker)).toBe(0);
        }
        expect((await run({ operation: 'query', sql: 'SELECT 1 AS one' })).ok).toBe(true);
      });

      test('the statement timeout stops a long statement', async () => {
        const quick = makeRunner(
          target().configs.map((config) => ({ ...config, statementTimeoutMs: 1000 })),
          dir,
        );
        const started = Date.now();
        const result = await quick.run(tool, { operation: 'query', sql: engine.slow.sql });
        expect(result).toMatchObject({ ok: false, metadata: { error: 'timeout' } });
        expect(Date.now() - started).toBeLessThan(15_000);
      });
    });

    if (engine.wrongPassword) {
      const wrong = engine.wrongPassword;
      test('errors never contain the password', async () => {
        const bad = makeRunner(wrong.configs(target()), dir);
        const result = await bad.run(tool, { operation: 'query', sql: 'SELECT 1' });
        expect(result.ok).toBe(false);
        expect(result.output).toContain(wrong.says);
        expect(result.output).not.toContain(wrong.password);
        expect(bad.registry.get(tool)!.description).not.toContain(wrong.password);
      });
    }

    (engine.evalInsertBug ? test.fails : test)(
      `the eval profile runs writes and commits them${engine.evalInsertBug ? ` (known bug: ${engine.evalInsertBug})` : ''}`,
      async () => {
        const evalRunner = makeRunner(target().configs, dir, 'eval');
        const result = await evalRunner.run(tool, { operation: 'query', sql: "INSERT INTO audit_log (customer_id, action) VALUES (1, 'eval')" });
        expect(result.ok, result.output).toBe(true);
        if (engine.insertSays) expect(result.output).toBe(engine.insertSays);
        expect(await target().countAction('eval')).toBe(1);
        await target().removeAction('eval');
      },
    );
  });
}
