import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { nodeCrypto } from '../node-crypto.js';
import { EXIT_OK, UsageError } from '../errors.js';

/**
 * The Streamable HTTP server of `quarry mcp --http` (docs/guide/mcp.md "quarry mcp"): the bind address, the
 * Host and Origin checks (DNS-rebinding protection), the bearer token, and sessions with their
 * limits. The MCP server of each session comes from the caller (src/mcp/serve.ts).
 */

/** Request bodies larger than this are refused (a tool call's arguments are small). */
export const MAX_HTTP_BODY_BYTES = 4 * 1024 * 1024;

export interface HttpBind {
  host: string;
  port: number;
}

/** `PORT`, `HOST:PORT` or `[IPV6]:PORT`; the host defaults to 127.0.0.1. */
export function parseHttpBind(value: string): HttpBind {
  const text = value.trim();
  const match = /^(?:\[([^\]]+)\]:|([^:]*):)?(\d+)$/.exec(text);
  const port = match ? Number(match[3]) : NaN;
  if (!match || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UsageError(`--http expects [HOST:]PORT (e.g. 8765 or 127.0.0.1:8765), got "${value}"`);
  }
  const host = match[1] ?? (match[2] || '127.0.0.1');
  return { host, port };
}

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && nodeCrypto().timingSafeEqual(a, b);
}

/** The Origin header's check (the MCP transport spec's DNS-rebinding protection): loopback origins, or those allowed by flag. */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (origin === undefined) return true; // not a browser: nothing to rebind
  if (allowed.includes(origin)) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);
  } catch {
    return false;
  }
}

/** On a loopback bind, the Host header must name loopback too (a rebound DNS name would not). */
export function hostAllowed(hostHeader: string | undefined, bind: HttpBind): boolean {
  if (!isLoopbackHost(bind.host)) return true; // off loopback the bearer token is the guard
  if (!hostHeader) return false;
  try {
    return isLoopbackHost(new URL(`http://${hostHeader}`).hostname);
  } catch {
    return false;
  }
}

function reject(res: ServerResponse, status: number, message: string, extraHeaders: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json', ...extraHeaders });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_HTTP_BODY_BYTES) throw new Error(`request body over ${MAX_HTTP_BODY_BYTES / 1024 / 1024} MB`);
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** A whole number from the environment (a setting for `quarry mcp --http`), or the default; anything else is a usage error naming it. */
function positiveSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new UsageError(`${name} must be a whole number of at least 1 (got ${JSON.stringify(raw)})`);
  return value;
}

export async function serveHttp(
  bind: HttpBind,
  token: string | undefined,
  allowOrigins: readonly string[],
  newServer: () => import('@modelcontextprotocol/sdk/server/index.js').Server,
  served: readonly string[],
  profileName: string,
): Promise<number> {
  const { createServer } = await import('node:http');
  const { StreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { isInitializeRequest } = await import('@modelcontextprotocol/sdk/types.js');
  type HttpTransport = InstanceType<typeof StreamableHTTPServerTransport>;
  const sessions = new Map<string, { transport: HttpTransport; close: () => Promise<void>; lastUsed: number }>();
  // Each session holds a server and its database connections: at most this many, and a session
  // unused this long is closed (docs/guide/mcp.md "quarry mcp"; a client must then initialize again).
  const maxSessions = positiveSetting('QUARRY_MCP_MAX_SESSIONS', 64);
  const idleMs = positiveSetting('QUARRY_MCP_SESSION_IDLE_SECONDS', 1800) * 1000;
  const closeIdle = () => {
    const now = Date.now();
    for (const [id, session] of sessions) {
      if (now - session.lastUsed < idleMs) continue;
      sessions.delete(id);
      void session.close().catch(() => undefined);
    }
  };
  const sweeper = setInterval(closeIdle, Math.min(60_000, Math.max(250, idleMs / 4)));
  sweeper.unref();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!hostAllowed(req.headers.host, bind)) return reject(res, 403, 'forbidden: the Host header does not name this loopback server');
    if (!originAllowed(req.headers.origin, allowOrigins))
      return reject(res, 403, `forbidden: Origin ${req.headers.origin} is not allowed (see --allow-origin)`);
    if (token) {
      const auth = req.headers.authorization ?? '';
      const given = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim() ?? '';
      if (!sameSecret(given, token)) return reject(res, 401, 'unauthorized: send Authorization: Bearer <token>', { 'www-authenticate': 'Bearer' });
    }
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/mcp') return reject(res, 404, 'not found: the MCP endpoint is /mcp');
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (req.method === 'POST') {
      let body: unknown;
      try {
        body = await readJsonBody(req);
      } catch (error) {
        return reject(res, 400, `bad request: ${(error as Error).message}`);
      }
      if (existing) {
        existing.lastUsed = Date.now();
        return existing.transport.handleRequest(req, res, body);
      }
      if (sessionId !== undefined) return reject(res, 404, 'unknown or expired session; initialize again');
      if (!isInitializeRequest(body)) return reject(res, 400, 'bad request: no session; the first request must be initialize');
      closeIdle();
      if (sessions.size >= maxSessions) {
        return reject(
          res,
          503,
          `too many sessions (${maxSessions}, QUARRY_MCP_MAX_SESSIONS): end one with DELETE /mcp, or wait for one to be idle for ${idleMs / 1000} s`,
          { 'retry-after': '60' },
        );
      }
      const server = newServer();
      const transport: HttpTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => nodeCrypto().randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, close: () => server.close(), lastUsed: Date.now() });
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await server.connect(transport);
      return transport.handleRequest(req, res, body);
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (!existing) return reject(res, 404, 'unknown or missing session');
      existing.lastUsed = Date.now();
      return existing.transport.handleRequest(req, res);
    }
    return reject(res, 405, 'method not allowed', { allow: 'GET, POST, DELETE' });
  };

  const httpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => reject(res, 500, `internal error: ${(error as Error).message}`));
  });
  await new Promise<void>((resolve, rejectListen) => {
    httpServer.once('error', (error: NodeJS.ErrnoException) =>
      rejectListen(
        new UsageError(`quarry mcp: cannot listen on ${bind.host}:${bind.port}: ${error.code === 'EADDRINUSE' ? 'the port is in use' : error.message}`),
      ),
    );
    httpServer.listen(bind.port, bind.host, () => resolve());
  });
  const address = httpServer.address();
  const port = typeof address === 'object' && address ? address.port : bind.port;
  const hostText = bind.host.includes(':') ? `[${bind.host}]` : bind.host;
  process.stderr.write(
    `quarry mcp: serving ${served.length} tools (${served.join(', ')}) at http://${hostText}:${port}/mcp under profile ` +
      `"${profileName}"${token ? ' (bearer token required)' : ''}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => {
      clearInterval(sweeper);
      void Promise.allSettled([...sessions.values()].map((session) => session.close())).then(() => {
        httpServer.closeAllConnections();
        httpServer.close(() => resolve());
      });
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return EXIT_OK;
}
