import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';
import { cliEnv, collect, runCli, spawnCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer } from '../support/fake-openai.js';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { seededRandom, testSeed } from '../support/random.js';
import { unmarked, withoutMarkingNote } from '../support/marking.js';

/**
 * Sessions under faults: resuming under exactly the session's profile (with its model and
 * databases), one process per session (a lock), `kill -9` at any point of a run with parallel
 * calls and an export, and a torn last trace line. Real CLI processes, real SQLite files; the
 * only fake is the model (the scripted provider, or a loopback server speaking OpenAI's protocol).
 */

let server: FakeServer | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await server?.close();
  server = undefined;
});

type TraceLine = { type: string; [key: string]: unknown };
type ToolMessage = { role: 'tool'; toolCallId: string; name: string; content: string; isError?: boolean };
type ChatMessage = { role: string; content?: string | null; tool_call_id?: string; tool_calls?: { id: string; function: { name: string } }[] };

function sessionIds(home: string): string[] {
  const dir = join(home, 'sessions');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

function traceText(home: string, id: string): string {
  return readFileSync(join(home, 'sessions', id, 'trace.jsonl'), 'utf8');
}

/** The trace so far ('' while the session is being created). */
function traceSoFar(home: string, id: string): string {
  try {
    return traceText(home, id);
  } catch {
    return '';
  }
}

function refusals(trace: TraceLine[]): string[] {
  return trace.filter((e) => e.type === 'message' && (e.message as ToolMessage).role === 'tool').map((e) => (e.message as ToolMessage).content);
}

/** Every line of the trace is one JSON object and the file ends with a newline. */
function validTrace(home: string, id: string): TraceLine[] {
  const text = traceText(home, id);
  if (text !== '') expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as TraceLine);
}

function meta(home: string, id: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(home, 'sessions', id, 'meta.json'), 'utf8')) as Record<string, unknown>;
}

function writeScript(dir: string, name: string, turns: unknown[]): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({ turns }));
  return path;
}

function makeDb(path: string): void {
  const db = new Database(path);
  db.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'one'), (2, 'two');");
  db.close();
}

function rowCount(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS c FROM t').get() as { c: number }).c;
  } finally {
    db.close();
  }
}

function csvLines(path: string): number {
  return readFileSync(path, 'utf8').split(/\r?\n/).filter(Boolean).length;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 15_000, everyMs = 5): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

