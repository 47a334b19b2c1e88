import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, TEST_DB_PASSWORD, TEST_DB_USER, type RunningServer } from './servers.js';

/**
 * A real ClickHouse server (Debian 12's clickhouse-server, 18.16) for the ClickHouse tests and the
 * bench: a plain process on loopback ports with a temporary data directory and a minimal config,
 * the test user (password with URL-special characters) and `default` (no password) as the admin.
 */

export const CLICKHOUSE_SERVER = '/usr/sbin/clickhouse-server';

export function clickhouseInstalled(): boolean {
  return existsSync(CLICKHOUSE_SERVER);
}

function xmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The server, and its native (TCP) port for clickhouse-client. */
export async function startClickhouse(): Promise<RunningServer & { tcpPort: number }> {
  if (!clickhouseInstalled()) throw new Error(`${CLICKHOUSE_SERVER} not found (install it: apt-get install -y clickhouse-server)`);
  const dir = mkdtempSync(join(tmpdir(), 'quarry-clickhouse-'));
  const [httpPort, tcpPort] = [await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'config.xml'),
    `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/error.log</errorlog><console>0</console></logger>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>${dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <uncompressed_cache_size>8589934</uncompressed_cache_size>
</yandex>
`,
  );
  const user = (name: string, password: string) =>
    `<${name}><password>${xmlText(password)}</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></${name}>`;
  writeFileSync(
    join(dir, 'users.xml'),
    `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users>${user('default', '')}${user(TEST_DB_USER, TEST_DB_PASSWORD)}</users>
  <quotas><default></default></quotas>
</yandex>
`,
  );
  const child = spawn(CLICKHOUSE_SERVER, [`--config-file=${join(dir, 'config.xml')}`], { stdio: 'ignore', cwd: dir });
  const base = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`clickhouse-server exited at start (code ${child.exitCode}); see ${dir}/error.log`);
    try {
      if ((await (await fetch(`${base}/ping`)).text()).startsWith('Ok')) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('clickhouse-server did not answer within 30 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url: `clickhouse://${TEST_DB_USER}:${encodeURIComponent(TEST_DB_PASSWORD)}@127.0.0.1:${httpPort}/default`,
    adminUrl: base,
    port: httpPort,
    tcpPort,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A statement as the suite's ClickHouse admin (`default`, not read-only), with an optional request body (data to insert): its answer as text. */
export async function clickhouseAdmin(sql: string, body?: string): Promise<string> {
  const base = process.env.QUARRY_TEST_CLICKHOUSE_ADMIN_URL;
  if (!base) throw new Error('QUARRY_TEST_CLICKHOUSE_ADMIN_URL is not set: the ClickHouse test server did not start');
  const response = await fetch(body === undefined ? base : `${base}/?query=${encodeURIComponent(sql)}`, { method: 'POST', body: body ?? sql });
  const text = await response.text();
  if (!response.ok) throw new Error(`clickhouse admin: ${text}`);
  return text;
}
