import type { OracleConnection } from 'oracledb';

/**
 * An Oracle connection that records what quarry sends (there is no Oracle server here): `execute`
 * answers each statement; a rollback is logged as ROLLBACK, the rest of the surface does nothing.
 */
export function recordingOracleConnection(log: string[], execute: (sql: string, bound?: unknown[]) => Promise<unknown>): OracleConnection {
  return {
    callTimeout: 0,
    execute,
    commit: async () => undefined,
    rollback: async () => {
      log.push('ROLLBACK');
    },
    break: async () => undefined,
    ping: async () => undefined,
    close: async () => undefined,
    isHealthy: () => true,
  } as unknown as OracleConnection;
}
