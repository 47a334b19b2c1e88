import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesMatching } from '../../support/processes.js';
import { approvalReason } from '../../../src/agent/approval.js';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { openWorkspace } from '../../../src/agent/workspace.js';
import type { McpServerConfig } from '../../../src/config/mcp-servers.js';
import { startMcpServers, type McpServers } from '../../../src/tools/mcp/servers.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { parseProfile } from '../../../src/profiles/schema.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { IMAGE_BYTES, startMcpHttpServer, type McpHttpServer } from '../../support/mcp-http-server.js';

const FILESYSTEM_SERVER = join(import.meta.dirname, '..', '..', '..', 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

/** Processes whose command line contains `marker` (a unique temp path), from ps. */

function stdio(name: string, command: string[], extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return {
    name,
    type: 'stdio',
    command,
    env: {},
    cwd: undefined,
    startupTimeoutMs: 10_000,
    toolTimeoutMs: 60_000,
    allowOutward: false,
    ...extra,
  } as McpServerConfig;
}

describe('MCP servers: a real stdio server from npm, an HTTP server, and broken ones', () => {
  let dataDir: string;
  let http: McpHttpServer;
  let servers: McpServers;
  const warnings: string[] = [];
  let startMs = 0;

  beforeAll(async () => {
    dataDir = makeTempDir('quarry-mcp-data-');
    writeFileSync(join(dataDir, 'notes.txt'), 'quarterly revenue: 42\nsecond line\n');
    http = await startMcpHttpServer();
    const started = performance.now();
    servers = await startMcpServers(
      [
        stdio('fs', ['node', FILESYSTEM_SERVER, dataDir]),
        {
          name: 'my-http',
          type: 'http',
          url: http.url,
          headers: { Authorization: 'Bearer test-token' },
          startupTimeoutMs: 10_000,
          toolTimeoutMs: 1000,
          allowOutward: false,
        },
        stdio('broken', ['quarry-no-such-mcp-server-xyz']),
        // Starts but never speaks MCP: must be given up after its startup timeout.
        stdio('silent', ['node', '-e', 'setInterval(() => {}, 1000)', dataDir], { startupTimeoutMs: 1000 }),
      ],
      (line) => warnings.push(line),
    );
    startMs = performance.now() - started;
  });

  afterAll(async () => {
    await servers?.close();
    await http?.close();
  });

  it('reports the failing servers on stderr and skips them while the others work', () => {
    expect(servers.started).toEqual([
      { name: 'fs', tools: expect.any(Number) },
      { name: 'my-http', tools: 5 },
    ]);
    expect(servers.failed.map((failure) => failure.name)).toEqual(['broken', 'silent']);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^quarry: MCP server "broken" \(command \["quarry-no-such-mcp-server-xyz"\]\) failed to start and is skipped: .*ENOENT/);
    expect(warnings[1]).toMatch(/^quarry: MCP server "silent" .* failed to start and is skipped: .*longer than 1 s \(startup_timeout_secs\)/);
    // The silent server's timeout bounds the start-up of all of them (they start in parallel).
    expect(startMs).toBeLessThan(30_000);
  });

  it('registers tools as mcp__SERVER__TOOL with their schemas as object schemas', () => {
    const names = servers.tools.map((tool) => tool.name);
    expect(names).toContain('mcp__fs__read_text_file');
    expect(names).toEqual(
      expect.arrayContaining(['mcp__my_http__echo', 'mcp__my_http__picture', 'mcp__my_http__fail', 'mcp__my_http__hang', 'mcp__my_http__who_am_i']),
    );
    const echo = servers.tools.find((tool) => tool.name === 'mcp__my_http__echo')!;
    expect(echo.parameters).toEqual({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(servers.tools.find((tool) => tool.name === 'mcp__my_http__hang')!.parameters).toEqual({ type: 'object', properties: {} });
  });

  it('calls the filesystem server through the registry and returns the real file content', async () => {
    const registry = buildToolRegistry(loadProfile('developer'), { mcpTools: servers.tools });
    const context = makeToolContext({ workingDir: dataDir });
    const result = await registry.run('mcp__fs__read_text_file', { path: join(dataDir, 'notes.txt') }, context);
    expect(result).toMatchObject({ ok: true, output: 'quarterly revenue: 42\nsecond line\n' });
    const outside = await registry.run('mcp__fs__read_text_file', { path: '/etc/hostname' }, context);
    expect(outside.ok).toBe(false);
    expect(outside.output).toMatch(/Access denied|outside allowed directories/i);
  });

  it('validates arguments against the server schema before calling', async () => {
    const registry = buildToolRegistry(loadProfile('developer'), { mcpTools: servers.tools });
    const before = http.calls.length;
    const result = await registry.run('mcp__my_http__echo', {}, makeToolContext({ workingDir: dataDir }));
    expect(result).toMatchObject({ ok: false, output: 'mcp__my_http__echo: invalid arguments: missing required field "text"' });
    expect(http.calls.length).toBe(before);
  });

  it('passes text through, turns images into placeholders, sends configured headers', async () => {
    const registry = buildToolRegistry(loadProfile('developer'), { mcpTools: servers.tools });
    const context = makeToolContext({ workingDir: dataDir });
    expect(await registry.run('mcp__my_http__echo', { text: 'hi there' }, context)).toMatchObject({ ok: true, output: 'echo: hi there' });
    const picture = await registry.run('mcp__my_http__picture', {}, context);
    expect(picture).toMatchObject({ ok: true, output: `here is the chart\n[image: image/png, 12.0 KB]` });
    expect(picture.metadata.contentTypes).toEqual(['text', 'image']);
    expect(IMAGE_BYTES).toBe(12 * 1024);
    expect((await registry.run('mcp__my_http__who_am_i', {}, context)).output).toBe('authorization: Bearer test-token');
  });

  it('turns a server-side error into a failed tool result', async () => {
    const registry = buildToolRegistry(loadProfile('developer'), { mcpTools: servers.tools });
    const result = await registry.run('mcp__my_http__fail', {}, makeToolContext({ workingDir: dataDir }));
    expect(result).toMatchObject({ ok: false, output: 'the widget is broken', metadata: { error: 'mcp_tool_error', server: 'my-http' } });
  });

  it('stops a call that outlives tool_timeout_secs', async () => {
    const registry = buildToolRegistry(loadProfile('developer'), { mcpTools: servers.tools });
    const started = performance.now();
    const result = await registry.run('mcp__my_http__hang', {}, makeToolContext({ workingDir: dataDir }));
    expect(result).toMatchObject({
      ok: false,
      output: 'mcp__my_http__hang: the MCP server "my-http" did not answer within 1 s (tool_timeout_secs); the call was cancelled',
      metadata: { error: 'timeout' },
    });
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it('cancels a call when the session is cancelled', async () => {
    const registry = buildToolRegistry(loadProfile('developer'), { mcpTools: servers.tools });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const result = await registry.run('mcp__my_http__hang', {}, makeToolContext({ workingDir: dataDir, signal: controller.signal }));
    expect(result).toMatchObject({ ok: false, metadata: { error: 'cancelled' } });
  });

  it('asks for approval under "dangerous" even for tools the server marks read-only', () => {
    const echo = servers.tools.find((tool) => tool.name === 'mcp__my_http__echo')!;
    expect(echo.readOnly).toBe(false);
    expect(echo.description).toMatch(/marks it read-only/);
    expect(approvalReason(loadProfile('readonly'), echo, { text: 'x' })).toBe(
      'mcp__my_http__echo can change things, and profile "readonly" asks before such calls',
    );
    expect(approvalReason(loadProfile('eval'), echo, { text: 'x' })).toBeNull();
  });

  it("limits MCP tools with the profile's tools list, prefix patterns included", () => {
    const profile = parseProfile(
      {
        name: 'narrow',
        shell: 'restricted',
        file_write: 'off',
        database: 'readonly',
        approval: { mode: 'dangerous' },
        tools: ['read', 'mcp__fs__*', 'mcp__my_http__echo'],
      },
      'test',
      'narrow',
    );
    const names = buildToolRegistry(profile, { mcpTools: servers.tools }).names();
    expect(names.filter((name) => name.startsWith('mcp__my_http__'))).toEqual(['mcp__my_http__echo']);
    expect(names).toContain('mcp__fs__read_text_file');
    expect(names).toContain('read');
    expect(names).not.toContain('grep');
  });
});

describe('MCP server lifecycle', () => {
  it('leaves no server process behind after close', async () => {
    const marker = makeTempDir('quarry-mcp-orphan-check-');
    const servers = await startMcpServers(
      [stdio('fs', ['node', FILESYSTEM_SERVER, marker]), stdio('silent', ['node', '-e', 'setInterval(() => {}, 1000)', marker], { startupTimeoutMs: 500 })],
      () => undefined,
    );
    expect(servers.started.map((server) => server.name)).toEqual(['fs']);
    expect(processesMatching(marker)).toHaveLength(1);
    await servers.close();
    await servers.close();
    expect(processesMatching(marker)).toEqual([]);
  });

  it('starts the servers of config.yaml in openWorkspace and stops them in close()', async () => {
    const home = makeTempDir('quarry-mcp-home-');
    const data = makeTempDir('quarry-mcp-ws-');
    writeFileSync(join(data, 'a.txt'), 'from the workspace\n');
    const config = join(home, 'custom.yaml');
    writeFileSync(config, `mcp_servers:\n  fs: {type: stdio, command: [node, ${JSON.stringify(FILESYSTEM_SERVER)}, "\${MCP_TEST_DATA}"]}\n`);
    process.env.MCP_TEST_DATA = data;
    try {
      const workspace = await openWorkspace({ profile: 'readonly', workingDir: data, configFile: config });
      expect(workspace.registry.names()).toContain('mcp__fs__read_text_file');
      const result = await workspace.registry.run('mcp__fs__read_text_file', { path: join(data, 'a.txt') }, makeToolContext({ workingDir: data }));
      expect(result.output).toBe('from the workspace\n');
      expect(processesMatching(data)).toHaveLength(1);
      await workspace.close();
      expect(processesMatching(data)).toEqual([]);
      const skipped = await openWorkspace({ profile: 'readonly', workingDir: data, configFile: config, mcp: false });
      expect(skipped.registry.names().some((name) => name.startsWith('mcp__'))).toBe(false);
      await skipped.close();
    } finally {
      delete process.env.MCP_TEST_DATA;
    }
  });
});
