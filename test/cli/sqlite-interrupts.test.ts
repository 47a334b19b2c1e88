import { execFileSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, collect, spawnCli, waitForOutput } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { childProcesses } from '../support/processes.js';
import { startOpenAIServer, type FakeServer } from '../support/fake-openai.js';
import { runOnPty } from '../support/pty.js';

/**
 * SQLite statements stop at once on Ctrl+C, the statement timeout and the profile budget, even in
 * the middle of one long native step (a recursive CTE, a sort before the first row): they run in
 * a child process that quarry kills (src/tools/database/drivers/sqlite-process.ts). Each test
 * prints the latency it measured.
 */

/** A view that takes minutes: every row of it is a recursive step, and the ORDER BY sorts them all before the first. */
const SLOW = 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000000000) SELECT i, i % 7 AS k FROM c';
/** Generous for a loaded machine; the latencies printed are what was measured. */
const STOP_MS = 2000;

let dir: string;
let database: string;
beforeAll(() => {
  dir = makeTempDir();
  database = join(dir, 'slow.db');
  execFileSync('sqlite3', [
    database,
    `CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t VALUES (1, 'a'); CREATE VIEW slow AS ${SLOW} ORDER BY i DESC;`,
  ]);
});

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Process ids of the child's children (the SQLite process), once there is one. */
async function childrenOf(parent: ChildProcess): Promise<number[]> {
  return (await childProcesses(parent.pid!, /sqlite-child/)).map((entry) => entry.pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function tool(args: object, home: string, extra: string[] = []): ChildProcess {
  const child = spawnCli(['tool', 'sqlite', '--db', database, '-w', dir, '--yes', ...extra, '--args', JSON.stringify(args)], { env: cliEnv(home), cwd: dir });
  child.stdin?.end();
  return child;
}

describe('Ctrl+C stops every SQLite operation within a second (quarry tool)', () => {
  const operations: [string, object][] = [
    ['query', { operation: 'query', sql: `${SLOW} ORDER BY i DESC` }],
    ['export_query', { operation: 'export_query', sql: 'SELECT * FROM slow', output_path: 'out.csv' }],
    ['sample', { operation: 'sample', table_name: 'slow' }],
    ['profile', { operation: 'profile', table_name: 'slow' }],
  ];
  it.each(operations)(
    '%s: exit 130, no process and no file left',
    async (name, args) => {
      const home = makeTempDir('quarry-home-');
      const child = tool(args, home);
      const done = collect(child, 60_000);
      const sqlite = await childrenOf(child);
      expect(sqlite).toHaveLength(1);
      // Well inside the statement's first native step.
      await new Promise((resolve) => setTimeout(resolve, 700));
      const started = Date.now();
      child.kill('SIGINT');
      const result = await done;
      const latency = Date.now() - started;
      console.log(`${name}: Ctrl+C to exit: ${latency} ms`);
      expect(result.code, result.stderr).toBe(130);
      expect(result.stderr).toMatch(/cancelled/);
      expect(latency).toBeLessThan(STOP_MS);
      expect(sqlite.filter(alive)).toEqual([]);
      expect(readdirSync(dir).sort()).toEqual(['slow.db']);
    },
    60_000,
  );
});

/** SQLite processes (sqlite-child) whose working directory is `cwd`, whoever their parent is now. */
function sqliteProcessesIn(cwd: string): number[] {
  const listing = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return listing
    .split('\n')
    .filter((line) => line.includes('sqlite-child'))
    .map((line) => Number(line.trim().split(/\s+/)[0]))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === cwd;
      } catch {
        return false;
      }
    });
}

/** Whether a process runs (a zombie, ended but not yet reaped by init, does not). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** What `left` still finds after up to 3 s of waiting for it to find nothing. */
async function gone(left: () => number[]): Promise<number[]> {
  let found = left();
  for (let i = 0; i < 60 && found.length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    found = left();
  }
  return found;
}

describe('the SQLite process `quarry tool sqlite` starts before the rest of quarry loads', () => {
  it.each([
    ['no SQLite database configured', ['--args', JSON.stringify({ operation: 'query', sql: 'SELECT 1' })], /no sqlite database is configured/],
    ['--args that is not JSON', ['--db', 'x.db', '--args', '{oops'], /--args is not valid JSON/],
    ['an unknown operation', ['--db', 'DATABASE', '--args', JSON.stringify({ operation: 'nope' })], /operation/],
  ])(
    '%s: exit 2 at once, and the process started ahead ends with quarry',
    async (_name, args, message) => {
      const cwd = makeTempDir('quarry-spare-');
      const home = makeTempDir('quarry-home-');
      const started = Date.now();
      const child = spawnCli(['tool', 'sqlite', ...args.map((arg) => (arg === 'DATABASE' ? database : arg))], { env: cliEnv(home), cwd });
      child.stdin?.end();
      const result = await collect(child, 30_000);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(Date.now() - started).toBeLessThan(10_000);
      // It exits when its channel to quarry closes, once its own start is over.
      expect(await gone(() => sqliteProcessesIn(cwd))).toEqual([]);
      expect(readdirSync(cwd)).toEqual([]);
    },
    40_000,
  );

  it('a query runs in it: one SQLite process in all, gone after the exit', async () => {
    const cwd = makeTempDir('quarry-spare-');
    const home = makeTempDir('quarry-home-');
    const child = spawnCli(['tool', 'sqlite', '--db', database, '--args', JSON.stringify({ operation: 'query', sql: 'SELECT name FROM t' })], {
      env: cliEnv(home),
      cwd,
    });
    child.stdin?.end();
    const done = collect(child, 30_000);
    const seen = new Set<number>();
    while (child.exitCode === null) {
      for (const pid of sqliteProcessesIn(cwd)) seen.add(pid);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const result = await done;
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/│ a +│/);
    expect(seen.size).toBe(1);
    expect(await gone(() => [...seen].filter(running))).toEqual([]);
  }, 40_000);
});

