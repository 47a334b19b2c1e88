import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cliEnv, collect, spawnCli } from '../../support/agent-cli.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, makeRunner, requireEnv } from './helpers.js';

/**
 * Several database calls in one model message run at once (the agent runs read-only calls of a
 * message together). Each must return its own rows within its own statement timeout, and the
 * process must end on its own afterwards: racing connect()s once leaked a client (the process
 * never exited) and made calls share one transaction. Also: concurrent exports to one path.
 */

let pgUrl: string;
let myUrl: string;
let pgAdmin: pg.Client;
let myAdmin: mysql.Connection;
const work = makeTempDir();
const sqlitePath = join(work, 'local.db');

beforeAll(async () => {
  pgUrl = requireEnv('QUARRY_TEST_PG_URL');
  myUrl = requireEnv('QUARRY_TEST_MYSQL_URL');
  pgAdmin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
  await pgAdmin.connect();
  await pgAdmin.query('DROP TABLE IF EXISTS conc; CREATE TABLE conc AS SELECT i FROM generate_series(1, 50000) i; ALTER TABLE conc OWNER TO quarry_test');
  myAdmin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  await myAdmin.query('DROP TABLE IF EXISTS conc; CREATE TABLE conc (i INT PRIMARY KEY); INSERT INTO conc SELECT seq FROM seq_1_to_50000');
  const db = new Database(sqlitePath);
  db.exec(
    'CREATE TABLE conc (i INTEGER PRIMARY KEY); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 50000) INSERT INTO conc SELECT i FROM n',
  );
  db.close();
}, 60_000);

afterAll(async () => {
  await pgAdmin?.query('DROP TABLE IF EXISTS conc').catch(() => undefined);
  await pgAdmin?.end();
  await myAdmin?.query('DROP TABLE IF EXISTS conc').catch(() => undefined);
  await myAdmin?.end();
});

type Call = { name: string; arguments: Record<string, unknown>; tag: string };

function calls(): Call[] {
  const list: Call[] = [];
  const add = (name: string, database: string, sql: string, tag: string) => list.push({ name, arguments: { database, operation: 'query', sql }, tag });
  add('postgres', 'pg', `SELECT 'pg-slow' AS tag, pg_sleep(2)`, 'pg-slow');
  add('mysql', 'my', `SELECT 'my-slow' AS tag, SLEEP(2)`, 'my-slow');
  for (let n = 1; n <= 3; n++) {
    add('postgres', 'pg', `SELECT 'pg-fast-${n}' AS tag, sum(i) * ${n} AS total FROM conc`, `pg-fast-${n}`);
    add('mysql', 'my', `SELECT 'my-fast-${n}' AS tag, sum(i) * ${n} AS total FROM conc`, `my-fast-${n}`);
    add('sqlite', 'lite', `SELECT 'lite-${n}' AS tag, sum(i) * ${n} AS total FROM conc`, `lite-${n}`);
  }
  list.push({ name: 'postgres', arguments: { database: 'pg', operation: 'describe', table_name: 'conc' }, tag: 'integer' });
  list.push({ name: 'mysql', arguments: { database: 'my', operation: 'list_tables', table_pattern: 'conc' }, tag: 'conc' });
  return list;
}

