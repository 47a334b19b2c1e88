import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, collect, mcpServingUrl, spawnCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { childProcesses } from '../support/processes.js';

/**
 * quarry's own /proc/PID/environ and /proc/PID/cmdline (src/security/process-secrets.ts): another
 * process of the same user reading them sees `*` where API keys, passwords and URL passwords
 * were, while quarry keeps using the values and everything else stays readable.
 */

const KEY = 'sk-proc-secret-7431';
const PASSWORD = 'pg-pass-secret-9902';
const URL_PASSWORD = 'url-secret-5517';
const TOKEN = 'mcp-token-secret-2288';
const LC_SECRET = 'lc-token-secret-3141';

function readProc(pid: number, file: 'environ' | 'cmdline'): string {
  return readFileSync(`/proc/${pid}/${file}`, 'latin1');
}

describe.skipIf(process.platform !== 'linux')('secrets in /proc', () => {
  it('a running quarry shows its keys, passwords and --token as stars to other processes', async () => {
    const home = makeTempDir('quarry-proc-home-');
    const work = makeTempDir('quarry-proc-work-');
    const child = spawnCli(['mcp', '-w', work, '--db', `pg=postgres://bob:${URL_PASSWORD}@127.0.0.1:1/shop`, '--http', '127.0.0.1:0', '--token', TOKEN], {
      env: cliEnv(home, { OPENAI_API_KEY: KEY, PGPASSWORD: PASSWORD, QUARRY_PLAIN_SETTING: 'visible-1' }),
    });
    const done = collect(child, 60_000);
    // Serving: start-up (and the hiding, which comes first) is over.
    const url = await mcpServingUrl(child);
    const environ = readProc(child.pid!, 'environ').split('\0');
    const cmdline = readProc(child.pid!, 'cmdline').split('\0');
    expect(environ).toContain(`OPENAI_API_KEY=${'*'.repeat(KEY.length)}`);
    expect(environ).toContain(`PGPASSWORD=${'*'.repeat(PASSWORD.length)}`);
    expect(environ).toContain('QUARRY_PLAIN_SETTING=visible-1');
    expect(cmdline).toContain(`pg=postgres://bob:${'*'.repeat(URL_PASSWORD.length)}@127.0.0.1:1/shop`);
    expect(cmdline).toContain('*'.repeat(TOKEN.length));
    const all = [...environ, ...cmdline].join('\n');
    for (const secret of [KEY, PASSWORD, URL_PASSWORD, TOKEN]) expect(all).not.toContain(secret);
    // quarry itself still has the token: a request without it gets 401, one with it gets past.
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    expect((await fetch(url, { method: 'POST', headers, body: initialize })).status).toBe(401);
    const served = await fetch(url, { method: 'POST', headers: { ...headers, authorization: `Bearer ${TOKEN}` }, body: initialize });
    expect(served.status).toBe(200);
    await served.body?.cancel();
    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  });

  it('the SQLite process and the watchdogs quarry keeps beside it hold none of its secrets', async () => {
    const home = makeTempDir('quarry-proc-home-');
    const work = makeTempDir('quarry-proc-work-');
    const database = join(work, 'slow.db');
    execFileSync('sqlite3', [database, 'CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);']);
    const slow = 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000000000) SELECT max(i) FROM c';
    const child = spawnCli(['tool', 'sqlite', '--db', database, '-w', work, '--args', JSON.stringify({ operation: 'query', sql: slow })], {
      // ssh forwards every LC_* variable, and people pass tokens that way: only the locale categories are kept.
      env: cliEnv(home, {
        OPENAI_API_KEY: KEY,
        PGPASSWORD: PASSWORD,
        DATABASE_URL: `postgres://bob:${URL_PASSWORD}@db/shop`,
        LC_TOKEN: LC_SECRET,
        LC_TIME: 'C.UTF-8',
        TMPDIR: work,
      }),
    });
    const done = collect(child, 60_000);
    // quarry's children: the SQLite process and its watchdog `sh` (both in process groups of their own).
    const found = await childProcesses(child.pid!, /sqlite-child|quarry-watchdog/, 2);
    expect(found.map((entry) => (/sqlite-child/.test(entry.args) ? 'sqlite' : 'watchdog')).sort()).toEqual(['sqlite', 'watchdog']);
    for (const { pid, args } of found) {
      const environ = readProc(pid, 'environ').split('\0');
      const all = [...environ, ...readProc(pid, 'cmdline').split('\0')].join('\n');
      for (const secret of [KEY, PASSWORD, URL_PASSWORD, LC_SECRET]) expect(all, args).not.toContain(secret);
      for (const name of ['OPENAI_API_KEY', 'PGPASSWORD', 'DATABASE_URL', 'LC_TOKEN'])
        expect(
          environ.some((entry) => entry.startsWith(`${name}=`)),
          args,
        ).toBe(false);
      // The SQLite process keeps what SQLite and Node use (its temporary directory).
      if (/sqlite-child/.test(args)) expect(environ).toEqual(expect.arrayContaining([`TMPDIR=${work}`, 'LC_TIME=C.UTF-8']));
    }
    child.kill('SIGINT');
    expect((await done).code).toBe(130);
  }, 60_000);
});
