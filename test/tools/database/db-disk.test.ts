import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { removeStaleTempFiles } from '../../../src/backends/temp-files.js';
import { MysqlDriver } from '../../../src/tools/database/drivers/mysql.js';
import { PostgresDriver } from '../../../src/tools/database/drivers/postgres.js';
import { SqliteProcessDriver } from '../../../src/tools/database/drivers/sqlite-process.js';
import type { DatabaseDriver } from '../../../src/tools/database/types.js';
import { KEPT_LONG_VALUE_CHARS, KEPT_VALUE_CHARS, LONG_VALUE_ROWS } from '../../../src/tools/database/values.js';
import { writeToolOptions } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { createWriteTool } from '../../../src/tools/files/write.js';
import { collect, spawnCli } from '../../support/agent-cli.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { configsFor, requireEnv } from './helpers.js';

/**
 * A full disk (a 2 MB tmpfs) under exports of every engine and under `write`: one clear line,
 * exit 1, the process ends on its own, and no temporary file is left to fill the disk.
 * Temporary files of killed processes are removed by the next export. `query` keeps only what a
 * table can show of each value.
 */

let pgUrl: string;
let myUrl: string;
const work = makeTempDir();
const sqlitePath = join(work, 'big.db');
const full = join(work, 'full');
let mounted = false;

function tryMount(): boolean {
  mkdirSync(full);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', full], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  pgUrl = requireEnv('QUARRY_TEST_PG_URL');
  myUrl = requireEnv('QUARRY_TEST_MYSQL_URL');
  const admin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
  await admin.connect();
  await admin.query(
    `DROP TABLE IF EXISTS disk_rows, wide_values;
    CREATE TABLE disk_rows AS SELECT i, md5(i::text) AS h FROM generate_series(1, 200000) i; ALTER TABLE disk_rows OWNER TO quarry_test;
    CREATE TABLE wide_values AS SELECT i, repeat(chr(65 + i % 26), 1000000) AS v, decode(repeat('ab', 300000), 'hex') AS b FROM generate_series(1, 30) i; ` +
      `ALTER TABLE wide_values OWNER TO quarry_test`,
  );
  await admin.end();
  const my = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  await my.query(`DROP TABLE IF EXISTS disk_rows, wide_values;
    CREATE TABLE disk_rows AS SELECT seq AS i, MD5(seq) AS h FROM seq_1_to_200000;
    CREATE TABLE wide_values AS SELECT seq AS i, REPEAT(CHAR(65 + seq % 26), 1000000) AS v FROM seq_1_to_30`);
  await my.end();
  const db = new Database(sqlitePath);
  db.exec(
    `CREATE TABLE disk_rows AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 200000) SELECT i, hex(randomblob(16)) AS h FROM n;
    CREATE TABLE wide_values AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 30) SELECT i, printf('%.*c', 1000000, char(65 + i % ` +
      `26)) AS v, randomblob(600000) AS b FROM n`,
  );
  db.close();
  mounted = tryMount();
}, 60_000);

afterAll(() => {
  if (mounted) execFileSync('umount', [full]);
});

const targets = () => ({ postgres: pgUrl, mysql: myUrl, sqlite: sqlitePath });

/** `quarry tool sqlite` on the test database, working in the small file system. */
const sqliteTool = (args: Record<string, unknown>) =>
  spawnCli(['tool', 'sqlite', '--db', `d=${sqlitePath}`, '-w', full, '--yes', '--args', JSON.stringify(args)]);

