import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, collect, runCli, spawnCli, waitForOutput } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer, type ReplySource } from '../support/fake-openai.js';

/** Ctrl+C (SIGINT) and `quarry cancel ID` stop a run: exit 130, session saved, every call answered. */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(replies: ReplySource, extraArgs: string[] = []) {
  server = await startOpenAIServer(replies);
  const home = makeTempDir('quarry-home-');
  const work = makeTempDir('quarry-work-');
  const env = cliEnv(home);
  const child = spawnCli(['--base-url', server.url, '--model', 'm', '-w', work, '--format', 'stream-json', ...extraArgs, 'go'], { env });
  child.stdin?.end();
  return { home, work, env, child, done: collect(child) };
}

function onlySession(home: string): { meta: Record<string, unknown>; trace: Record<string, unknown>[] } {
  const [id] = readdirSync(join(home, 'sessions'));
  const dir = join(home, 'sessions', id as string);
  return {
    meta: JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Record<string, unknown>,
    trace: readFileSync(join(dir, 'trace.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('cancelling a run', () => {
  it('SIGINT while the model is streaming aborts the stream, saves the session and exits 130', async () => {
    const run = await start(() => ({ text: 'Thinking about it', hang: true }));
    await waitForOutput(run.child, /"type":"text"/);
    const started = Date.now();
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(Date.now() - started).toBeLessThan(5000);
    const last = JSON.parse(result.stdout.trim().split('\n').at(-1) as string) as Record<string, unknown>;
    expect(last).toMatchObject({ type: 'result', status: 'cancelled' });
    const { meta, trace } = onlySession(run.home);
    expect(meta.status).toBe('cancelled');
    expect(trace.at(-1)).toMatchObject({ type: 'run_end', status: 'cancelled' });
    // The half-streamed answer is not kept as an assistant message.
    expect(trace.filter((event) => event.type === 'message').map((event) => (event.message as { role: string }).role)).toEqual(['user']);
  });

  it('quarry cancel ID stops a run going on in another process', async () => {
    const run = await start(() => ({ text: 'Working', hang: true }));
    await waitForOutput(run.child, /"type":"text"/);
    const cancel = await runCli(['cancel', 'latest'], { env: run.env });
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toMatch(/: cancelled/);
    expect(onlySession(run.home).meta.status).toBe('cancelled');
    const again = await runCli(['cancel', 'latest'], { env: run.env });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is not running \(status: cancelled\)/);
  });
});
