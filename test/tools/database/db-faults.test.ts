import mysql from 'mysql2/promise';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { spawnCli, collect } from '../../support/agent-cli.js';
import { makeTempDir } from '../../support/context.js';
import { startPostgres, type RunningServer } from '../../support/servers.js';
import { configsFor, makeRunner, requireEnv } from './helpers.js';

/**
 * Fault injection against real servers: the backend terminated (pg_terminate_backend, MariaDB
 * KILL) mid-statement and between calls, a PostgreSQL restart, during query, describe and
 * export_query; in this process through the registry and in a spawned `quarry tool`, which must
 * end on its own with exit 1 and one clear line. Afterwards the next call works (the connection
 * is reopened) and no file or temporary file is left.
 *
 * PostgreSQL runs on a server of this file's own, since it is restarted.
 */

let server: RunningServer;
let pgAdmin: pg.Client;
let myAdmin: mysql.Connection;
let myUrl: string;
const SPAWN_LIMIT_MS = 30_000;

beforeAll(async () => {
  server = await startPostgres();
  pgAdmin = adminClient();
  await pgAdmin.connect();
  await pgAdmin.query(
    `CREATE TABLE faults (id int PRIMARY KEY, label text); INSERT INTO faults SELECT i, 'row ' || i FROM generate_series(1, 1000) i; ALTER TABLE faults ` +
      `OWNER TO quarry_test`,
  );
  myUrl = requireEnv('QUARRY_TEST_MYSQL_URL');
  myAdmin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  await myAdmin.query(
    "DROP TABLE IF EXISTS faults; CREATE TABLE faults (id INT PRIMARY KEY, label VARCHAR(40)); INSERT INTO faults SELECT seq, CONCAT('row ', seq) FROM " +
      'seq_1_to_1000',
  );
}, 60_000);

afterAll(async () => {
  await pgAdmin?.end().catch(() => undefined);
  await myAdmin?.end().catch(() => undefined);
  await server?.stop();
});

/** The restart terminates this connection too: that is expected, not an error of the test. */
function adminClient(): pg.Client {
  const client = new pg.Client({ connectionString: server.adminUrl });
  client.on('error', () => undefined);
  return client;
}

async function reconnectPgAdmin(): Promise<void> {
  await pgAdmin.end().catch(() => undefined);
  pgAdmin = adminClient();
  await pgAdmin.connect();
}

/** Polls until a backend runs a statement containing `marker`; returns its process id. */
/** The backend running a statement that contains `marker` (and `also`, when given). */
async function pgBackend(marker: string, also = ''): Promise<number> {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const { rows } = await pgAdmin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE query LIKE $1 AND query LIKE $2 AND pid <> pg_backend_pid() AND state = 'active'`,
      [`%${marker}%`, `%${also}%`],
    );
    if (rows[0]) return rows[0].pid;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no PostgreSQL backend runs ${marker}`);
}

async function myThread(marker: string): Promise<number> {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    const [rows] = await myAdmin.query(`SELECT id FROM information_schema.processlist WHERE info LIKE ? AND id <> CONNECTION_ID()`, [`%${marker}%`]);
    const row = (rows as { id: number }[])[0];
    if (row) return Number(row.id);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no MariaDB thread runs ${marker}`);
}

function leftovers(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith('.') || name.endsWith('.csv'));
}

const engines = {
  postgres: {
    url: () => server.url,
    sleep: (marker: string) => `SELECT pg_sleep(30) AS "${marker}"`,
    slowExport: (marker: string) => `SELECT i AS "${marker}", pg_sleep(CASE WHEN i = 2000 THEN 30 ELSE 0 END) FROM generate_series(1, 3000) i`,
    find: pgBackend,
    kill: async (pid: number) => void (await pgAdmin.query('SELECT pg_terminate_backend($1)', [pid])),
    idleSessions: async () =>
      (await pgAdmin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = 'quarry'`)).rows.map((row) => row.pid),
  },
  mysql: {
    url: () => myUrl,
    sleep: (marker: string) => `SELECT SLEEP(30) AS \`${marker}\``,
    slowExport: (marker: string) => `SELECT seq AS \`${marker}\`, SLEEP(IF(seq = 900, 30, 0)) FROM seq_1_to_1000`,
    find: myThread,
    kill: async (id: number) => void (await myAdmin.query(`KILL ${id}`)),
    idleSessions: async () => {
      const [rows] = await myAdmin.query(`SELECT id FROM information_schema.processlist WHERE user = 'quarry_test'`);
      return (rows as { id: number }[]).map((row) => Number(row.id));
    },
  },
} as const;

let markers = 0;

