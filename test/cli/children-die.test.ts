import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, collect, spawnCli, waitForOutput } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer } from '../support/fake-openai.js';
import { processesLeft, processesMatching } from '../support/processes.js';

/** What quarry started ends with it, even after kill -9 (src/backends/process-watchdog.ts). */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('kill -9 of quarry', () => {
  it.each(['developer', 'eval'])(
    'ends the unsandboxed bash commands of the %s profile, and what they started',
    async (profile) => {
      // A shell that starts a second sleep in the background, then waits on a first one.
      const marker = `sleep 41.${process.pid}${profile.length}`;
      server = await startOpenAIServer([
        { toolCalls: [{ id: 'b1', name: 'bash', arguments: JSON.stringify({ command: `(${marker}1 &) ; ${marker}2; echo never` }) }] },
      ]);
      const home = makeTempDir('quarry-home-');
      const work = makeTempDir('quarry-work-');
      const child = spawnCli(['--base-url', server.url, '--model', 'm', '-w', work, '--profile', profile, '--yes', '--format', 'stream-json', 'go'], {
        env: cliEnv(home, { QUARRY_NO_BWRAP: '1' }),
      });
      child.stdin?.end();
      const done = collect(child, 60_000);
      await waitForOutput(child, /"type":"tool_start"/);
      // The two sleeps themselves (the shells' command lines hold the marker too, not at the start).
      const sleeps = `^${marker}`;
      for (let i = 0; i < 100 && processesMatching(sleeps).length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(processesMatching(sleeps)).toHaveLength(2);
      child.kill('SIGKILL');
      await done;
      expect(await processesLeft(marker, 2000)).toEqual([]);
    },
    60_000,
  );
});

describe('kill -9 of quarry during a SQLite statement', () => {
  it('ends the SQLite process, which was busy in one long native step', async () => {
    const dir = makeTempDir();
    const database = join(dir, 'slow.db');
    execFileSync('sqlite3', [database, 'CREATE TABLE t(x)']);
    const home = makeTempDir('quarry-home-');
    const sql = 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000000000) SELECT count(*) FROM c';
    const child = spawnCli(['tool', 'sqlite', '--db', database, '--args', JSON.stringify({ operation: 'query', sql })], { env: cliEnv(home) });
    child.stdin?.end();
    const done = collect(child, 60_000);
    const marker = `^${process.execPath} .*sqlite-child`;
    let sqlite: string[] = [];
    for (let i = 0; i < 100 && sqlite.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      sqlite = processesMatching(marker).filter((pid) => parentOf(pid) === child.pid);
    }
    expect(sqlite).toHaveLength(1);
    child.kill('SIGKILL');
    await done;
    const until = Date.now() + 2000;
    while (existsSync(`/proc/${sqlite[0]}`) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(`/proc/${sqlite[0]}`)).toBe(false);
  }, 60_000);
});

function parentOf(pid: string): number {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  } catch {
    return 0;
  }
}