describe('a full disk', () => {
  for (const engine of ['postgres', 'mysql', 'sqlite'] as const) {
    test(`${engine}: an export that fills the disk fails with one line, exit 1, and leaves nothing`, async (context) => {
      if (!mounted) context.skip('mounting a tmpfs needs root; this machine refused it');
      const child = spawnCli([
        'tool',
        engine,
        '--db',
        `d=${targets()[engine]}`,
        '-w',
        full,
        '--yes',
        '--args',
        JSON.stringify({ operation: 'export_query', sql: 'SELECT * FROM disk_rows', output_path: `${engine}.csv` }),
      ]);
      const result = await collect(child, 30_000);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/no space left on device|ENOSPC/i);
      expect(readdirSync(full)).toEqual([]);
    }, 40_000);
  }

  test('sqlite: a disk full for a moment stops the export at the first failed write, and space coming back leaves no file with a gap', async (context) => {
    if (!mounted) context.skip('mounting a tmpfs needs root; this machine refused it');
    // Room for the lock file, not for the first megabyte of rows.
    const filler = join(full, 'filler');
    writeFileSync(filler, Buffer.alloc(2 * 1024 * 1024 - 64 * 1024));
    // About 1.2 MB of rows at once, then rows that each take a while: a gap would be the first megabyte.
    const sql =
      'WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 100000) ' +
      "SELECT i, printf('%012d', i) AS p, CASE WHEN i > 60000 THEN (WITH RECURSIVE s(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM s WHERE j < 300 + i % 2) " +
      'SELECT sum(j) FROM s) ELSE 0 END AS z FROM r';
    try {
      const child = sqliteTool({ operation: 'export_query', sql, output_path: 'gap.csv' });
      // The space comes back while the slow rows run.
      const freed = new Promise<void>((resolve) =>
        setTimeout(() => {
          rmSync(filler, { force: true });
          resolve();
        }, 1500),
      );
      const result = await collect(child, 60_000);
      await freed;
      expect(result.code, result.stdout).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/could not write gap\.csv: no space left on device; the export stopped and left no file/);
      expect(readdirSync(full)).toEqual([]);
    } finally {
      rmSync(filler, { force: true });
    }
  }, 60_000);

  test('profile: a Markdown profile that does not fit fails with one line, exit 1, and leaves no file', async (context) => {
    if (!mounted) context.skip('mounting a tmpfs needs root; this machine refused it');
    const filler = join(full, 'filler');
    try {
      writeFileSync(filler, Buffer.alloc(4 * 1024 * 1024));
    } catch {
      // ENOSPC: the disk is full now, which is the point.
    }
    try {
      const child = sqliteTool({ operation: 'profile', table_name: 'disk_rows', output_path: 'profile.md' });
      const result = await collect(child, 30_000);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/could not write profile\.md: no space left on device; no file was changed/);
      expect(readdirSync(full)).toEqual(['filler']);
    } finally {
      rmSync(filler, { force: true });
    }
  }, 40_000);

  test('write: a file that does not fit says no file was changed and leaves no temporary file', async (context) => {
    if (!mounted) context.skip('mounting a tmpfs needs root; this machine refused it');
    const toolContext = makeToolContext({ workingDir: full });
    await expect(
      createWriteTool(writeToolOptions(loadProfile('developer'))).run({ path: 'huge.txt', content: 'x'.repeat(5_000_000) }, toolContext),
    ).rejects.toThrow(/no space left on device; no file was changed/);
    expect(readdirSync(full)).toEqual([]);
  });
});

describe('temporary files of dead processes', () => {
  test('the next export to the directory removes those of processes that no longer run and old ones, and keeps live ones', async () => {
    const dir = makeTempDir();
    const dead = '.out.csv.quarry-999999999-0123456789ab.tmp';
    const live = `.other.csv.quarry-${process.ppid}-0123456789ab.tmp`;
    const oldNoPid = '.legacy.csv.quarry-abcdefabcdef.tmp';
    const freshNoPid = '.recent.csv.quarry-abcdefabcdef.tmp';
    const staleLock = '.out.csv.quarry-export.lock';
    for (const name of [dead, live, oldNoPid, freshNoPid]) writeFileSync(join(dir, name), 'partial');
    writeFileSync(join(dir, staleLock), '999999999\n');
    const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    utimesSync(join(dir, oldNoPid), twoDaysAgo, twoDaysAgo);
    const child = spawnCli([
      'tool',
      'sqlite',
      '--db',
      `d=${sqlitePath}`,
      '-w',
      dir,
      '--yes',
      '--args',
      JSON.stringify({ operation: 'export_query', sql: 'SELECT i FROM disk_rows LIMIT 3', output_path: 'out.csv' }),
    ]);
    const result = await collect(child, 30_000);
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(dir).sort()).toEqual([live, freshNoPid, 'out.csv'].sort());
    expect(statSync(join(dir, 'out.csv')).size).toBe('i\r\n1\r\n2\r\n3\r\n'.length);
    expect(await removeStaleTempFiles(dir)).toEqual([]);
  });
});

describe('query keeps only what a table can show', () => {
  for (const engine of ['postgres', 'mysql', 'sqlite'] as const) {
    test(`${engine}: 30 rows of 1 MB values come back cut: the first ${LONG_VALUE_ROWS} to ${KEPT_LONG_VALUE_CHARS}, the rest to ${KEPT_VALUE_CHARS} characters`, async () => {
      const config = configsFor([`q=${targets()[engine]}`], work)[0]!;
      const driver: DatabaseDriver =
        engine === 'postgres' ? new PostgresDriver(config, true) : engine === 'mysql' ? new MysqlDriver(config, true) : new SqliteProcessDriver(config, true);
      const signal = new AbortController().signal;
      try {
        await driver.connect(signal);
        const result = await driver.query('SELECT * FROM wide_values ORDER BY i', 100, { readOnly: true, signal });
        expect(result.rows).toHaveLength(30);
        // The first rows keep enough for the vertical layout's whole values (format.ts); memory stays bounded.
        for (const [index, row] of result.rows.entries()) {
          const kept = index < LONG_VALUE_ROWS ? KEPT_LONG_VALUE_CHARS : KEPT_VALUE_CHARS;
          expect(String(row[1]).length).toBe(kept);
          if (row[2] !== undefined) expect((row[2] as Buffer | string).length).toBeLessThanOrEqual(kept);
        }
        expect(String(result.rows[0]![1])).toBe(String.fromCharCode(65 + (1 % 26)).repeat(KEPT_LONG_VALUE_CHARS));
        expect(String(result.rows[LONG_VALUE_ROWS]![1])).toBe(String.fromCharCode(65 + ((LONG_VALUE_ROWS + 1) % 26)).repeat(KEPT_VALUE_CHARS));
      } finally {
        await driver.close();
      }
    }, 60_000);
  }
});
