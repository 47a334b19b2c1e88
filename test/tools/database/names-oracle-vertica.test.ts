import { EventEmitter } from 'node:events';
import type { OracleConnection } from 'oracledb';
import { recordingOracleConnection } from './recording-oracle.js';
import { describe, expect, test } from 'vitest';
import { loadDatabaseConfigs } from '../../../src/config/databases.js';
import { withNameSuggestions } from '../../../src/tools/database/catalog/names.js';
import { validateStatement } from '../../../src/tools/database/catalog/validate.js';
import { ORACLE_BEGIN_READ_ONLY, OracleDriver } from '../../../src/tools/database/drivers/oracle.js';
import { VERTICA_BEGIN_READ_ONLY, VerticaDriver } from '../../../src/tools/database/drivers/vertica.js';
import type { DatabaseDriver } from '../../../src/tools/database/types.js';
import { ToolError } from '../../../src/tools/core/types.js';
import { makeTempDir } from '../../support/context.js';

/**
 * Name suggestions and validate on Oracle and Vertica, which cannot run here: recording
 * connections answer as the servers do (their error texts and codes, the catalogue's rows) and
 * record every statement, so the test sees what would reach the server and that it all stays
 * inside the read-only transaction.
 */

const dir = makeTempDir();
const signal = new AbortController().signal;
const options = { readOnly: true, signal };

/** The catalogue both servers answer with: (kind, schema, table, column). */
function catalogueRows(upper: boolean): unknown[][] {
  const name = (text: string) => (upper ? text.toUpperCase() : text);
  const schema = upper ? 'SHOP' : 'public';
  return [
    ['table', schema, name('customers'), null],
    ['column', schema, name('customers'), name('customer_id')],
    ['column', schema, name('customers'), name('customer_name')],
    ['table', schema, name('orders'), null],
    ['column', schema, name('orders'), name('order_id')],
    ['column', schema, name('orders'), name('customer_id')],
  ];
}

function oracleConnection(log: string[]): OracleConnection {
  return recordingOracleConnection(log, async (sql: string) => {
    log.push(sql);
    if (/CUSTMER_NAME/i.test(sql)) throw Object.assign(new Error('ORA-00904: "CUSTMER_NAME": invalid identifier'), { errorNum: 904 });
    if (/CUSTOMRS/i.test(sql)) throw Object.assign(new Error('ORA-00942: table or view does not exist'), { errorNum: 942 });
    if (sql.includes("SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')")) return { rows: [['SHOP']] };
    if (sql.includes('all_tab_columns')) return { rows: catalogueRows(true) };
    if (sql.startsWith('SELECT')) {
      return { resultSet: { metaData: [{ name: 'N' }], getRows: async () => [], close: async () => undefined } };
    }
    return {};
  });
}

