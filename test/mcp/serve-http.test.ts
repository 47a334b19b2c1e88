import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hostAllowed, isLoopbackHost, originAllowed, parseHttpBind } from '../../src/mcp/http.js';
import { cliEnv, collect, mcpServingUrl, runCli, spawnCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';

/**
 * `quarry mcp --http`: Streamable HTTP with the SDK's client, a bearer token off loopback,
 * Origin and Host checks (DNS-rebinding protection), and a clean exit on SIGTERM.
 */

let home: string;
let work: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  home = makeTempDir('quarry-mcp-http-home-');
  work = makeTempDir('quarry-mcp-http-work-');
  const db = new Database(join(work, 'shop.db'));
  db.exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items (name) VALUES ('apple'), ('pear');");
  db.close();
  writeFileSync(join(work, 'notes.txt'), 'served over http\n');
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Starts `quarry mcp --http HOST:0` and returns the URL it printed. */
async function startHttp(
  bind: string,
  extra: string[] = [],
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; done: ReturnType<typeof collect> }> {
  const child = spawnCli(['mcp', '-w', work, '--db', `shop=${join(work, 'shop.db')}`, '--http', bind, ...extra], { env: cliEnv(home, env) });
  children.push(child);
  const done = collect(child, 60_000);
  const url = await mcpServingUrl(child, 15_000);
  return { child, url, done };
}

async function post(url: string, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });
}

/** fetch may not set Host, so a rebound name is sent with node:http. */
function statusWithHost(url: string, host: string): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      { method: 'POST', headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

describe('quarry mcp --http', () => {
  it('serves tools to the SDK client over Streamable HTTP on loopback, and exits on SIGTERM', async () => {
    const { child, url, done } = await startHttp('127.0.0.1:0');
    const client = new Client({ name: 'http-test', version: '1' });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['bash', 'glob', 'grep', 'list', 'read', 'read_excel', 'sqlite']);
    const read = await client.callTool({ name: 'read', arguments: { path: 'notes.txt' } });
    expect((read.content as Array<{ text: string }>)[0]!.text).toContain('served over http');
    const refused = await client.callTool({ name: 'sqlite', arguments: { operation: 'query', sql: 'DELETE FROM items' } });
    expect(refused.isError).toBe(true);
    // A second, independent session works beside the first.
    const second = new Client({ name: 'http-test-2', version: '1' });
    await second.connect(new StreamableHTTPClientTransport(new URL(url)));
    const count = await second.callTool({ name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT count(*) AS n FROM items' } });
    expect((count.content as Array<{ text: string }>)[0]!.text).toMatch(/│ 2 +│/);
    await transport.terminateSession();
    await client.close();
    await second.close();
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(0);
  }, 60_000);

  it('refuses to start on a non-loopback address without a token (exit 2, nothing listening)', async () => {
    const result = await runCli(['mcp', '-w', work, '--http', '0.0.0.0:0'], { env: cliEnv(home, { QUARRY_MCP_TOKEN: '' }) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--token or QUARRY_MCP_TOKEN');
    expect(result.stderr).not.toMatch(/at .*\.js:\d+/);
  });

  it('with a token: requests without it or with a wrong one get 401; the right one connects', async () => {
    const { child, url, done } = await startHttp('0.0.0.0:0', [], { QUARRY_MCP_TOKEN: 's3cret-token' });
    const local = url.replace('0.0.0.0', '127.0.0.1');
    expect((await post(local, {})).status).toBe(401);
    expect((await post(local, { authorization: 'Bearer wrong' })).status).toBe(401);
    const client = new Client({ name: 'token-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(local), { requestInit: { headers: { authorization: 'Bearer s3cret-token' } } }));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  }, 60_000);

  it('rejects a foreign Origin and a rebound Host header (403), accepts loopback origins', async () => {
    const { child, url, done } = await startHttp('127.0.0.1:0');
    expect((await post(url, { origin: 'http://evil.example' })).status).toBe(403);
    expect(await statusWithHost(url, 'evil.example')).toBe(403);
    expect(await statusWithHost(url, 'localhost')).toBe(200);
    const ok = await post(url, { origin: 'http://localhost:3000' });
    expect(ok.status).toBe(200);
    expect((await fetch(url.replace('/mcp', '/other'), { method: 'POST', body: '{}' })).status).toBe(404);
    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  }, 60_000);

  it('caps the sessions and closes idle ones: a new session over the cap gets 503, and one after an idle session expired gets in', async () => {
    const { child, url, done } = await startHttp('127.0.0.1:0', [], { QUARRY_MCP_MAX_SESSIONS: '2', QUARRY_MCP_SESSION_IDLE_SECONDS: '2' });
    const first = await post(url, {});
    const second = await post(url, {});
    expect([first.status, second.status]).toEqual([200, 200]);
    const firstId = first.headers.get('mcp-session-id')!;
    expect(firstId).toMatch(/^[0-9a-f-]{36}$/);
    await Promise.all([first.body?.cancel(), second.body?.cancel()]);
    const third = await post(url, {});
    expect(third.status).toBe(503);
    expect(((await third.json()) as { error: { message: string } }).error.message).toContain('too many sessions (2, QUARRY_MCP_MAX_SESSIONS)');
    // Unused for longer than the idle time: both are closed, a new session starts, and the old ids are unknown.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const fourth = await post(url, {});
    expect(fourth.status).toBe(200);
    await fourth.body?.cancel();
    const late = await fetch(url, { method: 'GET', headers: { 'mcp-session-id': firstId, accept: 'text/event-stream' } });
    expect(late.status).toBe(404);
    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  });

  it('refuses a session setting that is not a whole number (exit 2, naming it)', async () => {
    const result = await runCli(['mcp', '-w', work, '--http', '127.0.0.1:0'], { env: cliEnv(home, { QUARRY_MCP_MAX_SESSIONS: 'lots' }) });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('QUARRY_MCP_MAX_SESSIONS must be a whole number of at least 1 (got "lots")');
  });
});

describe('flag and header parsing', () => {
  it('parses [HOST:]PORT', () => {
    expect(parseHttpBind('8765')).toEqual({ host: '127.0.0.1', port: 8765 });
    expect(parseHttpBind('0.0.0.0:80')).toEqual({ host: '0.0.0.0', port: 80 });
    expect(parseHttpBind('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(() => parseHttpBind('host:abc')).toThrow(/--http expects/);
    expect(() => parseHttpBind('70000')).toThrow(/--http expects/);
  });

  it('knows loopback, origins and hosts', () => {
    expect(['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost'].every(isLoopbackHost)).toBe(true);
    expect(['0.0.0.0', '10.0.0.1', 'example.com', '::'].some(isLoopbackHost)).toBe(false);
    expect(originAllowed(undefined, [])).toBe(true);
    expect(originAllowed('http://127.0.0.1:5173', [])).toBe(true);
    expect(originAllowed('https://app.example', [])).toBe(false);
    expect(originAllowed('https://app.example', ['https://app.example'])).toBe(true);
    expect(originAllowed('null', [])).toBe(false);
    expect(hostAllowed('localhost:8765', { host: '127.0.0.1', port: 8765 })).toBe(true);
    expect(hostAllowed('attacker.example:8765', { host: '127.0.0.1', port: 8765 })).toBe(false);
    expect(hostAllowed(undefined, { host: '127.0.0.1', port: 8765 })).toBe(false);
    expect(hostAllowed('anything', { host: '0.0.0.0', port: 8765 })).toBe(true);
  });
});
