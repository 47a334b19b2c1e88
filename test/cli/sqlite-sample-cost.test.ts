import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { CLI_PATH } from '../support/cli.js';

/**
 * `sample` on a SQLite table reads a few pages whatever the table's size: the pages SQLite reads
 * are counted with strace (every page read is one pread64 of the page size), for a 20,000-row
 * and a 1,000,000-row table. `SELECT min(rowid), max(rowid)` read every page of the big one.
 */
const strace = spawnSync('strace', ['-V']).status === 0;

let dir: string;
beforeAll(() => {
  dir = makeTempDir();
  for (const [name, rows] of [
    ['small.db', 20_000],
    ['big.db', 1_000_000],
  ] as const) {
    execFileSync('sqlite3', [
      join(dir, name),
      `CREATE TABLE t(id INTEGER, label TEXT); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${rows}) ` +
        `INSERT INTO t SELECT i, 'row ' || i FROM c;`,
    ]);
  }
}, 60_000);

function pagesRead(database: string, operation: object): number {
  const log = join(dir, `${database}.strace`);
  const result = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-e',
      'trace=pread64',
      '-e',
      'signal=none',
      '-o',
      log,
      process.execPath,
      CLI_PATH,
      'tool',
      'sqlite',
      '--db',
      join(dir, database),
      '--args',
      JSON.stringify(operation),
    ],
    { encoding: 'utf8', env: { ...process.env, QUARRY_HOME: makeTempDir('quarry-home-'), QUARRY_PROFILE: undefined, NO_COLOR: '1' }, timeout: 60_000 },
  );
  expect(result.status, result.stderr).toBe(0);
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => /pread64\(.*, 4096, \d+\) = 4096/.test(line)).length;
}

describe.skipIf(!strace)('sample on SQLite (needs strace)', () => {
  it('reads about as many pages of a 1,000,000-row table as of a 20,000-row one', () => {
    const sample = { operation: 'sample', table_name: 't', row_limit: 5 };
    const small = pagesRead('small.db', sample);
    const big = pagesRead('big.db', sample);
    // The big table has about 5,000 pages: a scan would read them all.
    const bigPages = Number(execFileSync('sqlite3', [join(dir, 'big.db'), 'PRAGMA page_count']).toString());
    expect(bigPages).toBeGreaterThan(4000);
    expect(big, `pages read: ${small} (20,000 rows) against ${big} (1,000,000 rows)`).toBeLessThan(small + 60);
    expect(big).toBeLessThan(bigPages / 20);
  }, 120_000);
});
