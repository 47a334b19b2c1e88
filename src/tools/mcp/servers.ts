import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool } from '../core/types.js';
import type { McpServerConfig } from '../../config/mcp-servers.js';
import { adaptMcpTool, type McpToolInfo } from './tool-adapter.js';

/**
 * Starts the configured MCP servers at session start, in parallel: connects, lists their tools
 * and wraps each as a quarry Tool. A server that fails (bad command, no answer within its
 * startup timeout, a broken tools/list) is reported through `warn` and skipped; the others
 * still work. close() stops them all: a stdio server gets its stdin closed, then SIGTERM, then
 * SIGKILL (the SDK's sequence); an HTTP session is terminated.
 */

export interface McpServers {
  tools: Tool[];
  /** Servers that started, with how many tools each offers. */
  started: Array<{ name: string; tools: number }>;
  failed: Array<{ name: string; reason: string }>;
  close(): Promise<void>;
}

/** Lines of a stdio server's stderr kept to explain a failed start. */
const STDERR_TAIL_LINES = 5;
const CLIENT_INFO = { name: 'quarry', version: '0.1.0' };

interface Started {
  tools: Tool[];
  close(): Promise<void>;
}

function makeTransport(config: McpServerConfig, stderrTail: string[]): Transport {
  if (config.type === 'http') {
    return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers } });
  }
  const [command, ...args] = config.command;
  const transport = new StdioClientTransport({
    command: command!,
    args,
    // Only the SDK's small default set (HOME, PATH, USER, ...) plus the configured env: no API keys leak to servers.
    env: { ...getDefaultEnvironment(), ...config.env },
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderrTail.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    );
    stderrTail.splice(0, Math.max(0, stderrTail.length - STDERR_TAIL_LINES));
  });
  return transport;
}

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s (startup_timeout_secs)`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function closeQuietly(client: Client, transport: Transport): Promise<void> {
  if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
  await client.close().catch(() => undefined);
}

async function startServer(config: McpServerConfig): Promise<Started> {
  const stderrTail: string[] = [];
  const transport = makeTransport(config, stderrTail);
  const client = new Client(CLIENT_INFO);
  const connectAndList = async () => {
    await client.connect(transport, { timeout: config.startupTimeoutMs });
    const infos: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout: config.startupTimeoutMs });
      infos.push(...(page.tools as McpToolInfo[]));
      cursor = page.nextCursor;
    } while (cursor);
    return infos;
  };
  try {
    const infos = await withTimeout(connectAndList(), config.startupTimeoutMs, 'starting the server and listing its tools');
    return {
      tools: infos.map((info) => adaptMcpTool(config.name, client, info, config.toolTimeoutMs, config.allowOutward)),
      close: () => closeQuietly(client, transport),
    };
  } catch (error) {
    await closeQuietly(client, transport);
    const detail = (error as Error)?.message ?? String(error);
    const stderr = stderrTail.length > 0 ? `; its stderr ended with: ${stderrTail.join(' | ')}` : '';
    throw new Error(`${detail}${stderr}`);
  }
}

function describeServer(config: McpServerConfig): string {
  return config.type === 'stdio' ? `command ${JSON.stringify(config.command)}` : `url ${config.url}`;
}

export async function startMcpServers(
  configs: readonly McpServerConfig[],
  warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<McpServers> {
  const outcomes = await Promise.allSettled(configs.map((config) => startServer(config)));
  const tools: Tool[] = [];
  const seen = new Set<string>();
  const started: McpServers['started'] = [];
  const failed: McpServers['failed'] = [];
  const closers: Array<() => Promise<void>> = [];
  outcomes.forEach((outcome, index) => {
    const config = configs[index]!;
    if (outcome.status === 'rejected') {
      const reason = (outcome.reason as Error)?.message ?? String(outcome.reason);
      failed.push({ name: config.name, reason });
      warn(`quarry: MCP server "${config.name}" (${describeServer(config)}) failed to start and is skipped: ${reason}`);
      return;
    }
    closers.push(outcome.value.close);
    let offered = 0;
    for (const tool of outcome.value.tools) {
      if (seen.has(tool.name)) {
        warn(`quarry: MCP tool ${tool.name} of server "${config.name}" has the same name as another tool and is skipped`);
        continue;
      }
      seen.add(tool.name);
      tools.push(tool);
      offered++;
    }
    started.push({ name: config.name, tools: offered });
  });
  let closing: Promise<void> | undefined;
  return {
    tools,
    started,
    failed,
    close: () => (closing ??= Promise.all(closers.map((close) => close())).then(() => undefined)),
  };
}
