import { ToolError } from '../../core/types.js';
import { tunnelFor, type SshTunnel } from '../ssh-tunnel.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';

/**
 * A server database behind an `ssh:` block (docs/guide/databases.md "SSH tunnels"): the engine's own driver,
 * connected to the tunnel's loopback port instead of the database's host. Every connect first
 * (re)opens the tunnel; a call that fails because the tunnel dropped says so in one line, and
 * the next call reconnects both.
 */
export async function tunneledDriver(config: DatabaseConfig, create: (direct: DatabaseConfig) => Promise<DatabaseDriver>): Promise<DatabaseDriver> {
  const ssh = config.ssh!;
  const tunnel = tunnelFor(ssh);
  const [host, port] = target(config);
  const localPort = await tunnel.localPort(host, port, config.connectTimeoutMs);
  const direct: DatabaseConfig = { ...config, ssh: undefined, host: '127.0.0.1', port: localPort };
  if (config.engine === 'oracle') direct.dsn = config.dsn!.replace(/^[^/]+/, `127.0.0.1:${localPort}`);
  return new TunneledDriver(await create(direct), tunnel, config, `127.0.0.1:${localPort}`, `${host}:${port}`);
}

/** The database's host and port as the SSH server sees them. */
function target(config: DatabaseConfig): [string, number] {
  if (config.engine === 'oracle') {
    const match = /^([^:/\s()]+)(?::(\d+))?(?:\/|$)/.exec(config.dsn ?? '');
    if (!match) throw new ToolError(`oracle ${config.alias}: ssh: needs an Easy Connect dsn (host:port/service), not ${config.dsn}`, 'invalid_arguments');
    return [match[1]!, Number(match[2] ?? 1521)];
  }
  const defaults: Record<string, number> = { postgres: 5432, mysql: 3306, vertica: 5433, clickhouse: 8123 };
  return [config.host ?? 'localhost', config.port ?? defaults[config.engine] ?? 0];
}

class TunneledDriver implements DatabaseDriver {
  readonly engine;

  constructor(
    private readonly inner: DatabaseDriver,
    private readonly tunnel: SshTunnel,
    private readonly config: DatabaseConfig,
    private readonly local: string,
    private readonly remote: string,
  ) {
    this.engine = inner.engine;
  }

  async connect(signal: AbortSignal): Promise<void> {
    await this.tunnel.open(this.config.connectTimeoutMs);
    await this.guard(() => this.inner.connect(signal));
  }

  /** Runs a call; its failure after the tunnel dropped is told as that, with driver text naming the real target. */
  private async guard<T>(work: () => Promise<T>): Promise<T> {
    const generation = this.tunnel.generation;
    try {
      return await work();
    } catch (error) {
      // The driver may see its socket close a moment before ssh2 reports the connection gone.
      if (this.tunnel.connected) await new Promise((resolve) => setTimeout(resolve, 50));
      if (this.tunnel.generation !== generation)
        throw new ToolError(`SSH tunnel ${this.tunnel.name} dropped during the call (${this.tunnel.lastDrop}); the next call reconnects`, 'ssh_tunnel');
      if (error instanceof Error) error.message = error.message.replaceAll(this.local, `${this.remote} (through ${this.tunnel.name})`);
      throw error;
    }
  }

  query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    return this.guard(() => this.inner.query(sql, limit, options));
  }

  exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    return this.guard(() => this.inner.exportCsv(sql, sink, options));
  }

  describe(table: string, options: RunOptions): Promise<TableDescription> {
    return this.guard(() => this.inner.describe(table, options));
  }

  catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return this.guard(() => this.inner.catalog(sql, params, options));
  }

  ping(options: RunOptions): Promise<string> {
    return this.guard(() => this.inner.ping(options));
  }

  connectionLost(): boolean {
    return this.inner.connectionLost?.() ?? false;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