describe("resume keeps the session's profile, model and databases", () => {
  it('a DELETE refused under sandbox.yaml (eval with database: readonly) is refused again by --resume latest, and the row stays', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const db = join(work, 'data.db');
    makeDb(db);
    // A user's copy of eval.yaml that keeps databases read-only; its name: is still "eval".
    const evalText = readFileSync(join(REPO_ROOT, 'profiles', 'eval.yaml'), 'utf8');
    expect(evalText).toMatch(/^name: eval$/m);
    writeFileSync(join(work, 'sandbox.yaml'), evalText.replace(/^database: mutations$/m, 'database: readonly'));
    const script = writeScript(work, 'delete.json', [
      { tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: 'DELETE FROM t WHERE id = 1' } }] },
      { text: 'done' },
    ]);
    const env = cliEnv(home);
    const first = await runCli(['-p', './sandbox.yaml', '--db', 'data.db', '-m', `script:${script}`, '--format', 'json', 'delete row 1'], { env, cwd: work });
    expect(first.code).toBe(0);
    const [id] = sessionIds(home);
    expect(refusals(validTrace(home, id!))).toEqual([expect.stringMatching(/refused: DELETE statements are not allowed in read-only mode/)]);
    expect(rowCount(db)).toBe(2);

    // The scenario as reported: the same model and database named again, the profile not.
    const withFlags = await runCli(['--resume', 'latest', '--db', 'data.db', '-m', `script:${script}`, '--format', 'json', 'try again'], { env, cwd: work });
    expect(withFlags.code).toBe(0);
    expect(rowCount(db)).toBe(2);
    // From another directory and with no flags at all: the model, the database and the profile come back.
    const resumed = await runCli(['--resume', 'latest', '--format', 'json', 'try again'], { env, cwd: home });
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ session_id: id, status: 'completed', profile: 'eval' });
    expect(rowCount(db)).toBe(2);
    const trace = validTrace(home, id!);
    expect(refusals(trace)).toEqual(Array(3).fill(expect.stringMatching(/refused: DELETE statements are not allowed in read-only mode/)));
    expect(trace.filter((e) => e.type === 'tool_end').map((e) => e.ok)).toEqual([false, false, false]);
    expect(trace.filter((e) => e.type === 'run_start').map((e) => e.profile_source)).toEqual(Array(3).fill(join(work, 'sandbox.yaml')));
    expect(meta(home, id!)).toMatchObject({
      profile: 'eval',
      profile_source: join(work, 'sandbox.yaml'),
      profile_content: { database: 'readonly', approval: { mode: 'none' } },
    });
    expect(existsSync(join(home, 'sessions', id!, 'lock'))).toBe(false);
  });

  it('refuses (exit 2, nothing run) when the profile file changed or is gone; --profile continues under the one named, and says so', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const db = join(work, 'data.db');
    makeDb(db);
    // A user profile whose name: differs from its file name, chosen by name from $QUARRY_HOME/profiles.
    mkdirSync(join(home, 'profiles'));
    const profileFile = join(home, 'profiles', 'strict.yaml');
    writeFileSync(profileFile, 'name: careful-analyst\ndescription: read only, no approval\ndatabase: readonly\napproval:\n  mode: none\n');
    const script = writeScript(work, 'delete.json', [
      { tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: 'DELETE FROM t' } }] },
      { text: 'done' },
    ]);
    const env = cliEnv(home);
    const first = await runCli(['-p', 'strict', '--db', db, '-m', `script:${script}`, 'go'], { env, cwd: work });
    expect(first.code).toBe(0);
    const [id] = sessionIds(home);
    expect(meta(home, id!)).toMatchObject({ profile: 'careful-analyst', profile_ref: profileFile });
    const again = await runCli(['--resume', id!, 'go on'], { env, cwd: work });
    expect(again.code).toBe(0);
    expect(rowCount(db)).toBe(2);

    writeFileSync(profileFile, 'name: careful-analyst\ndescription: read only, no approval\ndatabase: mutations\napproval:\n  mode: none\n');
    const before = traceText(home, id!);
    const changed = await runCli(['--resume', 'latest', 'go on'], { env, cwd: work });
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(
      /^quarry: session \S+ ran under profile careful-analyst from .*strict\.yaml, which has changed since \(database: "readonly" -> "mutations"\); restore it, or pass --profile/,
    );
    expect(changed.stderr.trim().split('\n')).toHaveLength(1);
    expect(traceText(home, id!)).toBe(before);
    expect(rowCount(db)).toBe(2);

    renameSync(profileFile, join(work, 'moved.yaml'));
    const gone = await runCli(['--resume', 'latest', 'go on'], { env, cwd: work });
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/ran under profile careful-analyst from .*strict\.yaml, which cannot be loaded now \(profile file not found: /);
    expect(traceText(home, id!)).toBe(before);

    // An explicit --profile is the user's choice: it is noted, recorded, and used from then on.
    const switched = await runCli(['--resume', 'latest', '-p', 'readonly', 'go on'], { env, cwd: work });
    expect(switched.code).toBe(0);
    expect(switched.stderr).toMatch(/continuing it under profile readonly \(built-in\) as --profile asks/);
    expect(meta(home, id!)).toMatchObject({ profile: 'readonly', profile_ref: 'readonly', profile_source: 'built-in' });
    expect(rowCount(db)).toBe(2);
    // QUARRY_PROFILE is a default for new sessions only.
    const envProfile = await runCli(['--resume', 'latest', 'go on'], { env: { ...env, QUARRY_PROFILE: 'eval' }, cwd: work });
    expect(envProfile.code).toBe(0);
    expect(meta(home, id!)).toMatchObject({ profile: 'readonly' });
    expect(rowCount(db)).toBe(2);
  });

  it('refuses a session saved without its profile settings, and one whose database now points elsewhere', async () => {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    makeDb(join(work, 'data.db'));
    const script = writeScript(work, 'answer.json', [{ text: 'ok' }, { text: 'ok' }]);
    const env = cliEnv(home);
    expect((await runCli(['-m', `script:${script}`, '-p', 'eval', 'go'], { env: { ...env, SQLITE_DB: 'data.db' }, cwd: work })).code).toBe(0);
    const [id] = sessionIds(home);
    expect(meta(home, id!)).toMatchObject({ databases: { targets: [{ alias: 'data', target: `sqlite ${join(work, 'data.db')}`, source: 'env SQLITE_DB' }] } });
    // The same variable read from another directory names another file.
    mkdirSync(join(work, 'sub'));
    makeDb(join(work, 'sub', 'data.db'));
    const moved = await runCli(['--resume', id!, 'go on'], { env: { ...env, SQLITE_DB: 'data.db' }, cwd: join(work, 'sub') });
    expect(moved.code).toBe(2);
    expect(moved.stderr).toMatch(
      /used database data \(sqlite .*data\.db, from env SQLITE_DB\), which is now sqlite .*sub\/data\.db; configure it as before, or pass --db/,
    );
    const missing = await runCli(['--resume', id!, 'go on'], { env, cwd: work });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/which is not configured now/);
    expect((await runCli(['--resume', id!, 'go on'], { env: { ...env, SQLITE_DB: 'data.db' }, cwd: work })).code).toBe(0);

    // A session saved before the profile keys query_guard and profile_budget_seconds existed
    // resumes: their defaults only add checks.
    const path = join(home, 'sessions', id!, 'meta.json');
    const saved = meta(home, id!) as { profile_content: Record<string, unknown> };
    expect(saved.profile_content).toHaveProperty('query_guard');
    const { query_guard: _guard, profile_budget_seconds: _budget, ...before } = saved.profile_content;
    writeFileSync(path, JSON.stringify({ ...saved, profile_content: before }));
    expect((await runCli(['--resume', id!, 'go on'], { env: { ...env, SQLITE_DB: 'data.db' }, cwd: work })).code).toBe(0);

    // A session written before sessions kept their profile's settings: only its name is known.
    const { profile_content: _content, profile_ref: _ref, ...legacy } = meta(home, id!);
    writeFileSync(path, JSON.stringify(legacy));
    const old = await runCli(['--resume', id!, 'go on'], { env: { ...env, SQLITE_DB: 'data.db' }, cwd: work });
    expect(old.code).toBe(2);
    expect(old.stderr).toMatch(/was saved without its profile's settings \(only the name "eval"\).*pass --profile/);
  });
});

