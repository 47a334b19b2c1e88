import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { cliEnv } from '../support/agent-cli.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

/** `npm run demo` (after the build): the scripted analyst run on fixtures/sample.db, end to end. */

function runDemo(home: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'scripts', 'demo.mjs')],
      { env: cliEnv(home) as NodeJS.ProcessEnv, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

describe('npm run demo', () => {
  it('answers the analyst question with the real numbers and writes the CSV', async () => {
    const home = makeTempDir('quarry-home-');
    const result = await runDemo(home);
    expect(result.stderr).toMatch(/\[scripted model script:/);
    expect(result.code).toBe(0);
    // Every tool call succeeded.
    const rows = result.stderr.split('\n').filter((line) => /^(ok|err|refused) /.test(line));
    expect(rows.length).toBe(8);
    expect(rows.filter((row) => row.startsWith('ok knowledge'))).toHaveLength(1);
    expect(rows.filter((row) => row.startsWith('ok sqlite'))).toHaveLength(6);
    // The demo ends with a chart and a report of the session.
    expect(rows.filter((row) => row.startsWith('ok chart bar: top5_spend_2024.svg, top5_spend_2024.png, top5_spend_2024.vl.json'))).toHaveLength(1);
    const report = /^(\/\S+report\.html): the session report$/m.exec(result.stderr);
    expect(report, result.stderr).not.toBeNull();
    const html = readFileSync(report![1]!, 'utf8');
    expect(html).toContain('Which 5 customers spent the most in 2024?');
    expect(html).toMatch(/<img class="chart" alt="chart [^"]*top5_spend_2024\.png" src="data:image\/png;base64,/);
    // The scripted answer states what the database really holds.
    const db = new Database(join(REPO_ROOT, 'fixtures', 'sample.db'), { readonly: true });
    const top = db
      .prepare(`SELECT c.name, ROUND(SUM(t.total), 2) AS spent FROM order_totals t JOIN customers c ON c.id = t.customer_id
      WHERE t.ordered_at >= '2024-01-01' AND t.ordered_at < '2025-01-01' AND t.status NOT IN ('cancelled', 'refunded')
      GROUP BY c.id ORDER BY spent DESC LIMIT 5`)
      .all() as { name: string; spent: number }[];
    db.close();
    for (const [index, row] of top.entries()) {
      const amount = row.spent.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
      expect(result.stdout).toContain(`| ${index + 1} | ${row.name} |`);
      expect(result.stdout).toContain(amount);
    }
    const csvPath = /^(\/\S+top5_orders_2024\.csv): (\d+) rows/m.exec(result.stderr);
    expect(csvPath).not.toBeNull();
    const csv = readFileSync(csvPath?.[1] as string, 'utf8')
      .trimEnd()
      .split(/\r?\n/);
    expect(csv[0]).toBe('order_id,customer,ordered_at,status,shipping_country,total');
    expect(csv.length - 1).toBe(25);
  });
});
