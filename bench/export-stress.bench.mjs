// Stress exports, bigger (docs/development/benchmarks.md; issue: nothing lost or corrupted under stress).
// Runs test/tools/database/db-export-stress.test.ts at bench size: 100,000 seeded random rows
// (tiny values, two 10 MB texts and a 10 MB blob, quotes, CR/LF, NUL, invalid UTF-8) and a
// 1,000-column table, on SQLite, PostgreSQL and MariaDB (the test's own servers). The test checks
// every export byte for byte against an independent encoding, through the tool and (PostgreSQL,
// MariaDB) through a slow consumer, or (SQLite, whose own process writes the file) two exports at
// once; a mismatch fails this row. It then times the tool's export against the engine's own
// client writing the same statement to a file, in alternation, and this module prints the figures.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const ROWS = 100_000;
const WIDE_COLUMNS = 1_000;

export async function run({ root, workDir }) {
  const report = join(workDir, 'export-stress.jsonl');
  rmSync(report, { force: true });
  const started = Date.now();
  const vitest = spawnSync(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', 'test/tools/database/db-export-stress.test.ts'], {
    cwd: root,
    env: { ...process.env, QUARRY_STRESS_ROWS: String(ROWS), QUARRY_STRESS_WIDE_COLUMNS: String(WIDE_COLUMNS), QUARRY_STRESS_REPORT: report },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  if (vitest.status !== 0) {
    const failed = /FAIL .*|AssertionError.*|Error: .*/.exec(`${vitest.stdout}\n${vitest.stderr}`)?.[0] ?? `exit ${vitest.status}`;
    return [{ name: 'stress export: NOT byte-exact or failed', note: failed.slice(0, 200) }];
  }
  const lines = existsSync(report)
    ? readFileSync(report, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
  return lines.map((entry) => ({
    name:
      `stress export ${entry.engine}: ` +
      `${/wide/.test(entry.sql) ? `${entry.wideColumns} columns x 50 rows` : `${entry.rows.toLocaleString('en-US')} random rows + 10 MB values`} ` +
      `(${(entry.bytes / 1e6).toFixed(0)} MB)`,
    quarry: entry.toolMs,
    reference: entry.referenceMs,
    referenceName: entry.referenceName,
    unit: 'ms',
    note: `byte-exact through the tool and ${entry.engine === 'sqlite' ? 'two exports at once' : 'a slow consumer'} (whole file run ${seconds} s)`,
  }));
}