describe("resume keeps the session's system prompt", () => {
  it('a template with variables comes back without flags; new flags replace it', async () => {
    server = await startOpenAIServer(() => ({ text: 'ok' }));
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    writeFileSync(join(work, 'review.md'), '---\nvariables:\n  quarter:\n    required: true\n---\nYou review {{quarter}}.\n');
    writeFileSync(join(work, 'vars.yaml'), 'quarter: Q2\n');
    const env = cliEnv(home);
    const first = await runCli(['--base-url', server.url, '-m', 'm', '--system-prompt', 'review.md', '--vars-file', 'vars.yaml', 'go'], { env, cwd: work });
    expect(first.code).toBe(0);
    const again = await runCli(['--resume', 'latest', 'go on'], { env, cwd: home });
    expect(again.code).toBe(0);
    const systemOf = (index: number) => withoutMarkingNote((server!.requests[index]!.body.messages as ChatMessage[])[0]!.content ?? '').trim();
    expect(systemOf(1)).toBe('You review Q2.');
    const replaced = await runCli(['--resume', 'latest', '--system-prompt', join(work, 'review.md'), '--var', 'quarter=Q3', 'and Q3?'], { env, cwd: home });
    expect(replaced.code).toBe(0);
    expect(systemOf(2)).toBe('You review Q3.');
    const sessions = sessionIds(home);
    expect(sessions).toHaveLength(1);
    expect(meta(home, sessions[0]!)).toMatchObject({ prompt: { system_prompt: join(work, 'review.md'), vars: ['quarter=Q3'] } });
  });
});

