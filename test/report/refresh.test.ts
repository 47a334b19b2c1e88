import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { compareTables, markFigures, parseResultTable, refreshedName, type RefreshedStep } from '../../src/report/refresh.js';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';

/** The refresh's comparison, answer marking and file naming, and its read-only rule, on real SQLite sessions. */

const table = (columns: string[], rows: string[][]) => ({ columns, rows });

describe('comparing results', () => {
  it("reads the tool's box-drawn table back", () => {
    const parsed = parseResultTable('┌────┬───┐\n│ a  │ b │\n├────┼───┤\n│ x  │ 1 │\n│ y  │ 2 │\n└────┴───┘\n(2 rows)');
    expect(parsed).toEqual(
      table(
        ['a', 'b'],
        [
          ['x', '1'],
          ['y', '2'],
        ],
      ),
    );
    expect(parseResultTable('Exported 0 rows')).toBeUndefined();
  });

  it('matches rows by their text cells: values changed, rows appeared and disappeared, columns renamed', () => {
    const before = table(
      ['region', 'n'],
      [
        ['north', '3'],
        ['south', '5'],
        ['east', '1'],
      ],
    );
    const after = table(
      ['region', 'n'],
      [
        ['north', '3'],
        ['south', '6'],
        ['west', '2'],
      ],
    );
    expect(compareTables(before, after)).toEqual({
      values: [{ row: 'south', column: 'n', old: '5', new: '6', delta: 1, percent: 20 }],
      appeared: [['west', '2']],
      disappeared: [['east', '1']],
    });
    // A one-row aggregate is matched by position; a renamed column is reported.
    expect(compareTables(table(['n', 'total'], [['3', '42.5']]), table(['n', 'sum'], [['3', '0']]))).toEqual({
      columns: { old: ['n', 'total'], new: ['n', 'sum'] },
      values: [{ row: '', column: 'sum', old: '42.5', new: '0', delta: -42.5, percent: -100 }],
      appeared: [],
      disappeared: [],
    });
    expect(compareTables(before, before)).toEqual({ values: [], appeared: [], disappeared: [] });
  });

  it('marks the figures of an answer that a changed value or row count gave, as written or rounded', () => {
    const step = {
      values: [
        { row: '', column: 'total', old: '1234.5678', new: '1300.1', delta: 0, percent: 0 },
        { row: '', column: 'n', old: '3', new: '4', delta: 1, percent: 33 },
      ],
      before: { rows: 10, output: '' },
      after: { rows: 12, output: '' },
    } as unknown as RefreshedStep;
    const text = 'Revenue was 1,234.57 from 3 stores (10 rows); 2024 was a good year; 33 is not a figure here.';
    expect(markFigures(text, [step]).map(({ old, new: next }) => `${old} → ${next}`)).toEqual(['1,234.57 → 1,300.10', '3 → 4', '10 → 12']);
    expect(markFigures(text, [])).toEqual([]);
    // The SQL shown in the answer keeps its numbers.
    expect(markFigures('```sql\nSELECT * FROM t LIMIT 10\n```\nGot 10 rows, `WHERE n = 3`.', [step]).map((figure) => figure.old)).toEqual(['10']);
  });

  it('names new files beside the old, never one that exists (for charts, none of NAME.svg/.png/.vl.json)', () => {
    const dir = makeTempDir('quarry-refresh-names-');
    writeFileSync(join(dir, 'sales.refreshed-20260101-000000.csv'), 'x');
    writeFileSync(join(dir, 'plot.refreshed-20260101-000000.vl.json'), '{}');
    expect(refreshedName(join(dir, 'sales.csv'), '20260101-000000')).toBe(join(dir, 'sales.refreshed-20260101-000000-2.csv'));
    expect(refreshedName(join(dir, 'plot.png'), '20260101-000000')).toBe(join(dir, 'plot.refreshed-20260101-000000-2.png'));
    expect(refreshedName(join(dir, 'new.csv'), '20260101-000000')).toBe(join(dir, 'new.refreshed-20260101-000000.csv'));
  });
});

describe('refresh re-runs reads only', () => {
  it('a session under a mutations profile: its writes are skipped (not run), its reads re-run, the database keeps its data', async () => {
    const home = makeTempDir('quarry-refresh-rw-home-');
    const work = makeTempDir('quarry-refresh-rw-work-');
    const shop = join(work, 'shop.db');
    const db = new Database(shop);
    db.exec("CREATE TABLE t (k TEXT, v INT); INSERT INTO t VALUES ('a', 1);");
    db.close();
    const script = join(home, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: "INSERT INTO t VALUES ('b', 2)" } }] },
          { tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT count(*) AS n FROM t' } }] },
          { text: 'There are 2 rows now.' },
        ],
      }),
    );
    const profile = join(home, 'rw.yaml');
    writeFileSync(profile, 'name: rw\ndatabase: mutations\napproval:\n  mode: none\n');
    const run = await runCli(['-m', `script:${script}`, '-p', profile, '--db', `shop=${shop}`, '-w', work, 'add b'], { env: cliEnv(home) });
    expect(run.code, run.stderr).toBe(0);
    const first = await runCli(['refresh', 'latest', '--format', 'json'], { env: cliEnv(home) });
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report.steps.map((step: { status: string }) => step.status)).toEqual(['skipped', 'unchanged']);
    expect(report.steps[0].message).toMatch(/^not re-run: not a read/);
    const check = new Database(shop, { readonly: true });
    expect(check.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 2 });
    check.close();
    // The profile file made looser since: refused, one line, exit 2.
    writeFileSync(profile, 'name: rw\ndatabase: mutations\napproval:\n  mode: none\nshell: unrestricted\n');
    const looser = await runCli(['refresh', 'latest'], { env: cliEnv(home) });
    expect(looser.code).toBe(2);
    expect(looser.stderr).toContain('shell: "restricted" -> "unrestricted"');
    expect(readdirSync(work).sort()).toEqual(['shop.db']);
    // A session that did not record its databases' identities cannot be refreshed.
    const sessionDir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!);
    const { databases: _databases, ...meta } = JSON.parse(readFileSync(join(sessionDir, 'meta.json'), 'utf8'));
    writeFileSync(join(sessionDir, 'meta.json'), JSON.stringify(meta));
    const unknown = await runCli(['refresh', 'latest'], { env: cliEnv(home) });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("saved without its databases' identities");
  }, 60_000);
});