class VerticaClient extends EventEmitter {
  processID = 1;
  constructor(private readonly log: string[]) {
    super();
  }
  async connect(): Promise<void> {}
  async end(): Promise<void> {}
  cancel(): void {}
  private answer(text: string): { rows: unknown[][]; fields: [] } {
    if (/custmer_name/.test(text)) throw Object.assign(new Error('Column "custmer_name" does not exist'), { code: '42703' });
    if (/custmers/.test(text)) throw Object.assign(new Error('Relation "custmers" does not exist'), { code: '42V01' });
    if (text.startsWith('EXPLAIN')) return { rows: [[' | +-STORAGE ACCESS for customers [Cost: 12, Rows: 2M (NO STATISTICS)]']], fields: [] };
    if (text.includes('CURRENT_SCHEMA()')) return { rows: [['public']], fields: [] };
    if (text.includes('v_catalog.columns')) return { rows: catalogueRows(false), fields: [] };
    return { rows: [], fields: [] };
  }
  query(query: unknown): unknown {
    const text = typeof query === 'string' ? query : (query as { text: string }).text;
    this.log.push(text);
    if (typeof query !== 'string' && typeof (query as { on?: unknown }).on === 'function') {
      const emitter = query as EventEmitter;
      setImmediate(() => {
        try {
          this.answer(text);
          emitter.emit('end', { fields: [] });
        } catch (error) {
          emitter.emit('error', error);
        }
      });
      return emitter;
    }
    try {
      return Promise.resolve(this.answer(text));
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

async function failure(driver: DatabaseDriver, engine: 'oracle' | 'vertica', sql: string): Promise<string> {
  const error = await driver.query(sql, 10, options).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error, sql).not.toBeNull();
  return ((await withNameSuggestions(engine, driver, error, sql, options)) as Error).message;
}

describe('oracle', () => {
  const setup = async () => {
    const log: string[] = [];
    const [config] = loadDatabaseConfigs({ dbFlags: ['ora=oracle://scott:tiger@127.0.0.1:1/XE'], env: {}, cwd: dir });
    const driver = new OracleDriver(config!, true, async () => oracleConnection(log));
    await driver.connect(signal);
    log.length = 0;
    return { log, driver, config: config! };
  };

  test('ORA-00904 and ORA-00942 get names from ALL_TAB_COLUMNS, read inside SET TRANSACTION READ ONLY', async () => {
    const { log, driver } = await setup();
    expect(await failure(driver, 'oracle', 'SELECT custmer_name FROM customers')).toBe(
      'ORA-00904: "CUSTMER_NAME": invalid identifier; did you mean CUSTOMERS.CUSTOMER_NAME?',
    );
    // ORA-00942 names no table: the statement's FROM names that the catalogue lacks are.
    expect(await failure(driver, 'oracle', 'SELECT * FROM customrs c JOIN orders o ON o.customer_id = c.customer_id')).toBe(
      'ORA-00942: table or view does not exist; CUSTOMRS: did you mean CUSTOMERS?',
    );
    expect(log.filter((sql) => sql === ORACLE_BEGIN_READ_ONLY).length).toBe(log.filter((sql) => sql === 'ROLLBACK').length);
    expect(log.some((sql) => /EXPLAIN PLAN|PLAN_TABLE/.test(sql))).toBe(false);
  });

  test('validate parses a SELECT as SELECT * FROM (...) WHERE 1 = 0 in the read-only transaction, never EXPLAIN PLAN', async () => {
    const { log, driver, config } = await setup();
    const valid = await validateStatement({
      engine: 'oracle',
      config,
      driver,
      sql: 'SELECT customer_name FROM customers -- a comment',
      guard: null,
      options,
    });
    expect(valid.output).toBe(
      'valid; nothing was run\n- statement check: passed (one read-only statement)\n- engine: Oracle parsed the statement and resolved every name (parsed ' +
        'as SELECT * FROM (…) WHERE 1 = 0, which returns no rows; EXPLAIN PLAN would write PLAN_TABLE; nothing was run)\n- query guard: not applied on ' +
        'Oracle (no cheap row estimate)',
    );
    expect(log).toEqual([ORACLE_BEGIN_READ_ONLY, 'SELECT * FROM (SELECT customer_name FROM customers\n) WHERE 1 = 0', 'ROLLBACK']);
    const wrong = await validateStatement({ engine: 'oracle', config, driver, sql: 'SELECT custmer_name FROM customers', guard: null, options }).catch(
      (error: unknown) => error,
    );
    expect(wrong).toBeInstanceOf(ToolError);
    expect((wrong as ToolError).message).toMatch(/^not valid: ORA-00904: "CUSTMER_NAME": invalid identifier; did you mean CUSTOMERS\.CUSTOMER_NAME\?\n/);
  });
});

describe('vertica', () => {
  const setup = async () => {
    const log: string[] = [];
    const [config] = loadDatabaseConfigs({ dbFlags: ['vdb=vertica://u:pw@127.0.0.1:1/vdb'], env: {}, cwd: dir });
    const driver = new VerticaDriver(config!, true, () => new VerticaClient(log) as never);
    await driver.connect(signal);
    log.length = 0;
    return { log, driver, config: config! };
  };

  test('unknown columns and relations (42703, 42V01) get names from v_catalog, inside START TRANSACTION READ ONLY', async () => {
    const { log, driver } = await setup();
    expect(await failure(driver, 'vertica', 'SELECT c.custmer_name FROM customers c')).toBe(
      'Column "custmer_name" does not exist; did you mean customers.customer_name?',
    );
    expect(await failure(driver, 'vertica', 'SELECT * FROM custmers')).toBe('Relation "custmers" does not exist; did you mean customers?');
    expect(log.filter((sql) => sql === VERTICA_BEGIN_READ_ONLY).length).toBe(log.filter((sql) => sql === 'ROLLBACK').length);
  });

  test('validate: one EXPLAIN gives the parse and the guard estimate', async () => {
    const { log, driver, config } = await setup();
    const guard = { max_estimated_rows: 1_000_000, action: 'refuse' as const };
    const valid = await validateStatement({ engine: 'vertica', config, driver, sql: 'SELECT customer_name FROM customers', guard, options });
    expect(valid.output).toContain(
      "- query guard: the plan estimates 2,000,000 rows read from customers, over this profile's limit of 1,000,000: query and export_query would be refused",
    );
    expect(log).toEqual([VERTICA_BEGIN_READ_ONLY, 'EXPLAIN SELECT customer_name FROM customers', 'ROLLBACK']);
    const wrong = await validateStatement({ engine: 'vertica', config, driver, sql: 'SELECT custmer_name FROM customers', guard, options }).catch(
      (error: unknown) => error,
    );
    expect((wrong as ToolError).message).toMatch(/^not valid: Column "custmer_name" does not exist; did you mean customers\.customer_name\?\n/);
  });
});
