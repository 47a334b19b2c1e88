import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * A real MCP server over Streamable HTTP on a loopback port, made with the SDK (stateless: a
 * fresh server per request). Its tools: `echo` (text), `picture` (an image of IMAGE_BYTES),
 * `fail` (a server-side error), `hang` (answers only when cancelled) and `record` (text, plus
 * the Authorization header it saw).
 */
export const IMAGE_BYTES = 12 * 1024;

export interface McpHttpServer {
  url: string;
  /** Tool calls received, by tool name. */
  calls: string[];
  close(): Promise<void>;
}

const TOOLS = [
  {
    name: 'echo',
    description: 'Echoes its text.',
    // Draft 2020-12, as many servers declare: quarry must still validate against it.
    inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    annotations: { readOnlyHint: true },
  },
  { name: 'picture', description: 'Returns a PNG image.', inputSchema: { type: 'object', properties: {} } },
  { name: 'fail', description: 'Always fails.', inputSchema: { type: 'object', properties: {} } },
  { name: 'hang', description: 'Never answers.', inputSchema: { type: 'object' } },
  { name: 'who-am-i', description: 'Says which Authorization header it got.', inputSchema: { type: 'object', properties: {} } },
];

function mcpServer(calls: string[], authorization: string | undefined): Server {
  const server = new Server({ name: 'test-http', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    calls.push(name);
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    switch (name) {
      case 'echo':
        return { content: [{ type: 'text', text: `echo: ${String(args.text)}` }] };
      case 'picture':
        return {
          content: [
            { type: 'text', text: 'here is the chart' },
            { type: 'image', mimeType: 'image/png', data: Buffer.alloc(IMAGE_BYTES, 7).toString('base64') },
          ],
        };
      case 'fail':
        return { isError: true, content: [{ type: 'text', text: 'the widget is broken' }] };
      case 'hang':
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 60_000);
          timer.unref();
          extra.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return { content: [{ type: 'text', text: 'too late' }] };
      case 'who-am-i':
        return { content: [{ type: 'text', text: `authorization: ${authorization ?? 'none'}` }] };
      default:
        return { isError: true, content: [{ type: 'text', text: `unknown tool ${name}` }] };
    }
  });
  return server;
}

export async function startMcpHttpServer(): Promise<McpHttpServer> {
  const calls: string[] = [];
  const http: HttpServer = createServer((req, res) => {
    const server = mcpServer(calls, req.headers.authorization);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