for (const [engine, spec] of Object.entries(engines)) {
  describe(`${engine}: a backend killed`, () => {
    test('mid-query: a clear error within seconds, and the next call reopens the connection', async () => {
      const dir = makeTempDir();
      const { run } = makeRunner(configsFor([`f${++markers}=${spec.url()}`], dir), dir);
      const marker = `quarry_marker_${markers}`;
      const started = Date.now();
      const pending = run(engine, { operation: 'query', sql: spec.sleep(marker) });
      await spec.kill(await spec.find(marker));
      const result = await pending;
      expect(result.ok).toBe(false);
      expect(result.output.split('\n')).toHaveLength(1);
      expect(result.output).toMatch(/error|terminat|killed|lost|closed/i);
      expect(Date.now() - started).toBeLessThan(10_000);
      const next = await run(engine, { operation: 'query', sql: 'SELECT count(*) AS n FROM faults' });
      expect(next.ok, next.output).toBe(true);
      expect(next.output).toContain('1000');
      const described = await run(engine, { operation: 'describe', table_name: 'faults' });
      expect(described.ok, described.output).toBe(true);
    }, 30_000);

    test('between calls: describe, query and export_query after the idle connection was killed all work', async () => {
      const dir = makeTempDir();
      const alias = `f${++markers}`;
      const { run } = makeRunner(configsFor([`${alias}=${spec.url()}`], dir), dir);
      const before = await spec.idleSessions();
      expect((await run(engine, { operation: 'query', sql: 'SELECT 1 AS one' })).ok).toBe(true);
      const mine = (await spec.idleSessions()).filter((id) => !before.includes(id));
      expect(mine.length).toBeGreaterThan(0);
      for (const id of mine) await spec.kill(id);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const described = await run(engine, { operation: 'describe', table_name: 'faults' });
      expect(described.ok, described.output).toBe(true);
      for (const id of (await spec.idleSessions()).filter((id) => !before.includes(id))) await spec.kill(id);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const exported = await run(engine, { operation: 'export_query', sql: 'SELECT id, label FROM faults ORDER BY id', output_path: 'after.csv' });
      expect(exported.ok, exported.output).toBe(true);
      expect(readFileSync(join(dir, 'after.csv'), 'utf8').split('\r\n')).toHaveLength(1002);
    }, 30_000);

    test('mid-export: a clear error, no file and no temporary file, and the next export works', async () => {
      const dir = makeTempDir();
      const { run } = makeRunner(configsFor([`f${++markers}=${spec.url()}`], dir), dir);
      const marker = `quarry_marker_${markers}`;
      const pending = run(engine, { operation: 'export_query', sql: spec.slowExport(marker), output_path: 'killed.csv' });
      await spec.kill(await spec.find(marker));
      const result = await pending;
      expect(result.ok).toBe(false);
      expect(result.output.split('\n')).toHaveLength(1);
      expect(leftovers(dir)).toEqual([]);
      const next = await run(engine, { operation: 'export_query', sql: 'SELECT id FROM faults ORDER BY id', output_path: 'killed.csv' });
      expect(next.ok, next.output).toBe(true);
      expect(leftovers(dir)).toEqual(['killed.csv']);
    }, 30_000);

    test('a spawned `quarry tool` whose backend is killed mid-query exits 1 on its own with one line', async () => {
      const dir = makeTempDir();
      const marker = `quarry_marker_${++markers}`;
      const child = spawnCli([
        'tool',
        engine,
        '--db',
        `cli=${spec.url()}`,
        '-w',
        dir,
        '--args',
        JSON.stringify({ operation: 'query', sql: spec.sleep(marker) }),
      ]);
      const done = collect(child, SPAWN_LIMIT_MS);
      await spec.kill(await spec.find(marker));
      const result = await done;
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(/error/i);
    }, 40_000);

    test('a spawned `quarry tool` export whose backend is killed exits 1 and leaves nothing', async () => {
      const dir = makeTempDir();
      const marker = `quarry_marker_${++markers}`;
      const child = spawnCli([
        'tool',
        engine,
        '--db',
        `cli=${spec.url()}`,
        '-w',
        dir,
        '--yes',
        '--args',
        JSON.stringify({ operation: 'export_query', sql: spec.slowExport(marker), output_path: 'x.csv' }),
      ]);
      const done = collect(child, SPAWN_LIMIT_MS);
      await spec.kill(await spec.find(marker));
      const result = await done;
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(leftovers(dir)).toEqual([]);
    }, 40_000);
  });
}

