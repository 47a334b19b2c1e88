import mysql from 'mysql2/promise';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { appendLimit, MysqlDriver } from '../../../src/tools/database/drivers/mysql.js';
import { TEST_DB_PASSWORD } from '../../support/servers.js';
import { makeTempDir } from '../../support/context.js';
import { driverContract } from './contract/driver-contract.js';
import { configsFor, makeRunner, requireEnv } from './helpers.js';

let admin: mysql.Connection;
let dir: string;
let runner: ReturnType<typeof makeRunner>;
let url: string;

/** Data, schema and auto-increment counters, as one comparable value. */
async function snapshot(): Promise<string> {
  const [rows] = await admin.query(
    `
    SELECT CONCAT_WS('#',
      (SELECT GROUP_CONCAT(CONCAT_WS('|', id, name, email, IFNULL(note, 'NULL'), created_at) ORDER BY id SEPARATOR ';') FROM customers),
      (SELECT GROUP_CONCAT(CONCAT_WS('|', id, customer_id, action, update_count, IFNULL(note, 'NULL')) ORDER BY id SEPARATOR ';') FROM audit_log),
      (SELECT GROUP_CONCAT(CONCAT_WS('.', table_name, column_name, column_type) ORDER BY table_name, column_name SEPARATOR ';') FROM ` +
      `information_schema.columns WHERE table_schema = DATABASE()),
      (SELECT GROUP_CONCAT(CONCAT_WS(':', table_name, table_type, IFNULL(auto_increment, '-')) ORDER BY table_name SEPARATOR ';') FROM ` +
      `information_schema.tables WHERE table_schema = DATABASE())
    ) AS state`,
  );
  return String((rows as { state: string }[])[0]!.state);
}

beforeAll(async () => {
  url = requireEnv('QUARRY_TEST_MYSQL_URL');
  admin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'), multipleStatements: true });
  await admin.query(
    `
    DROP TABLE IF EXISTS audit_log, customers, big;
    CREATE TABLE customers (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, email VARCHAR(100) UNIQUE, note TEXT, created_at DATE DEFAULT ` +
      `'2024-01-01');
    CREATE TABLE audit_log (id INT AUTO_INCREMENT PRIMARY KEY, customer_id INT, action VARCHAR(20) NOT NULL, update_count INT NOT NULL DEFAULT 0,
      deleted_flag BOOLEAN NOT NULL DEFAULT FALSE, note TEXT, INDEX audit_log_action (action), FOREIGN KEY (customer_id) REFERENCES customers(id));
    INSERT INTO customers (name, email, note, created_at) VALUES ('Ada', 'ada@example.com', NULL, '2024-01-02'), ('Bob', 'bob@example.com', 'line ` +
      `one\\nline two', '2024-02-03'), ('Cyd', 'cyd@example.com', 'a, b', '2024-03-04');
    INSERT INTO audit_log (customer_id, action, update_count, note) VALUES (1, 'DELETE', 3, 'x'), (2, 'UPDATE', 1, NULL), (3, 'INSERT', 0, 'drop table');
    CREATE TABLE big (id INT PRIMARY KEY, label VARCHAR(40), amount DECIMAL(12, 2));
    INSERT INTO big SELECT seq, CONCAT('row ', seq), seq / 4 FROM seq_1_to_20000;
    CREATE OR REPLACE VIEW customer_names AS SELECT name FROM customers;
    CREATE OR REPLACE FUNCTION customer_total() RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM customers);
    CREATE OR REPLACE PROCEDURE customer_count() READS SQL DATA SELECT COUNT(*) FROM customers;
    CREATE OR REPLACE TRIGGER customers_touch BEFORE UPDATE ON customers FOR EACH ROW SET NEW.note = NEW.note;
    CREATE OR REPLACE EVENT quarry_noop ON SCHEDULE AT '2037-01-01 00:00:00' DISABLE DO SELECT 1;
  `,
  );
  dir = makeTempDir();
  runner = makeRunner(configsFor([`my=${url}`], dir), dir);
});

