import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cliEnv } from './agent-cli.js';
import { CLI_PATH, REPO_ROOT } from './cli.js';

/** `quarry mcp` over stdio as a real child process of the built CLI, driven by the MCP SDK's own Client. */

export interface ServedQuarry {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  /** Resolves once the server process is gone. */
  exited: Promise<number | null>;
}

export async function serveQuarryMcp(home: string, work: string, args: string[]): Promise<ServedQuarry> {
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_PATH, 'mcp', '-w', work, ...args],
    cwd: REPO_ROOT,
    env: cliEnv(home) as Record<string, string>,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'quarry-test', version: '1.0.0' });
  await client.connect(transport);
  const pid = transport.pid;
  const exited = new Promise<number | null>((resolve) => {
    const check = setInterval(() => {
      try {
        if (pid) process.kill(pid, 0);
      } catch {
        clearInterval(check);
        resolve(0);
      }
    }, 50);
  });
  return { client, transport, stderr: () => stderr, exited };
}

/** A tool result's text parts, joined. */
export function toolText(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ type: string; text: string }>).map((part) => part.text).join('');
}

/**
 * Calls a tool, waits until the server shows its statement running (`running` counts it there),
 * cancels it through the client's AbortSignal, and waits until the server no longer runs it:
 * throws if it never started or kept running 10 s after the cancel.
 */
export async function cancelStopsOnServer(
  client: Client,
  call: { name: string; arguments: Record<string, unknown> },
  running: () => Promise<number>,
): Promise<void> {
  const controller = new AbortController();
  const pending = client.callTool(call, undefined, { signal: controller.signal, timeout: 90_000 });
  pending.catch(() => undefined);
  const started = Date.now();
  while ((await running()) === 0) {
    if (Date.now() - started > 10_000) throw new Error('the query never started');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  controller.abort();
  let rejected = false;
  await pending.catch(() => (rejected = true));
  if (!rejected) throw new Error('the cancelled call did not fail');
  const stopped = Date.now();
  while ((await running()) > 0) {
    if (Date.now() - stopped > 10_000) throw new Error('the query kept running on the server after the client cancelled');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
