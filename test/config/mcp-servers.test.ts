import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadMcpServers, parseMcpServers } from '../../src/config/mcp-servers.js';
import { ConfigError as McpConfigError } from '../../src/errors.js';
import { mcpToolName } from '../../src/tools/mcp/names.js';
import { makeTempDir } from '../support/context.js';

const FILE = '/home/u/.quarry/config.yaml';

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(McpConfigError);
    return (error as Error).message;
  }
  throw new Error('expected an error');
}

describe('mcp_servers configuration', () => {
  it('parses stdio and http servers with ${VAR} interpolation and default timeouts', () => {
    const text = `
databases: {shop: {type: sqlite, path: shop.db}}
mcp_servers:
  files:
    type: stdio
    command: [npx, -y, "@modelcontextprotocol/server-filesystem", "\${DATA_DIR}"]
    env: {TOKEN: "t-\${SECRET}", DEBUG: 1}
  search:
    type: http
    url: "https://\${HOST}/mcp"
    headers: {Authorization: "Bearer \${SECRET}"}
    startup_timeout_secs: 2.5
    tool_timeout_secs: 120
    allow_outward: true
`;
    const servers = parseMcpServers(text, FILE, { DATA_DIR: '/data', SECRET: 's3', HOST: 'example.com' });
    expect(servers).toEqual([
      {
        name: 'files',
        type: 'stdio',
        command: ['npx', '-y', '@modelcontextprotocol/server-filesystem', '/data'],
        env: { TOKEN: 't-s3', DEBUG: '1' },
        cwd: undefined,
        startupTimeoutMs: 10_000,
        toolTimeoutMs: 60_000,
        allowOutward: false,
      },
      {
        name: 'search',
        type: 'http',
        url: 'https://example.com/mcp',
        headers: { Authorization: 'Bearer s3' },
        startupTimeoutMs: 2500,
        toolTimeoutMs: 120_000,
        allowOutward: true,
      },
    ]);
  });

  it('names an unset variable and where it is used', () => {
    const message = errorOf(() => parseMcpServers('mcp_servers: {s: {type: http, url: "http://h/${NOPE_VAR}"}}', FILE, {}));
    expect(message).toBe(`${FILE}: mcp_servers.s.url: environment variable NOPE_VAR is not set (referenced as \${NOPE_VAR})`);
  });

  it('refuses unknown keys, bad types, empty commands, bad URLs and bad timeouts with the allowed values', () => {
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: stdio, command: [x], url: y}}', FILE, {}))).toBe(
      `${FILE}: mcp_servers.s: unknown key "url"; allowed keys: type, command, env, cwd, startup_timeout_secs, tool_timeout_secs, allow_outward`,
    );
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: sse, url: y}}', FILE, {}))).toBe(
      `${FILE}: "mcp_servers.s.type" is "sse"; allowed values: stdio, http`,
    );
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: stdio, command: []}}', FILE, {}))).toMatch(/command must be a non-empty list/);
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: stdio, command: "npx server"}}', FILE, {}))).toMatch(
      /"mcp_servers.s.command" must be a list of text, got "npx server" \(The program and its arguments/,
    );
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: http, url: "ftp://x"}}', FILE, {}))).toMatch(/must start with http/);
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: http, url: "http://x", tool_timeout_secs: 0}}', FILE, {}))).toMatch(
      /tool_timeout_secs must be a positive number of seconds \(got 0\)/,
    );
    expect(errorOf(() => parseMcpServers('mcp_servers: [a]', FILE, {}))).toMatch(/"mcp_servers" must be a mapping/);
    expect(errorOf(() => parseMcpServers('mcp_servers: {s: {type: http', FILE, {}))).toMatch(/invalid YAML/);
  });

  it('reads $QUARRY_HOME/config.yaml when present, and requires a --config file to exist', () => {
    const home = makeTempDir();
    expect(loadMcpServers(undefined, { QUARRY_HOME: home })).toEqual([]);
    writeFileSync(join(home, 'config.yaml'), 'mcp_servers: {h: {type: http, url: "http://127.0.0.1:1/mcp"}}\n');
    expect(loadMcpServers(undefined, { QUARRY_HOME: home }).map((server) => server.name)).toEqual(['h']);
    mkdirSync(join(home, 'sub'));
    expect(errorOf(() => loadMcpServers('sub/missing.yaml', { QUARRY_HOME: home }, home))).toBe(
      `--config ${join(home, 'sub', 'missing.yaml')}: file not found`,
    );
    expect(errorOf(() => loadMcpServers('sub', { QUARRY_HOME: home }, home))).toBe(`--config ${join(home, 'sub')}: is a folder; expected a YAML file`);
    writeFileSync(join(home, 'typo.yaml'), 'mcp_server: {}\n');
    expect(errorOf(() => loadMcpServers('typo.yaml', {}, home))).toBe(
      `${join(home, 'typo.yaml')}: unknown key "mcp_server"; allowed keys: databases, mcp_servers, knowledge`,
    );
    writeFileSync(join(home, 'empty.yaml'), '');
    expect(loadMcpServers('empty.yaml', {}, home)).toEqual([]);
  });

  it('names tools mcp__SERVER__TOOL with non-alphanumerics replaced, and keeps long names within 64 characters', () => {
    expect(mcpToolName('my-files', 'read.text file')).toBe('mcp__my_files__read_text_file');
    const long = mcpToolName('s'.repeat(40), 't'.repeat(40));
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^mcp__s{40}__t{8}_[0-9a-f]{8}$/);
    expect(mcpToolName('s'.repeat(40), 'u'.repeat(40))).not.toBe(long);
  });
});