describe('postgres: the server restarts', () => {
  test('during a query in this process: a clear error, then the next call reconnects', async () => {
    const dir = makeTempDir();
    const { run } = makeRunner(configsFor([`r${++markers}=${server.url}`], dir), dir);
    const marker = `quarry_marker_${markers}`;
    const pending = run('postgres', { operation: 'query', sql: engines.postgres.sleep(marker) });
    await pgBackend(marker);
    server.restart!();
    await reconnectPgAdmin();
    const result = await pending;
    expect(result.ok).toBe(false);
    expect(result.output.split('\n')).toHaveLength(1);
    const next = await run('postgres', { operation: 'query', sql: 'SELECT count(*) AS n FROM faults' });
    expect(next.ok, next.output).toBe(true);
    expect(next.output).toContain('1000');
  }, 60_000);

  test('a profile whose connection is killed mid-column fails whole (one line), never a profile of what was left', async () => {
    const dir = makeTempDir();
    const { run } = makeRunner(configsFor([`k${++markers}=${server.url}`], dir), dir);
    const marker = `quarry_marker_${markers}`;
    // Each statement over this query sleeps 2 s: the first reads its rows' types, then one per column.
    const pending = run('postgres', {
      operation: 'profile',
      sql: `SELECT id, pg_sleep(CASE WHEN id = 1 THEN 2 ELSE 0 END) AS "${marker}" FROM faults WHERE id <= 2`,
    });
    await engines.postgres.kill(await pgBackend(marker, 'COUNT('));
    const result = await pending;
    expect(result.ok, result.output).toBe(false);
    expect(result.output.split('\n')).toHaveLength(1);
    expect(result.output).toMatch(/terminat|connection/i);
  }, 60_000);

  test('during a spawned `quarry tool` profile: it exits on its own and says what it could not profile, writing nothing half-done', async () => {
    const dir = makeTempDir();
    const marker = `quarry_marker_${++markers}`;
    const profiler = spawnCli([
      'tool',
      'postgres',
      '--db',
      `cli=${server.url}`,
      '-w',
      dir,
      '--yes',
      '--args',
      JSON.stringify({ operation: 'profile', table_name: 'faults', output_path: 'p.md' }),
    ]);
    const slow = spawnCli([
      'tool',
      'postgres',
      '--db',
      `cli=${server.url}`,
      '-w',
      dir,
      '--args',
      JSON.stringify({ operation: 'profile', sql: `SELECT id, pg_sleep(CASE WHEN id = 1 THEN 30 ELSE 0 END) AS "${marker}" FROM faults WHERE id <= 2` }),
    ]);
    const done = Promise.all([collect(profiler, SPAWN_LIMIT_MS), collect(slow, SPAWN_LIMIT_MS)]);
    await pgBackend(marker);
    server.restart!();
    await reconnectPgAdmin();
    const [first, second] = await done;
    // The other either finished (a whole profile in p.md) or met the server down (one line, exit 1, no file): never half of one.
    if (first.code === 0) {
      expect(readFileSync(join(dir, 'p.md'), 'utf8')).toMatch(/^# Profile of public\.faults: 2 of 2 columns, from all 1,000 rows/);
    } else {
      expect(first.code, first.stderr).toBe(1);
      expect(first.stderr.trim().split('\n')).toHaveLength(1);
      expect(existsSync(join(dir, 'p.md'))).toBe(false);
    }
    // The one cut by the restart ends on its own with one clear line, exit 1.
    expect(second.code, second.stdout).toBe(1);
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(leftovers(dir)).toEqual([]);
    expect(readdirSync(dir)).toEqual(first.code === 0 ? ['p.md'] : []);
  }, 60_000);

  test('during a spawned `quarry tool` query and export: each exits 1 on its own, leaving nothing', async () => {
    const dir = makeTempDir();
    const queryMarker = `quarry_marker_${++markers}`;
    const exportMarker = `quarry_marker_${++markers}`;
    const query = spawnCli([
      'tool',
      'postgres',
      '--db',
      `cli=${server.url}`,
      '-w',
      dir,
      '--args',
      JSON.stringify({ operation: 'query', sql: engines.postgres.sleep(queryMarker) }),
    ]);
    const exporter = spawnCli([
      'tool',
      'postgres',
      '--db',
      `cli=${server.url}`,
      '-w',
      dir,
      '--yes',
      '--args',
      JSON.stringify({ operation: 'export_query', sql: engines.postgres.slowExport(exportMarker), output_path: 'r.csv' }),
    ]);
    const results = Promise.all([collect(query, SPAWN_LIMIT_MS), collect(exporter, SPAWN_LIMIT_MS)]);
    await pgBackend(queryMarker);
    await pgBackend(exportMarker);
    server.restart!();
    await reconnectPgAdmin();
    for (const result of await results) {
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(leftovers(dir)).toEqual([]);
    expect(existsSync(join(dir, 'r.csv'))).toBe(false);
  }, 60_000);
});
