import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { processesMatching } from '../support/processes.js';
import { cliEnv, collect, runCli, spawnCli, waitForOutput } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer, type ReplySource } from '../support/fake-openai.js';

/** Ctrl+C (SIGINT) and `quarry cancel ID` stop a run: exit 130, session saved, every call answered. */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(replies: ReplySource, extraArgs: (work: string) => string[] = () => []) {
  server = await startOpenAIServer(replies);
  const home = makeTempDir('quarry-home-');
  const work = makeTempDir('quarry-work-');
  const env = cliEnv(home);
  const child = spawnCli(['--base-url', server.url, '--model', 'm', '-w', work, '--format', 'stream-json', ...extraArgs(work), 'go'], { env });
  child.stdin?.end();
  return { home, work, env, child, done: collect(child) };
}

function onlySession(home: string): { meta: Record<string, unknown>; trace: Record<string, unknown>[] } {
  const [id] = readdirSync(join(home, 'sessions'));
  const dir = join(home, 'sessions', id as string);
  return {
    meta: JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Record<string, unknown>,
    trace: readFileSync(join(dir, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describe('cancelling a run', () => {
  it('SIGINT during a running bash sleep kills its process group and answers every call (exit 130)', async () => {
    const marker = `sleep 37.${process.pid}`;
    const run = await start(
      [
        {
          toolCalls: [
            { id: 's1', name: 'bash', arguments: JSON.stringify({ command: `${marker}; echo never` }) },
            { id: 's2', name: 'bash', arguments: '{"command":"echo second"}' },
          ],
        },
      ],
      (work) => {
        const profile = join(work, 'shell.yaml');
        writeFileSync(profile, 'name: shell\ndescription: unrestricted shell, no approval\nshell: unrestricted\napproval:\n  mode: none\n');
        return ['--profile', profile];
      },
    );
    await waitForOutput(run.child, /"type":"tool_start"/);
    for (let i = 0; i < 50 && processesMatching(marker).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(processesMatching(marker).length).toBeGreaterThan(0);
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(processesMatching(marker)).toEqual([]);
    const { meta, trace } = onlySession(run.home);
    expect(meta.status).toBe('cancelled');
    const results = trace
      .filter((e) => e.type === 'message' && (e.message as { role: string }).role === 'tool')
      .map((e) => e.message as { toolCallId: string; content: string; isError?: boolean });
    expect(results.map((r) => r.toolCallId)).toEqual(['s1', 's2']);
    expect(results.every((r) => r.isError === true)).toBe(true);
    expect(results[1]?.content).toMatch(/cancelled/);
    expect(results[0]?.content).not.toMatch(/never/);
    expect(trace.at(-1)).toMatchObject({ type: 'run_end', status: 'cancelled' });
  });

  it('SIGINT while the model is streaming aborts the stream, saves the session and exits 130', async () => {
    const run = await start(() => ({ text: 'Thinking about it', hang: true }));
    await waitForOutput(run.child, /"type":"text"/);
    const started = Date.now();
    run.child.kill('SIGINT');
    const result = await run.done;
    expect(result.code).toBe(130);
    expect(Date.now() - started).toBeLessThan(15_000); // a hang never ends
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
    const clash = await runCli(['--model', 'm', '--base-url', server?.url ?? '', '--resume', 'latest', 'hi'], { env: run.env });
    expect(clash.code).toBe(2);
    expect(clash.stderr).toMatch(/is running in process \d+; wait for it or stop it with quarry cancel/);
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