describe('one process per session', () => {
  it.each([
    ['free', false],
    ['left locked by a process that died', true],
  ])('of four processes resuming one session (%s) at once exactly one runs; the others exit 2 and write nothing', async (_label, stale) => {
    server = await startOpenAIServer((request) =>
      JSON.stringify(request.body).includes('second question') ? { text: 'Working', hang: true } : { text: 'first answer' },
    );
    const home = makeTempDir('quarry-home-');
    const env = cliEnv(home);
    const url = server.url;
    const first = await runCli(['--base-url', url, '-m', 'm', 'first question'], { env });
    expect(first.code).toBe(0);
    const [id] = sessionIds(home);
    const before = validTrace(home, id!).length;
    if (stale) {
      // A lock naming a process that has exited: all four find it stale at once, one takes it over.
      const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
      writeFileSync(join(home, 'sessions', id!, 'lock'), JSON.stringify({ pid: Number(dead), host: hostname(), nonce: 'dead', at: new Date().toISOString() }));
    }
    const racers = Array.from({ length: 4 }, () => {
      const child = spawnCli(['--resume', id!, '--base-url', url, '-m', 'm', '--format', 'stream-json', 'second question'], { env });
      children.push(child);
      child.stdin?.end();
      return { child, done: collect(child, 30_000) };
    });
    // The losers finish on their own; the winner waits on the model until it is cancelled.
    const losers = await waitFor(
      'three refusals',
      () => {
        const finished = racers.filter((r) => r.child.exitCode !== null);
        return finished.length >= 3 ? finished : undefined;
      },
      20_000,
      20,
    );
    expect(losers).toHaveLength(3);
    for (const loser of losers) {
      const result = await loser.done;
      expect(result.code).toBe(2);
      // A loser that looks while the winner is still taking the stale lock over sees it "being opened".
      expect(result.stderr).toMatch(
        /^quarry: session \S+ is (running in process \d+; wait for it or stop it with quarry cancel \S+|open in process \d+ \(a REPL, or a run starting up\); try again once that quarry has exited|being opened by another process; try again in a moment)\n$/,
      );
    }
    const winner = racers.find((r) => !losers.includes(r))!;
    await waitFor("the winner's model call", () => (server!.requests.length >= 2 ? true : undefined));
    const cancel = await runCli(['cancel', id!], { env });
    expect(cancel.code).toBe(0);
    expect((await winner.done).code).toBe(130);
    expect(server.requests).toHaveLength(2);
    const trace = validTrace(home, id!);
    expect(trace.filter((e) => e.type === 'run_start')).toHaveLength(2);
    expect(
      trace
        .slice(before)
        .filter((e) => e.type === 'message')
        .map((e) => (e.message as { content: string }).content),
    ).toEqual(['second question']);
    expect(meta(home, id!)).toMatchObject({ status: 'cancelled', runs: 2 });
    expect(readdirSync(join(home, 'sessions', id!)).filter((name) => name.startsWith('lock'))).toEqual([]);
  });

  it('a run killed with -9 shows as interrupted, not running, and is resumed (its stale lock taken over); so are its delegated children', async () => {
    // The child (whose request carries the delegated instruction) hangs, so the parent is killed mid-delegate.
    server = await startOpenAIServer((request, index) => {
      const body = JSON.stringify(request.body);
      if (index === 0) return { toolCalls: [{ id: 'd1', name: 'delegate', arguments: '{"instruction":"look at the notes"}' }] };
      if (body.includes('look at the notes') && !body.includes('carry on')) return { text: 'Looking', hang: true };
      return { text: 'resumed fine' };
    });
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const env = cliEnv(home);
    const run = spawnCli(['--base-url', server.url, '-m', 'm', '-w', work, '-p', 'developer', '--yes', 'go'], { env });
    children.push(run);
    run.stdin?.end();
    const done = collect(run, 30_000);
    await waitFor("the child's model call", () => (server!.requests.length >= 2 ? true : undefined));
    const [id] = sessionIds(home);
    expect(existsSync(join(home, 'sessions', id!, 'lock'))).toBe(true);
    run.kill('SIGKILL');
    const killed = await done;
    expect(killed.code).toBeNull();
    // Still "running" on disk, but its process is gone.
    expect(meta(home, id!).status).toBe('running');
    const list = await runCli(['sessions'], { env });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id} +interrupted `));
    const show = await runCli(['sessions', 'show', id!], { env });
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/status interrupted,/);
    expect(show.stdout).toMatch(/delegated \S+: interrupted, look at the notes/);
    const exported = JSON.parse((await runCli(['sessions', 'export', id!], { env })).stdout) as { meta: { status: string }; children: { status: string }[] };
    expect(exported.meta.status).toBe('interrupted');
    expect(exported.children.map((c) => c.status)).toEqual(['interrupted']);
    const cancel = await runCli(['cancel', id!], { env });
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(/is not running \(status: interrupted\); its process \(\d+\) is gone/);

    const resumed = await runCli(['--resume', id!, '--base-url', server.url, '-m', 'm', '--format', 'json', 'carry on'], { env });
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'completed', text: 'resumed fine' });
    const trace = validTrace(home, id!);
    const runEvents = trace.filter((e) => e.type === 'run_start' || e.type === 'run_end').map((e) => `${e.type}:${String(e.status ?? '')}`);
    expect(runEvents).toEqual(['run_start:', 'run_end:interrupted', 'run_start:', 'run_end:completed']);
    // The delegate call was under way: the model is told so, not that it never ran.
    const lastRequest = server.requests.at(-1)!.body.messages as ChatMessage[];
    const delegateResult = lastRequest.find((m) => m.role === 'tool' && m.tool_call_id === 'd1');
    expect(unmarked(delegateResult?.content)).toMatch(/^interrupted: the session ended while this call was running; it may or may not have taken effect/);
    const childId = readdirSync(join(home, 'sessions', id!, 'children'))[0]!;
    const childDir = join(home, 'sessions', id!, 'children', childId);
    expect(JSON.parse(readFileSync(join(childDir, 'meta.json'), 'utf8'))).toMatchObject({ status: 'interrupted' });
    expect(
      readFileSync(join(childDir, 'trace.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as TraceLine)
        .at(-1),
    ).toMatchObject({ type: 'run_end', status: 'interrupted' });
    expect(existsSync(join(home, 'sessions', id!, 'lock'))).toBe(false);
    expect(readdirSync(join(home, 'sessions', id!)).filter((name) => name.startsWith('lock'))).toEqual([]);
  });
});

describe('crash and resume', () => {
  /** A database with a table big enough for an export that takes a while, and a slow query. */
  function crashWorkspace() {
    const home = makeTempDir('quarry-home-');
    const work = makeTempDir('quarry-work-');
    const db = new Database(join(work, 'data.db'));
    db.exec('CREATE TABLE big(id INTEGER PRIMARY KEY, v TEXT)');
    db.exec('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 60000) INSERT INTO big SELECT x, printf(\'row %d, "quoted"\', x) FROM c');
    db.close();
    writeFileSync(
      join(work, 'analyst.yaml'),
      'name: analyst\ndescription: read-only databases, exports allowed, no approval\nfile_write: create-only\ndatabase: readonly\napproval:\n  mode: none\n',
    );
    return { home, work, env: cliEnv(home) };
  }
  const slowSql = (n: number) => `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${n}) SELECT count(*) AS n FROM c`;

  it('the model is told that an export which finished did finish, and that a query cut off was interrupted (kill -9 mid-message)', async () => {
    const { home, work, env } = crashWorkspace();
    const script = writeScript(work, 'run.json', [
      {
        tool_calls: [
          { name: 'sqlite', arguments: { operation: 'export_query', sql: 'SELECT * FROM big', output_path: 'big.csv' } },
          { name: 'sqlite', arguments: { operation: 'query', sql: slowSql(200_000_000) } },
        ],
      },
      { text: 'never reached' },
    ]);
    const run = spawnCli(['-p', join(work, 'analyst.yaml'), '--db', join(work, 'data.db'), '-w', work, '-m', `script:${script}`, 'export and count'], { env });
    children.push(run);
    run.stdin?.end();
    const done = collect(run, 60_000);
    const id = await waitFor('the session', () => sessionIds(home)[0]);
    await waitFor('the slow query to start', () => (traceSoFar(home, id).includes('"type":"tool_start","id":"script_1_2"') ? true : undefined), 30_000);
    run.kill('SIGKILL');
    expect((await done).code).toBeNull();
    expect(csvLines(join(work, 'big.csv'))).toBe(60_001);

    server = await startOpenAIServer([{ text: 'The export is done: big.csv has 60,000 rows.' }]);
    // The same profile named again (a no-op now; it lets this test reach its point on older builds).
    const resumed = await runCli(['--resume', id, '-p', join(work, 'analyst.yaml'), '--base-url', server.url, '-m', 'm', 'is the export done?'], { env });
    expect(resumed.code).toBe(0);
    const sent = server.requests[0]!.body.messages as ChatMessage[];
    const exportResult = sent.find((m) => m.role === 'tool' && m.tool_call_id === 'script_1_1');
    expect(unmarked(exportResult?.content)).toMatch(/60,?000 rows/);
    expect(unmarked(exportResult?.content)).not.toMatch(/not run|interrupted/);
    const queryResult = sent.find((m) => m.role === 'tool' && m.tool_call_id === 'script_1_2');
    expect(unmarked(queryResult?.content)).toMatch(/^interrupted: /);
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user']);
    validTrace(home, id);
  });

  // Kill points come from a seeded generator: QUARRY_CRASH_SEED=N (or QUARRY_TEST_SEED=N) replays a failing run.
  const crashSeed = process.env.QUARRY_CRASH_SEED ? Number(process.env.QUARRY_CRASH_SEED) : testSeed(Math.floor(Date.now() % 2 ** 31));
  it(`kill -9 at random points (seed ${crashSeed}) of a run with parallel calls and an export, then resume: one result per call, finished calls known as finished, valid JSONL`, {
    timeout: 180_000,
  }, async () => {
    const { home, work, env } = crashWorkspace();
    const turns = [
      {
        tool_calls: [
          { name: 'sqlite', arguments: { operation: 'query', sql: slowSql(1_500_000) } },
          { name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT count(*) AS n FROM big' } },
          { name: 'read', arguments: { path: 'analyst.yaml' } },
          { name: 'sqlite', arguments: { operation: 'export_query', sql: 'SELECT * FROM big', output_path: 'OUT' } },
        ],
      },
      {
        tool_calls: [
          { name: 'sqlite', arguments: { operation: 'query', sql: slowSql(800_000) } },
          { name: 'list', arguments: { path: '.' } },
        ],
      },
      { text: 'All done.' },
    ];
    const seeds = Number(process.env.QUARRY_CRASH_RUNS ?? 6);
    const seed = crashSeed;
    const random = seededRandom(seed);
    onTestFailed(() => console.log(`kill -9 at random points: seed ${seed} (QUARRY_CRASH_SEED=${seed} replays it)`));
    const seen: string[] = [];
    for (let round = 0; round < seeds; round++) {
      const out = `export-${round}.csv`;
      const script = writeScript(work, `run-${round}.json`, JSON.parse(JSON.stringify(turns).replace('"OUT"', JSON.stringify(out))) as unknown[]);
      const known = new Set(sessionIds(home));
      const run = spawnCli(['-p', join(work, 'analyst.yaml'), '--db', join(work, 'data.db'), '-w', work, '-m', `script:${script}`, `round ${round}`], { env });
      children.push(run);
      run.stdin?.end();
      const done = collect(run, 60_000);
      const id = await waitFor('the session', () => sessionIds(home).find((candidate) => !known.has(candidate)));
      // A complete run writes about 30 events; stop after a random number of them, plus a random delay.
      const stopAfter = 1 + Math.floor(random() * 30);
      await waitFor('trace events', () => (traceSoFar(home, id).split('\n').length - 1 >= stopAfter || run.exitCode !== null ? true : undefined), 30_000, 1);
      await sleep(Math.floor(random() * 40));
      run.kill('SIGKILL');
      const killed = await done;
      expect(killed.code === null || killed.code === 0).toBe(true);
      const before = validTrace(home, id);
      seen.push(`${stopAfter}:${before.length}:${before.at(-1)?.type}`);

      server = await startOpenAIServer(() => ({ text: 'resumed' }));
      const resumed = await runCli(
        ['--resume', id, '-p', join(work, 'analyst.yaml'), '--base-url', server.url, '-m', 'm', '--format', 'json', 'what happened?'],
        { env },
      );
      expect(resumed.code, resumed.stderr).toBe(0);
      const sent = server.requests[0]!.body.messages as ChatMessage[];
      await server.close();
      server = undefined;

      // The conversation: every assistant call answered exactly once, in call order, right after it.
      for (const [index, message] of sent.entries()) {
        if (message.role !== 'assistant' || !message.tool_calls?.length) continue;
        const results = sent.slice(index + 1, index + 1 + message.tool_calls.length);
        expect(results.map((r) => [r.role, r.tool_call_id])).toEqual(message.tool_calls.map((call) => ['tool', call.id]));
      }
      expect(sent.filter((m) => m.role === 'tool').length).toBe(
        sent.filter((m) => m.role === 'assistant').reduce((n, m) => n + (m.tool_calls?.length ?? 0), 0),
      );
      expect(sent.at(-1)).toEqual({ role: 'user', content: 'what happened?' });
      // What the trace says finished is told as finished, with the output it had.
      const finished = new Map(
        before
          .filter((e) => e.type === 'message' && (e.message as ToolMessage).role === 'tool')
          .map((e) => [(e.message as ToolMessage).toolCallId, (e.message as ToolMessage).content]),
      );
      const started = new Set(before.filter((e) => e.type === 'tool_start').map((e) => e.id as string));
      for (const message of sent.filter((m) => m.role === 'tool')) {
        const id = message.tool_call_id as string;
        if (finished.has(id)) expect(unmarked(message.content)).toBe(finished.get(id));
        else if (started.has(id)) expect(unmarked(message.content)).toMatch(/^interrupted: /);
        else expect(unmarked(message.content)).toMatch(/^not run: /);
      }
      // The export (the first message's fourth call): told finished only if its file is complete.
      const exportEnd = before.find((e) => e.type === 'tool_end' && e.id === 'script_1_4');
      if (exportEnd?.ok) expect(csvLines(join(work, out))).toBe(60_001);
      if (!started.has('script_1_4')) expect(existsSync(join(work, out))).toBe(false);

      const after = validTrace(home, id);
      const runs = after.filter((e) => e.type === 'run_start' || e.type === 'run_end').map((e) => e.type);
      expect(runs).toEqual(['run_start', 'run_end', 'run_start', 'run_end']);
      const endedBefore = before.find((e) => e.type === 'run_end');
      expect(after.filter((e) => e.type === 'run_end').map((e) => e.status)).toEqual([endedBefore ? 'completed' : 'interrupted', 'completed']);
      expect(meta(home, id)).toMatchObject({ status: 'completed', runs: 2 });
      expect(existsSync(join(home, 'sessions', id, 'lock'))).toBe(false);
    }
    expect(seen).toHaveLength(seeds);
    if (process.env.QUARRY_CRASH_LOG) console.log(seen.join(' '));
  });
});

describe("a kill between the trace's run_end and meta.json", () => {
  it('shows the status the trace ended with, and resuming adds no second run_end', async () => {
    server = await startOpenAIServer(() => ({ text: 'answer' }));
    const home = makeTempDir('quarry-home-');
    const env = cliEnv(home);
    expect((await runCli(['--base-url', server.url, '-m', 'm', 'first'], { env })).code).toBe(0);
    const [id] = sessionIds(home);
    // What a kill -9 right after the run_end append leaves: meta.json still says running, for a process now gone.
    const gone = spawnSync('true').pid!;
    const path = join(home, 'sessions', id!, 'meta.json');
    writeFileSync(path, JSON.stringify({ ...meta(home, id!), status: 'running', pid: gone }));
    expect(validTrace(home, id!).filter((e) => e.type === 'run_end')).toHaveLength(1);
    const listed = await runCli(['sessions', '--format', 'json'], { env });
    expect((JSON.parse(listed.stdout) as { id: string; status: string }[]).map((session) => [session.id, session.status])).toEqual([[id, 'completed']]);
    const resumed = await runCli(['--resume', id!, '--base-url', server.url, '-m', 'm', 'second'], { env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const runs = validTrace(home, id!)
      .filter((e) => e.type === 'run_start' || e.type === 'run_end')
      .map((e) => `${e.type}${e.status ? `:${String(e.status)}` : ''}`);
    expect(runs).toEqual(['run_start', 'run_end:completed', 'run_start', 'run_end:completed']);
    expect(meta(home, id!)).toMatchObject({ status: 'completed', runs: 2 });
  });
});

describe('a torn trace line', () => {
  async function oneSession() {
    server = await startOpenAIServer(() => ({ text: 'answer' }));
    const home = makeTempDir('quarry-home-');
    const env = cliEnv(home);
    expect((await runCli(['--base-url', server.url, '-m', 'm', 'first'], { env })).code).toBe(0);
    const [id] = sessionIds(home);
    return { home, env, id: id!, url: server.url };
  }

  it('is cut off when the session is resumed, so the next event starts on its own line; show and export cope with it', async () => {
    const { home, env, id, url } = await oneSession();
    const torn = '{"ts":"2026-01-01T00:00:00.000Z","type":"message","message":{"role":"assistant","content":"half a li';
    appendFileSync(join(home, 'sessions', id, 'trace.jsonl'), torn);
    const show = await runCli(['sessions', 'show', id], { env });
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/1 unreadable trace line skipped \(cut off while being written\): line \d+/);
    expect(show.stdout).toContain('assistant: answer');
    const exported = await runCli(['sessions', 'export', id], { env });
    expect(exported.code).toBe(0);
    const document = JSON.parse(exported.stdout) as { events: TraceLine[]; unreadable_lines: { line: number; bytes: number }[] };
    expect(document.unreadable_lines).toEqual([{ line: expect.any(Number), bytes: Buffer.byteLength(torn) }]);

    const resumed = await runCli(['--base-url', url, '-m', 'm', '--resume', id, 'second'], { env });
    expect(resumed.code).toBe(0);
    const trace = validTrace(home, id);
    expect(traceText(home, id)).not.toContain('half a li');
    expect(trace.filter((e) => e.type === 'trace_repaired')).toEqual([expect.objectContaining({ removed_bytes: Buffer.byteLength(torn) })]);
    expect(trace.filter((e) => e.type === 'run_start')).toHaveLength(2);
    expect((server!.requests.at(-1)!.body.messages as ChatMessage[]).map((m) => [m.role, m.content])).toEqual([
      ['system', expect.any(String)],
      ['user', 'first'],
      ['assistant', 'answer'],
      ['user', 'second'],
    ]);
  });

  it('keeps a last event that is whole but lacks its newline', async () => {
    const { home, env, id, url } = await oneSession();
    const whole = '{"ts":"2026-01-01T00:00:00.000Z","type":"error","message":"written without its newline"}';
    appendFileSync(join(home, 'sessions', id, 'trace.jsonl'), whole);
    const resumed = await runCli(['--base-url', url, '-m', 'm', '--resume', id, 'second'], { env });
    expect(resumed.code).toBe(0);
    const trace = validTrace(home, id);
    expect(trace.filter((e) => e.type === 'error').map((e) => e.message)).toEqual(['written without its newline']);
    expect(trace.filter((e) => e.type === 'trace_repaired')).toEqual([]);
  });

  /** A private mount namespace (unshare, as a mapped root user) where a small tmpfs can fill up. */
  const canMountTmpfs =
    spawnSync('unshare', ['-m', '-r', 'sh', '-c', 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d" && umount "$d" && rmdir "$d"']).status === 0;

  it.skipIf(!canMountTmpfs)(
    'a disk that fills mid-run: exit 1 with a one-line error, the trace stays valid JSONL, and the session resumes once there is room',
    async () => {
      const home = makeTempDir('quarry-home-');
      const work = makeTempDir('quarry-work-');
      for (let i = 0; i < 8; i++) writeFileSync(join(work, `big${i}.txt`), `${'x'.repeat(100)}\n`.repeat(3000));
      const script = writeScript(work, 'reads.json', [
        ...Array.from({ length: 8 }, (_, i) => ({ tool_calls: [{ name: 'read', arguments: { path: `big${i}.txt` } }] })),
        { text: 'done' },
      ]);
      const answer = writeScript(work, 'answer.json', [{ text: 'resumed after the disk filled' }]);
      const cli = join(REPO_ROOT, 'dist', 'cli.cjs');
      const q = (value: string) => `'${value.replace(/'/g, "'\\''")}'`;
      // 160 KB of session space: the third 53 KB tool result does not fit.
      const shell = [
        `mount -t tmpfs -o size=160k tmpfs ${q(home)}`,
        `${q(process.execPath)} ${q(cli)} -m script:${q(script)} -w ${q(work)} go 2>${q(join(work, 'first.err'))}; echo "first=$?"`,
        `cp -r ${q(join(home, 'sessions'))} ${q(join(work, 'after-first'))}`,
        `mount -o remount,size=16m ${q(home)}`,
        `${q(process.execPath)} ${q(cli)} --resume latest -m script:${q(answer)} --format json 'go on'; echo "second=$?"`,
        `cp -r ${q(join(home, 'sessions'))} ${q(join(work, 'after-second'))}`,
      ].join('; ');
      const result = spawnSync('unshare', ['-m', '-r', 'sh', '-c', shell], { encoding: 'utf8', env: cliEnv(home) as NodeJS.ProcessEnv, timeout: 60_000 });
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/^first=1$/m);
      expect(result.stdout).toMatch(/^second=0$/m);
      const firstErr = readFileSync(join(work, 'first.err'), 'utf8');
      expect(firstErr).toMatch(/^quarry: internal error: cannot write the session trace \S+trace\.jsonl: ENOSPC$/m);
      expect(firstErr).not.toMatch(/\n\s+at /);
      const [id] = readdirSync(join(work, 'after-first'));
      const firstTrace = readFileSync(join(work, 'after-first', id!, 'trace.jsonl'), 'utf8');
      expect(firstTrace.endsWith('\n')).toBe(true);
      const firstEvents = firstTrace
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as TraceLine);
      expect(firstEvents.at(-1)).toMatchObject({ type: 'run_end', status: 'failed' });
      const secondEvents = readFileSync(join(work, 'after-second', id!, 'trace.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as TraceLine);
      expect(secondEvents.filter((e) => e.type === 'run_start')).toHaveLength(2);
      expect(secondEvents.at(-1)).toMatchObject({ type: 'run_end', status: 'completed' });
      expect(JSON.parse(readFileSync(join(work, 'after-second', id!, 'meta.json'), 'utf8'))).toMatchObject({ status: 'completed', runs: 2 });
    },
  );
});