describe('time limits stop a SQLite statement in its first step', () => {
  it('the statement timeout', async () => {
    const config = join(dir, 'databases.yaml');
    writeFileSync(config, `databases:\n  slow:\n    type: sqlite\n    path: ${database}\n    statement_timeout: 1\n`);
    const home = makeTempDir('quarry-home-');
    const started = Date.now();
    const child = spawnCli(['tool', 'sqlite', '--databases', config, '--args', JSON.stringify({ operation: 'query', sql: 'SELECT * FROM slow' })], {
      env: cliEnv(home),
      cwd: dir,
    });
    child.stdin?.end();
    const done = collect(child, 60_000);
    const sqlite = await childrenOf(child);
    const result = await done;
    console.log(`statement timeout 1 s: stopped after ${Date.now() - started} ms`);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/statement timeout \(1 s\)/);
    expect(Date.now() - started).toBeLessThan(1000 + STOP_MS);
    expect(sqlite.filter(alive)).toEqual([]);
  }, 60_000);

  it('the profile budget', async () => {
    const home = makeTempDir('quarry-home-');
    const profile = join(dir, 'budget.yaml');
    writeFileSync(profile, 'name: budget\ndescription: a short profile budget\nprofile_budget_seconds: 1\n');
    const started = Date.now();
    const child = tool({ operation: 'profile', table_name: 'slow' }, home, ['--profile', profile]);
    const result = await collect(child, 60_000);
    console.log(`profile budget 1 s: answered after ${Date.now() - started} ms`);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/budget/);
    expect(Date.now() - started).toBeLessThan(1000 + STOP_MS);
  }, 60_000);
});

describe('an agent run', () => {
  it('SIGINT during a SQLite query: exit 130, session cancelled, SQLite process gone', async () => {
    server = await startOpenAIServer([
      { toolCalls: [{ id: 'q1', name: 'sqlite', arguments: JSON.stringify({ operation: 'query', sql: 'SELECT count(*) FROM slow' }) }] },
    ]);
    const home = makeTempDir('quarry-home-');
    const child = spawnCli(['--base-url', server.url, '--model', 'm', '-w', dir, '--db', database, '--format', 'stream-json', 'count'], { env: cliEnv(home) });
    child.stdin?.end();
    const done = collect(child, 60_000);
    await waitForOutput(child, /"type":"tool_start"/);
    const sqlite = await childrenOf(child);
    expect(sqlite).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = Date.now();
    child.kill('SIGINT');
    const result = await done;
    console.log(`agent run: Ctrl+C to exit: ${Date.now() - started} ms`);
    expect(result.code).toBe(130);
    expect(Date.now() - started).toBeLessThan(STOP_MS);
    expect(sqlite.filter(alive)).toEqual([]);
    const [id] = readdirSync(join(home, 'sessions'));
    const meta = JSON.parse(readFileSync(join(home, 'sessions', id!, 'meta.json'), 'utf8')) as { status: string };
    expect(meta.status).toBe('cancelled');
  }, 60_000);
});

describe('the REPL', () => {
  it('Ctrl+C during a SQLite query cancels the turn at once and the prompt comes back', async () => {
    const home = makeTempDir('quarry-home-');
    const script = join(dir, 'repl-script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { text: 'Counting.', tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT count(*) FROM slow' } }] },
          { text: 'Second answer.' },
        ],
      }),
    );
    const started = Date.now();
    const result = await runOnPty(
      ['--model', `script:${script}`, '--db', database, '-w', dir],
      cliEnv(home),
      [
        { expect: 'quarry> ' },
        { send: 'count\r' },
        { expect: 'Counting\\.' },
        { sleep: 1.5 },
        { send: '\u0003' },
        { expect: 'cancelled' },
        { expect: 'quarry> ' },
        { send: '\u0004' },
      ],
      40,
    );
    console.log(`REPL: the whole exchange took ${Date.now() - started} ms`);
    expect(result.failed).toBeNull();
    expect(result.code).toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.transcript).not.toContain('Second answer');
  }, 60_000);
});