describe('several database calls in one model message', () => {
  test('an agent run with 13 calls on three engines (one slow, several fast per server): each returns its own rows, and the process exits on its ' +
    'own', async () => {
    const home = makeTempDir();
    const script = join(work, 'script.json');
    const list = calls();
    writeFileSync(
      script,
      JSON.stringify({
        turns: [{ text: 'All at once.', tool_calls: list.map(({ name, arguments: args }) => ({ name, arguments: args })) }, { text: 'Done.' }],
      }),
    );
    // Each call's own statement timeout is 4 s: the slow calls take 2 s, and a fast call that
    // waits for its turn behind a slow one must not be counted as running that long.
    const child = spawnCli(
      [
        '--model',
        `script:${script}`,
        '--format',
        'stream-json',
        '-w',
        work,
        '--db',
        `pg=${pgUrl}?statement_timeout=4`,
        '--db',
        `my=${myUrl}?statement_timeout=4`,
        '--db',
        `lite=${sqlitePath}`,
        'go',
      ],
      { env: cliEnv(home) },
    );
    const started = Date.now();
    const result = await collect(child, 60_000);
    expect(result.code, result.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(30_000);
    const ends = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; ok?: boolean; output?: string; arguments?: Record<string, unknown> })
      .filter((event) => event.type === 'tool_end');
    expect(ends).toHaveLength(list.length);
    for (const call of list) {
      const end = ends.find((event) => JSON.stringify(event.arguments) === JSON.stringify(call.arguments));
      expect(end, call.tag).toBeDefined();
      expect(end!.ok, `${call.tag}: ${end!.output}`).toBe(true);
      expect(end!.output).toContain(call.tag);
      // Its own rows: no other call's tag.
      for (const other of list.slice(0, -2)) if (other !== call) expect(end!.output, call.tag).not.toContain(`${other.tag} `);
    }
    const fast = ends.find((event) => String(event.arguments?.sql ?? '').includes("'pg-fast-2'"))!;
    expect(fast.output).toContain(String(((50000 * 50001) / 2) * 2));
  }, 90_000);

  for (const engine of ['postgres', 'mysql', 'sqlite'] as const) {
    test(`${engine}: two, then four calls at once through the registry, each with its own rows; a fast one beside a slow one is not a timeout`, async () => {
      const dir = makeTempDir();
      const target = engine === 'postgres' ? `${pgUrl}?statement_timeout=3` : engine === 'mysql' ? `${myUrl}?statement_timeout=3` : sqlitePath;
      const { run } = makeRunner(configsFor([`c=${target}`], dir), dir);
      const sleep = engine === 'postgres' ? 'pg_sleep(1.5)' : engine === 'mysql' ? 'SLEEP(1.5)' : '1';
      for (const width of [2, 4]) {
        const results = await Promise.all(
          Array.from({ length: width }, (_, n) =>
            run(engine, {
              operation: 'query',
              sql: n === 0 ? `SELECT 'slow-${width}' AS tag, ${sleep} AS s` : `SELECT 'call-${width}-${n}' AS tag, count(*) + ${n} AS total FROM conc`,
            }),
          ),
        );
        results.forEach((result, n) => {
          expect(result.ok, result.output).toBe(true);
          expect(result.output).toContain(n === 0 ? `slow-${width}` : `call-${width}-${n}`);
          if (n > 0) expect(result.output).toContain(String(50000 + n));
        });
      }
    }, 60_000);

    test(`${engine}: concurrent exports to one path: exactly one wins, the others are refused at once, nothing else is left`, async () => {
      const dir = makeTempDir();
      const target = engine === 'postgres' ? pgUrl : engine === 'mysql' ? myUrl : sqlitePath;
      // Four aliases of one database: four connections, so the exports really run at once (calls
      // on one alias take turns, and a later turn finds the file there).
      const { run } = makeRunner(
        configsFor(
          [1, 2, 3, 4].map((n) => `c${n}=${target}`),
          dir,
        ),
        dir,
      );
      // Big enough that the winner takes a while: a loser must not wait for it.
      const sql = 'SELECT a.i, b.i AS j FROM conc a CROSS JOIN (SELECT i FROM conc WHERE i <= 4) b ORDER BY a.i, b.i';
      const timed = (promise: ReturnType<typeof run>) => promise.then((result) => ({ result, at: Date.now() }));
      const results = await Promise.all(
        [1, 2, 3, 4].map((n) => timed(run(engine, { database: `c${n}`, operation: 'export_query', sql, output_path: 'same.csv' }))),
      );
      const winners = results.filter(({ result }) => result.ok);
      expect(winners).toHaveLength(1);
      for (const { result, at } of results.filter(({ result }) => !result.ok)) {
        // A loser that starts while the winner writes is refused at once; one whose connection
        // opened after the winner finished (SQLite's process starts in about half a second) finds
        // the file there. Either way it writes nothing.
        expect(result.output).toMatch(/^refused: (another export to same\.csv is running|.*same\.csv already exists)/);
        if (/another export/.test(result.output)) expect(at).toBeLessThanOrEqual(winners[0]!.at);
      }
      expect(readdirSync(dir)).toEqual(['same.csv']);
      expect(readFileSync(join(dir, 'same.csv'), 'utf8').split('\r\n')).toHaveLength(200_002);
      const again = await run(engine, { database: 'c1', operation: 'export_query', sql: 'SELECT 1 AS one', output_path: 'same.csv' });
      expect(again.ok).toBe(false);
      expect(again.output).toMatch(/exists/);
      expect(readdirSync(dir)).toEqual(['same.csv']);
    }, 120_000);
  }
});