afterAll(async () => {
  await admin?.end();
});

driverContract(
  {
    tool: 'mysql',
    exact: {
      sql: "SELECT CAST('12345678901234567890.123456789' AS DECIMAL(40, 9)) AS n, 9223372036854775807 AS b, DATE '2024-02-29' AS d, NULL AS z",
      line: '│ 12345678901234567890.123456789 │ 9223372036854775807 │ 2024-02-29 │ NULL │',
    },
    // Other test files may add databases the test user can read, which widens the columns.
    listTables: { shows: [/│ quarry_test +│ audit_log +│ table │/] },
    describe: {
      table: 'audit_log',
      shows: [/│ update_count +│ int\(11\) +│ no +│ 0 +│ +│/, 'primary key: id', /customer_id -> quarry_test\.customers\(id\)/, 'audit_log_action (action)'],
    },
    slow: { sql: 'SELECT SLEEP(20)', marker: 'SELECT SLEEP(20)' },
    failingExport: { sql: 'SELECT id, IF(id = 19000, (SELECT 1 UNION SELECT 2), id) FROM big ORDER BY id' },
    wrongPassword: {
      configs: (target) => configsFor([`bad=${url.replace(encodeURIComponent(TEST_DB_PASSWORD), encodeURIComponent(`${TEST_DB_PASSWORD}x`))}`], target.dir),
      password: TEST_DB_PASSWORD,
      says: "Access denied for user 'quarry_test'",
    },
    insertSays: 'The statement ran and returned no rows (1 row affected).',
  },
  () => ({
    configs: configsFor([`my=${url}`], dir),
    dir,
    snapshot,
    clientCsv: async (sql) => mariadbCsv(sql),
    running: async (marker) => {
      const [rows] = await admin.query('SELECT COUNT(*) AS n FROM information_schema.processlist WHERE info = ? AND id <> CONNECTION_ID()', [marker]);
      return Number((rows as { n: number }[])[0]!.n);
    },
    countAction: async (action) => {
      const [rows] = await admin.query('SELECT COUNT(*) AS n FROM audit_log WHERE action = ?', [action]);
      return Number((rows as { n: number }[])[0]!.n);
    },
    removeAction: async (action) => {
      await admin.query('DELETE FROM audit_log WHERE action = ?', [action]);
    },
  }),
);

/**
 * The statement's rows as the mariadb client prints them (--batch: a header, tab-separated fields,
 * LF-ended lines), as CSV with CRLF-ended records: the rows hold no tab, comma, quote or line break.
 */
