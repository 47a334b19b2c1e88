import { beforeAll, describe } from 'vitest';
import { TEST_DB_PASSWORD } from '../../../support/servers.js';
import { makeTempDir } from '../../../support/context.js';
import { configsFor } from '../helpers.js';
import { driverContract } from './driver-contract.js';

/**
 * The shared driver contract on the suite's real clickhouse-server (where it is installed;
 * clickhouse.test.ts holds what only ClickHouse shows), in a database of its own.
 */
const url = process.env.QUARRY_TEST_CLICKHOUSE_URL;
const admin = process.env.QUARRY_TEST_CLICKHOUSE_ADMIN_URL;
const DATABASE = 'quarry_contract';
let dir: string;

/** A statement as the admin (default user, not read-only), answered as text. */
async function adminQuery(sql: string): Promise<string> {
  const response = await fetch(`${admin!}${admin!.includes('?') ? '&' : '?'}database=${DATABASE}`, { method: 'POST', body: sql });
  const text = await response.text();
  if (!response.ok) throw new Error(`clickhouse admin: ${text}`);
  return text;
}

const contractUrl = () => url!.replace(/\/default$/, `/${DATABASE}`);

describe.skipIf(!url)(`clickhouse${url ? '' : ' (skipped: clickhouse-server is not installed; apt-get install clickhouse-server)'}`, () => {
  beforeAll(async () => {
    const response = await fetch(admin!, { method: 'POST', body: `DROP DATABASE IF EXISTS ${DATABASE}` });
    if (!response.ok) throw new Error(await response.text());
    await fetch(admin!, { method: 'POST', body: `CREATE DATABASE ${DATABASE}` });
    await adminQuery('CREATE TABLE customers (id UInt32, name String, email String, note Nullable(String), created_at Date) ENGINE = MergeTree ORDER BY id');
    await adminQuery(
      'CREATE TABLE audit_log (id UInt32, customer_id UInt32, action String, update_count Int32, deleted_flag UInt8, note Nullable(String)) ' +
        'ENGINE = MergeTree ORDER BY id',
    );
    await adminQuery(
      "INSERT INTO customers VALUES (1, 'Ada', 'ada@example.com', NULL, '2024-01-02'), (2, 'Bob', 'bob@example.com', 'line one\\nline two', '2024-02-03'), " +
        "(3, 'Cyd', 'cyd@example.com', 'a, b', '2024-03-04')",
    );
    await adminQuery("INSERT INTO audit_log VALUES (1, 1, 'DELETE', 3, 0, 'x'), (2, 2, 'UPDATE', 1, 0, NULL), (3, 3, 'INSERT', 0, 0, 'drop table')");
    await adminQuery('CREATE TABLE big (id UInt32, label String, amount Decimal(12, 2)) ENGINE = MergeTree ORDER BY id');
    await adminQuery(
      "INSERT INTO big SELECT toUInt32(number + 1), concat('row ', toString(number + 1)), toDecimal64((number + 1) / 4, 2) FROM system.numbers LIMIT 20000",
    );
    dir = makeTempDir();
  });

  driverContract(
    {
      tool: 'clickhouse',
      exact: {
        sql: "SELECT toDecimal128('12345678901234567890.123456789', 9) AS n, toInt64(9223372036854775807) AS b, toDate('2024-02-29') AS d, NULL AS z",
        line: '│ 12345678901234567890.123456789 │ 9223372036854775807 │ 2024-02-29 │ NULL │',
      },
      listTables: { shows: [/│ quarry_contract +│ audit_log +│ table +│/] },
      describe: { table: 'audit_log', shows: [/│ update_count +│ Int32 +│ no/, 'primary key: id'] },
      slow: { sql: 'SELECT sum(number) AS quarry_contract_slow FROM system.numbers', marker: 'quarry_contract_slow' },
      // ClickHouse 18.16 (Debian 12) answers these otherwise than newer servers; clickhouse.test.ts says the same.
      alsoRefusedAs: /^syntax error: "SYSTEM" at character 1 does not begin any SQL statement/,
      explainAbsent: 'explain: this ClickHouse server has no EXPLAIN (it needs 20.6 or newer); count or sample rows instead',
      benignUnsupported: {
        sql: ['WITH recent AS (SELECT * FROM customers WHERE id > 1) SELECT count(*) FROM recent'],
        why: 'ClickHouse 18.16 has no WITH name AS (subquery)',
      },
      // Exports are ClickHouse's own CSVWithNames, which quotes every text.
      exportLines: ['"id","label","amount"', '1,"row 1",0.25', '20000,"row 20000",5000.00'],
      // 18.16 sends no X-ClickHouse-Summary header, so the count of written rows is not known.
      insertSays: 'The statement ran and returned no rows.',
      failingExport: { sql: 'SELECT id, intDiv(1, 19000 - id) FROM big ORDER BY id', says: 'Division by zero' },
      wrongPassword: {
        configs: (target) =>
          configsFor([`bad=${contractUrl().replace(encodeURIComponent(TEST_DB_PASSWORD), encodeURIComponent(`${TEST_DB_PASSWORD}x`))}`], target.dir),
        password: TEST_DB_PASSWORD,
        says: 'Wrong password for user quarry_test',
      },
    },
    () => ({
      configs: configsFor([`ch=${contractUrl()}`], dir),
      dir,
      snapshot: async () =>
        [
          await adminQuery(`SELECT database, name, engine FROM system.tables WHERE database = '${DATABASE}' ORDER BY name FORMAT TSV`),
          await adminQuery('SELECT * FROM customers ORDER BY id FORMAT TSV'),
          await adminQuery('SELECT * FROM audit_log ORDER BY id FORMAT TSV'),
          await adminQuery('SELECT count(), sum(id) FROM big FORMAT TSV'),
        ].join('#'),
      // The server's own CSVWithNames over HTTP ends records with LF; these rows hold no line break.
      clientCsv: async (sql) => (await adminQuery(`${sql} FORMAT CSVWithNames`)).replace(/\n/g, '\r\n'),
      running: async (marker) =>
        Number(await adminQuery(`SELECT count() FROM system.processes WHERE query LIKE '%${marker}%' AND query NOT LIKE '%system.processes%'`)),
      countAction: async (action) => Number(await adminQuery(`SELECT count() FROM audit_log WHERE action = '${action}'`)),
      removeAction: async (action) => {
        await adminQuery(`ALTER TABLE audit_log DELETE WHERE action = '${action}'`);
      },
    }),
  );
});
