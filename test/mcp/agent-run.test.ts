import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../support/agent-cli.js';
import { REPO_ROOT, runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { startMcpHttpServer, type McpHttpServer } from '../support/mcp-http-server.js';

const FILESYSTEM_SERVER = join(REPO_ROOT, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');

/** An agent run of the compiled CLI (scripted model) that calls tools of a stdio and an HTTP MCP server. */
describe('MCP tools in an agent run', () => {
  let http: McpHttpServer;
  let home: string;
  let data: string;
  let script: string;

  beforeAll(async () => {
    http = await startMcpHttpServer();
    home = makeTempDir('quarry-mcp-run-home-');
    data = makeTempDir('quarry-mcp-run-data-');
    writeFileSync(join(data, 'report.txt'), 'total revenue: 1234.50\n');
    writeFileSync(
      join(home, 'config.yaml'),
      [
        'mcp_servers:',
        `  files: {type: stdio, command: [node, ${JSON.stringify(FILESYSTEM_SERVER)}, ${JSON.stringify(data)}]}`,
        `  web: {type: http, url: ${JSON.stringify(http.url)}, headers: {Authorization: "Bearer \${MCP_RUN_TOKEN}"}}`,
        '  dead: {type: stdio, command: [quarry-no-such-mcp-server-xyz]}',
        '',
      ].join('\n'),
    );
    script = join(home, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          {
            text: 'Reading the report and asking the web server.',
            tool_calls: [
              { name: 'mcp__files__read_text_file', arguments: { path: join(data, 'report.txt') } },
              { name: 'mcp__web__who_am_i', arguments: {} },
              { name: 'mcp__web__picture', arguments: {} },
            ],
          },
          { text: 'The report says total revenue is 1234.50.' },
        ],
      }),
    );
  });

  afterAll(async () => {
    await http?.close();
  });

  function traceOf(sessionId: string): string {
    return readFileSync(join(home, 'sessions', sessionId, 'trace.jsonl'), 'utf8');
  }

  it('starts the servers, skips the broken one with a message, and feeds the tool results to the model', async () => {
    const result = await runQuarry(
      ['--model', `script:${script}`, '--profile', 'readonly', '--yes', '--allow-outward', '--format', 'json', '-w', data, 'What is the revenue?'],
      { env: cliEnv(home, { MCP_RUN_TOKEN: 'run-token' }), timeoutMs: 60_000 },
    );
    expect(result.stderr).toMatch(/MCP server "dead" \(command \["quarry-no-such-mcp-server-xyz"\]\) failed to start and is skipped/);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as { text: string; status: string; session_id?: string; sessionId?: string };
    expect(summary.status).toBe('completed');
    expect(summary.text).toContain('1234.50');
    const sessionId = summary.session_id ?? summary.sessionId ?? readdirSync(join(home, 'sessions'))[0]!;
    const trace = traceOf(sessionId);
    // The results the model received, as the trace recorded them.
    expect(trace).toContain('total revenue: 1234.50');
    expect(trace).toContain('authorization: Bearer run-token');
    expect(trace).toContain('[image: image/png, 12.0 KB]');
    expect(http.calls).toEqual(expect.arrayContaining(['who-am-i', 'picture']));
  });

  /** A readonly run of the script with these flags, which reaches the web server not at all: its trace. */
  async function runWithoutArrivals(flags: string[]): Promise<string> {
    const before = http.calls.length;
    const result = await runQuarry(['--model', `script:${script}`, '--profile', 'readonly', ...flags, '--format', 'json', '-w', data, 'What is the revenue?'], {
      env: cliEnv(home, { MCP_RUN_TOKEN: 'run-token' }),
      timeoutMs: 60_000,
    });
    expect(result.code).toBe(0);
    expect(http.calls.length).toBe(before);
    const summary = JSON.parse(result.stdout) as { session_id?: string; sessionId?: string };
    const sessions = readdirSync(join(home, 'sessions'));
    return traceOf(summary.session_id ?? summary.sessionId ?? sessions[sessions.length - 1]!);
  }

  it('--yes does not approve an outward MCP call once a file is in the conversation; the refusal names the source', async () => {
    // Nothing reaches the web server: both its calls come after the file's content.
    const trace = await runWithoutArrivals(['--yes']);
    expect(trace).toContain('total revenue: 1234.50');
    expect(trace).toMatch(
      /refused: mcp__web__who_am_i can send data out of this machine, and the conversation holds content the user did not write \(from mcp__files__read_text_file/,
    );
    expect(trace).toContain('--allow-outward');
    expect(trace).not.toContain('authorization: Bearer run-token');
  });

  it('asks before MCP tools under the dangerous approval mode: without a terminal or --yes they are refused', async () => {
    const trace = await runWithoutArrivals([]);
    expect(trace).toMatch(/--yes/);
    expect(trace).not.toContain('total revenue: 1234.50');
  });

  it('quarry tool runs an MCP tool directly', async () => {
    const result = await runQuarry(
      ['tool', 'mcp__files__read_text_file', '--args', JSON.stringify({ path: join(data, 'report.txt') }), '--yes', '--format', 'json'],
      {
        env: cliEnv(home, { MCP_RUN_TOKEN: 'run-token' }),
        timeoutMs: 60_000,
      },
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, output: 'total revenue: 1234.50\n' });
  });

  it('an unset ${VAR} in config.yaml is a usage error naming it', async () => {
    const result = await runQuarry(['tool', 'mcp__web__echo', '--args', '{"text":"x"}', '--yes'], { env: cliEnv(home), timeoutMs: 30_000 });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('mcp_servers.web.headers.Authorization: environment variable MCP_RUN_TOKEN is not set');
  });
});
