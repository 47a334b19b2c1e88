/**
 * Network failures reaching a database server, said as a person would (docs/guide/databases.md):
 * "cannot connect to HOST:PORT (connection refused)" instead of Node's bare
 * "connect ECONNREFUSED 127.0.0.1:5432". Drivers pass Node's socket errors through (pg, mysql2,
 * oracledb thin, vertica-nodejs), sometimes as an AggregateError when a name resolves to several
 * addresses (localhost: ::1 and 127.0.0.1).
 */

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused: is the server running and listening on that port?',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset by the server',
};

interface SocketError {
  code?: unknown;
  address?: unknown;
  port?: unknown;
  hostname?: unknown;
  errors?: unknown;
}

function endpointOf(error: SocketError): string | null {
  const host = typeof error.address === 'string' ? error.address : typeof error.hostname === 'string' ? error.hostname : null;
  if (!host) return null;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return typeof error.port === 'number' || typeof error.port === 'string' ? `${shownHost}:${error.port}` : shownHost;
}

/** The one-line text for a socket-level failure, or null when the error is something else. */
export function connectionErrorText(error: unknown): string | null {
  if (typeof error !== 'object' || error === null) return null;
  const socketError = error as SocketError;
  const code = typeof socketError.code === 'string' ? socketError.code : null;
  if (!code || !(code in REASONS)) return null;
  const nested = Array.isArray(socketError.errors) ? (socketError.errors as SocketError[]) : [];
  const endpoints = [endpointOf(socketError), ...nested.map(endpointOf)].filter((endpoint): endpoint is string => endpoint !== null);
  const unique = [...new Set(endpoints)];
  const where = unique.length ? unique.join(' or ') : 'the database server';
  return `cannot connect to ${where} (${REASONS[code]})`;
}