function mariadbCsv(sql: string): string {
  const admin = new URL(requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'));
  const printed = execFileSync(
    'mariadb',
    [
      '--no-defaults',
      '--batch',
      '--raw',
      '--host',
      admin.hostname,
      '--port',
      admin.port,
      '--user',
      decodeURIComponent(admin.username),
      `--password=${decodeURIComponent(admin.password)}`,
      decodeURIComponent(admin.pathname.slice(1)),
      '-e',
      sql,
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  return printed.replace(/\t/g, ',').replace(/\n/g, '\r\n');
}

describe('mysql query', () => {
  test('the limit is appended to the statement where it has none of its own: the same rows, in order', async () => {
    const ordered = await runner.run('mysql', { operation: 'query', sql: 'SELECT id, label FROM big ORDER BY amount DESC, id', row_limit: 3 });
    expect(ordered.metadata).toMatchObject({ rows: 3, more: true, columns: ['id', 'label'] });
    expect(ordered.output).toContain('│ 20000 │ row 20000 │');
    expect(ordered.output.indexOf('│ 20000 │')).toBeLessThan(ordered.output.indexOf('│ 19999 │'));
    const own = await runner.run('mysql', { operation: 'query', sql: 'SELECT id FROM big ORDER BY id LIMIT 5' });
    expect(own.metadata).toMatchObject({ rows: 5, more: false });
    const union = await runner.run('mysql', {
      operation: 'query',
      sql: 'SELECT id FROM big WHERE id < 3 UNION ALL SELECT id FROM big WHERE id > 19998 ORDER BY id DESC',
      row_limit: 2,
    });
    expect(union.metadata).toMatchObject({ rows: 2, more: true });
    expect(
      union.output
        .split('\n')
        .filter((line) => line.startsWith('│ '))
        .slice(1)
        .map((line) => line.replace(/[│ ]/g, '')),
    ).toEqual(['20000', '19999']);
    const inner = await runner.run('mysql', { operation: 'query', sql: '(SELECT id FROM big ORDER BY id DESC LIMIT 3)', row_limit: 2 });
    expect(inner.metadata).toMatchObject({ rows: 2, more: true });
  });

  test('appendLimit leaves statements alone where a LIMIT would do more than cut rows', () => {
    expect(appendLimit('SELECT * FROM t -- last line comment', 101)).toBe('SELECT * FROM t -- last line comment\nLIMIT 101');
    expect(appendLimit('WITH x AS (SELECT 1 LIMIT 1) SELECT * FROM x', 11)).toBe('WITH x AS (SELECT 1 LIMIT 1) SELECT * FROM x\nLIMIT 11');
    for (const sql of [
      'SELECT * FROM t LIMIT 5',
      'SELECT * FROM t LIMIT 2, 5',
      'SELECT * FROM t FOR UPDATE',
      'SELECT * FROM t LOCK IN SHARE MODE',
      'SELECT 1 INTO @x',
      'SHOW TABLES',
      'DESCRIBE t',
      'EXPLAIN SELECT 1',
      "SELECT 'unterminated",
    ]) {
      expect(appendLimit(sql, 101), sql).toBeNull();
    }
  });
});

describe('mysql read-only: the engine layer alone (statement check bypassed)', () => {
  const attempts = [
    'DELETE FROM customers',
    "UPDATE customers SET name = 'x'",
    "INSERT INTO customers (name) VALUES ('x')",
    "REPLACE INTO customers (id, name) VALUES (1, 'x')",
    'DELETE FROM audit_log WHERE id = 1',
    // MariaDB's ANALYZE runs the statement it analyses.
    'ANALYZE DELETE FROM customers',
    "ANALYZE FORMAT=JSON UPDATE customers SET name = 'x'",
  ];
  test.each(attempts)('a read-only transaction refuses %j', async (sql) => {
    const [config] = configsFor([url], dir);
    const driver = new MysqlDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await snapshot();
    await expect(driver.query(sql, 10, { readOnly: true, signal })).rejects.toThrow(/READ ONLY transaction/i);
    // The session's transactions default to READ ONLY, so even outside the wrapper the write fails.
    await expect(driver.query(sql, 10, { readOnly: false, signal })).rejects.toThrow(/READ ONLY transaction/i);
    await driver.close();
    expect(await snapshot()).toBe(before);
  });

  test('session state that survives a ROLLBACK is reset after every statement', async () => {
    const [config] = configsFor([url], dir);
    const driver = new MysqlDriver(config!, true);
    const signal = new AbortController().signal;
    const options = { readOnly: true, signal };
    await driver.connect(signal);
    // With the statement check bypassed, each of these would outlive its statement.
    await driver.query("SELECT GET_LOCK('quarry_redteam', 0)", 10, options);
    await driver.query("SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'", 10, options);
    await driver.query('SET @kept = 1', 10, options);
    await driver.query("PREPARE kept FROM 'SELECT 1'", 10, options);
    await driver.query('LOCK TABLES customers READ', 10, options);
    const state = await driver.query(
      "SELECT IS_USED_LOCK('quarry_redteam') IS NULL, @@SESSION.sql_mode LIKE '%ANSI_QUOTES%', @kept IS NULL, @@SESSION.tx_read_only",
      10,
      options,
    );
    expect(state.rows).toEqual([[1, 0, 1, '1']]);
    await expect(driver.query('EXECUTE kept', 10, options)).rejects.toThrow(/Unknown prepared statement/);
    // The table lock is gone: another session can write (and undoes it).
    await admin.query('SET SESSION lock_wait_timeout = 2');
    await admin.query("INSERT INTO audit_log (customer_id, action) VALUES (1, 'lock-probe')");
    await admin.query("DELETE FROM audit_log WHERE action = 'lock-probe'");
    await driver.close();
  });

  test('the driver never sends multiple statements', async () => {
    const [config] = configsFor([url], dir);
    const driver = new MysqlDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await snapshot();
    await expect(driver.query('SELECT 1; DELETE FROM customers', 10, { readOnly: false, signal })).rejects.toThrow(/SQL syntax/);
    await driver.close();
    expect(await snapshot()).toBe(before);
  });
});

describe('mysql read-only: reads the check judges by grammar, with exact results', () => {
  const query = async (sql: string) => {
    const result = await runner.run('mysql', { operation: 'query', sql });
    expect(result.output, sql).not.toMatch(/^refused/);
    expect(result.ok, result.output).toBe(true);
    return result.output;
  };

  test('SHOW CREATE TABLE / VIEW / FUNCTION answer with the definition', async () => {
    const [row] = (await admin.query('SHOW CREATE TABLE customers'))[0] as { 'Create Table': string }[];
    expect(row!['Create Table'].split('\n')[0]).toBe('CREATE TABLE `customers` (');
    expect(await query('SHOW CREATE TABLE customers')).toContain('Table        | customers\nCreate Table | CREATE TABLE `customers` (\n');
    expect(await query('SHOW CREATE VIEW customer_names')).toContain('customer_names');
    expect(await query('SHOW CREATE FUNCTION customer_total')).toContain('customer_total');
  });

  test("TRUNCATE(x, d) and INSERT(str, pos, len, new) are MySQL's functions", async () => {
    expect(await query('SELECT TRUNCATE(1.223, 1) AS t, TRUNCATE(-1.999, 0) AS u')).toContain('│ 1.2 │ -1 │');
    expect(await query("SELECT INSERT('Quadratic', 3, 4, 'What') AS s")).toContain('│ QuWhattic │');
  });

  test('CHECKSUM TABLE gives the checksum the server gives an administrator, and changes nothing', async () => {
    const before = await snapshot();
    const [expected] = (await admin.query('CHECKSUM TABLE customers'))[0] as { Checksum: string | number }[];
    expect(Number(expected!.Checksum)).toBeGreaterThan(0);
    expect(await query('CHECKSUM TABLE customers')).toContain(`│ quarry_test.customers │ ${String(expected!.Checksum)} │`);
    expect(await snapshot()).toBe(before);
  });

  test('ANALYZE SELECT runs the read and reports rows read', async () => {
    expect(await query('ANALYZE SELECT * FROM customers WHERE id > 1')).toMatch(/r_rows/);
    expect(await query('ANALYZE FORMAT=JSON SELECT count(*) FROM audit_log')).toMatch(/r_loops|r_rows/);
  });

  test('the engine layer alone holds for CHECKSUM TABLE, HELP and ANALYZE SELECT: they run in the read-only transaction', async () => {
    const [config] = configsFor([url], dir);
    const driver = new MysqlDriver(config!, true);
    const signal = new AbortController().signal;
    await driver.connect(signal);
    const before = await snapshot();
    for (const sql of ['CHECKSUM TABLE customers, audit_log EXTENDED', "HELP 'SELECT'", 'ANALYZE SELECT * FROM audit_log']) {
      await driver.query(sql, 10, { readOnly: true, signal });
    }
    await driver.close();
    expect(await snapshot()).toBe(before);
  });
});
