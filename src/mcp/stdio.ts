import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { EXIT_OK } from '../errors.js';

/**
 * `quarry mcp` on stdio (docs/guide/mcp.md "quarry mcp"): serves one MCP server until the client goes away
 * (stdin ends) or a signal stops it.
 */
export async function serveStdio(server: Server, served: readonly string[], profileName: string): Promise<number> {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
    // The client went away: stdin ends (the SDK's stdio transport does not notice on its own).
    process.stdin.once('end', () => void server.close());
    process.stdin.once('close', () => void server.close());
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void server.close());
  });
  await server.connect(transport);
  process.stderr.write(`quarry mcp: serving ${served.length} tools (${served.join(', ')}) on stdio under profile "${profileName}"\n`);
  await closed;
  return EXIT_OK;
}
