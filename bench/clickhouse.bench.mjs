// ClickHouse export (docs/guide/databases.md "ClickHouse"): quarry's export_query of 1,000,000 rows against
// ClickHouse's own client writing the same CSVWithNames, measured in alternation on the
// Debian clickhouse-server (18.16) started here on loopback. Skipped (one row saying so) when
// clickhouse-server is not installed.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { measurePair } from './support.mjs';

const ROWS = 1_000_000;
const RUNS = 5;
const SERVER = '/usr/sbin/clickhouse-server';

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startClickhouse(dir) {
  const [http, tcp] = [await freePort(), await freePort()];
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'config.xml'),
    `<?xml version="1.0"?><yandex><logger><level>warning</level><log>${dir}/server.log</log><errorlog>${dir}/error.log</errorlog></logger>` +
      `<http_port>${http}</http_port><tcp_port>${tcp}</tcp_port><listen_host>127.0.0.1</listen_host><path>${dir}/data/</path><tmp_path>${dir}/tmp/</tmp_path>` +
      `<users_config>${dir}/users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database>` +
      '<mark_cache_size>5368709</mark_cache_size></yandex>',
  );
  writeFileSync(
    join(dir, 'users.xml'),
    '<?xml version="1.0"?><yandex><profiles><default/></profiles><users><default><password></password><networks><ip>127.0.0.1</ip></networks>' +
      '<profile>default</profile><quota>default</quota></default></users><quotas><default/></quotas></yandex>',
  );
  const child = spawn(SERVER, [`--config-file=${join(dir, 'config.xml')}`], { stdio: 'ignore', cwd: dir });
  const base = `http://127.0.0.1:${http}`;
  for (const deadline = Date.now() + 30_000; ; ) {
    try {
      if ((await (await fetch(`${base}/ping`)).text()).startsWith('Ok')) break;
    } catch {}
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('clickhouse-server did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const query = async (sql) => {
    const response = await fetch(base, { method: 'POST', body: sql });
    if (!response.ok) throw new Error(await response.text());
    return response.text();
  };
  return { http, tcp, query, stop: () => child.kill('SIGTERM') };
}

const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

export async function run({ root, workDir }) {
  if (!existsSync(SERVER)) return [{ name: 'clickhouse export', note: 'skipped: clickhouse-server is not installed' }];
  const dir = join(workDir, 'clickhouse');
  const server = await startClickhouse(join(dir, 'server'));
  try {
    await server.query('CREATE TABLE events (id UInt64, customer_id UInt32, label String, amount Decimal(12, 2), day Date) ENGINE = MergeTree ORDER BY id');
    await server.query(
      `INSERT INTO events SELECT number, number % 5000, concat('event ', toString(number)), toDecimal64(number / 4, 2), toDate('2024-01-01') + number % 365 ` +
        `FROM system.numbers LIMIT ${ROWS}`,
    );
    const out = join(dir, 'out.csv');
    const cli = join(root, 'dist/cli.cjs');
    const args = JSON.stringify({ operation: 'export_query', sql: 'SELECT * FROM events', output_path: out });
    const pair = measurePair(
      [
        'bash',
        '-c',
        `rm -f ${shellQuote(out)} && exec ${shellQuote(process.execPath)} ${shellQuote(cli)} tool clickhouse --yes -w ${shellQuote(dir)} ` +
          `--db clickhouse://default@127.0.0.1:${server.http}/default --args ${shellQuote(args)} > /dev/null`,
      ],
      ['bash', '-c', `clickhouse-client --port ${server.tcp} --query 'SELECT * FROM events FORMAT CSVWithNames' > ${shellQuote(out)}`],
      { runs: RUNS },
    );
    return [
      {
        name: 'clickhouse export 1M rows (time)',
        quarry: pair.a.ms,
        reference: pair.b.ms,
        ratio: pair.ratio,
        referenceName: 'clickhouse-client CSVWithNames',
        unit: 'ms',
        note: 'quarry adds CRLF and NULL-empty conversion (ratio: median of alternating pairs)',
      },
      { name: 'clickhouse export 1M rows (peak memory)', quarry: pair.a.rssMb, reference: pair.b.rssMb, referenceName: 'clickhouse-client', unit: 'MB' },
    ];
  } finally {
    server.stop();
  }
}
