import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runQuarry } from '../../support/cli.js';
import { makeTempDir } from '../../support/context.js';
import { freshPostgresDatabase, requireEnv } from './helpers.js';

/**
 * The query guard judges what a join outputs, not only what each table access reads: a cross join
 * of two analysed 30,000-row tables (900 million rows) is refused at 1,000,000 on PostgreSQL and
 * MariaDB, through the built CLI, while a join on a key and the cross join of a never-analysed
 * table with a few of its rows still run.
 */

let dir: string;
let profile: string;
let home: string;
let pgUrl: string;
let pgAdmin: Awaited<ReturnType<typeof freshPostgresDatabase>>['admin'];
let myUrl: string;
let myAdmin: mysql.Connection;

beforeAll(async () => {
  dir = makeTempDir();
  home = makeTempDir('quarry-home-');
  profile = join(dir, 'guarded.yaml');
  writeFileSync(profile, 'name: guarded\ndescription: the guard at one million, refusing\nquery_guard: {max_estimated_rows: 1000000, action: refuse}\n');
  const pg = await freshPostgresDatabase('quarry_guard_joins');
  pgAdmin = pg.admin;
  pgUrl = pg.url;
  await pgAdmin.query(`
    CREATE TABLE a AS SELECT i AS id, i % 100 AS k FROM generate_series(1, 30000) AS i;
    CREATE TABLE b AS SELECT i AS id, i % 100 AS k FROM generate_series(1, 30000) AS i;
    ALTER TABLE a ADD PRIMARY KEY (id); ALTER TABLE b ADD PRIMARY KEY (id);
    CREATE TABLE fresh AS SELECT i FROM generate_series(1, 50000) AS i;
    GRANT SELECT ON ALL TABLES IN SCHEMA public TO quarry_test;
    ANALYZE a; ANALYZE b;`);
  myUrl = requireEnv('QUARRY_TEST_MYSQL_URL');
  myAdmin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  await myAdmin.query(`
    DROP TABLE IF EXISTS guard_a, guard_b;
    CREATE TABLE guard_a (id INT PRIMARY KEY, k INT);
    CREATE TABLE guard_b (id INT PRIMARY KEY, k INT);
    INSERT INTO guard_a SELECT seq, seq % 100 FROM seq_1_to_30000;
    INSERT INTO guard_b SELECT seq, seq % 100 FROM seq_1_to_30000;
    ANALYZE TABLE guard_a, guard_b;`);
}, 60_000);

afterAll(async () => {
  await pgAdmin?.end();
  await myAdmin?.query('DROP TABLE IF EXISTS guard_a, guard_b');
  await myAdmin?.end();
});

async function run(tool: string, url: string, sql: string) {
  return runQuarry(['tool', tool, '--db', url, '--profile', profile, '--format', 'json', '--args', JSON.stringify({ operation: 'query', sql })], {
    env: { QUARRY_HOME: home, QUARRY_PROFILE: undefined },
    cwd: dir,
    timeoutMs: 60_000,
  });
}

describe('the query guard and joins', () => {
  it('PostgreSQL: refuses the cross join of two analysed 30,000-row tables; runs a key join and the never-analysed cross join', async () => {
    const cross = await run('postgres', pgUrl, 'SELECT count(*) FROM a CROSS JOIN b');
    expect(cross.code).toBe(1);
    expect(JSON.parse(cross.stdout)).toMatchObject({ ok: false, metadata: { error: 'query_guard' } });
    expect(cross.stdout).toMatch(/the plan estimates 900,000,000 rows read from the cartesian product of a, b/);
    const keyed = await run('postgres', pgUrl, 'SELECT count(*) AS n FROM a JOIN b ON a.id = b.id');
    expect(JSON.parse(keyed.stdout).output).toContain('30000');
    const fresh = await run('postgres', pgUrl, 'SELECT count(*) AS n FROM fresh a CROSS JOIN (SELECT i FROM fresh WHERE i <= 4) b');
    expect(JSON.parse(fresh.stdout).output).toContain('200000');
  }, 60_000);

  it('MariaDB: refuses the cross join of two analysed 30,000-row tables; runs a key join', async () => {
    const cross = await run('mysql', myUrl, 'SELECT count(*) FROM guard_a CROSS JOIN guard_b');
    expect(cross.code).toBe(1);
    expect(JSON.parse(cross.stdout)).toMatchObject({ ok: false, metadata: { error: 'query_guard' } });
    expect(cross.stdout).toMatch(/the plan estimates [\d,]+ rows read from the join of guard_a, guard_b/);
    const keyed = await run('mysql', myUrl, 'SELECT count(*) AS n FROM guard_a JOIN guard_b ON guard_a.id = guard_b.id');
    expect(JSON.parse(keyed.stdout).output).toContain('30000');
  }, 60_000);
});
