import { EventEmitter } from 'node:events';
import oracledb, { type OracleConnection } from 'oracledb';
import { describe, expect, test } from 'vitest';
import { loadDatabaseConfigs } from '../../../src/config/databases.js';
import { ORACLE_BEGIN_READ_ONLY, ORACLE_SESSION_SETUP, OracleDriver } from '../../../src/tools/database/drivers/oracle.js';
import { VERTICA_BEGIN_READ_ONLY, VERTICA_SESSION_READ_ONLY, VerticaDriver } from '../../../src/tools/database/drivers/vertica.js';
import { explainStatement } from '../../../src/tools/database/catalog/explain.js';
import { listTables, searchCatalog } from '../../../src/tools/database/catalog/search.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor, makeRunner } from './helpers.js';

/**
 * No Oracle or Vertica server can run here: these tests check what the real driver modules
 * would send (the transaction wrapping, the statements) through recording connections, and
 * that the real modules fail cleanly, without the password, when no server answers.
 */

const dir = makeTempDir();
const signal = new AbortController().signal;

function recordingOracleConnection(log: string[]): OracleConnection {
  return {
    callTimeout: 0,
    execute: async (sql: string) => {
      log.push(sql);
      if (sql.startsWith('SELECT')) {
        return {
          resultSet: {
            metaData: [{ name: 'N' }],
            getRows: async (count: number) => {
              log.push(`getRows(${count})`);
              return [['1'], ['2'], ['3']].slice(0, count);
            },
            close: async () => {
              log.push('close resultSet');
            },
          },
        };
      }
      return {};
    },
    commit: async () => {
      log.push('COMMIT');
    },
    rollback: async () => {
      log.push('ROLLBACK');
    },
    break: async () => {
      log.push('BREAK');
    },
    ping: async () => undefined,
    close: async () => {
      log.push('CLOSE');
    },
    isHealthy: () => true,
  };
}

describe('oracle', () => {
  test('oracledb is in thin mode (no client libraries)', () => {
    expect(oracledb.thin).toBe(true);
  });

  test('each statement runs in SET TRANSACTION READ ONLY ... rollback, fetching only limit+1 rows', async () => {
    const log: string[] = [];
    const [config] = loadDatabaseConfigs({ dbFlags: ['ora=oracle://scott:tiger@127.0.0.1:1/XE'], env: {}, cwd: dir });
    const driver = new OracleDriver(config!, true, async () => recordingOracleConnection(log));
    await driver.connect(signal);
    const result = await driver.query('SELECT n FROM t', 2, { readOnly: true, signal });
    expect(result).toEqual({ columns: ['N'], rows: [['1'], ['2']], more: true });
    expect(log).toEqual([...ORACLE_SESSION_SETUP, ORACLE_BEGIN_READ_ONLY, 'SELECT n FROM t', 'getRows(3)', 'close resultSet', 'ROLLBACK']);
  });

  test(
    'search reads ALL_TAB_COLUMNS and the comment views in one statement inside SET TRANSACTION READ ONLY; explain is refused in read-only mode before ' +
      'anything is sent',
    async () => {
      const log: string[] = [];
      const [config] = loadDatabaseConfigs({ dbFlags: ['ora=oracle://scott:tiger@127.0.0.1:1/XE'], env: {}, cwd: dir });
      const driver = new OracleDriver(config!, true, async () => recordingOracleConnection(log));
      await driver.connect(signal);
      const setup = log.length;
      await searchCatalog('oracle', driver, 'customer', 'table', { readOnly: true, signal });
      const sent = log.slice(setup);
      expect(sent[0]).toBe(ORACLE_BEGIN_READ_ONLY);
      expect(sent[1]).toMatch(
        /FROM all_tab_columns c LEFT JOIN all_col_comments cc[\s\S]*o\.kind IN \('table', 'view'\) AND \(INSTR\(LOWER\(COALESCE\(o\.column_name, o\.table_name\)\), :4\) > 0 OR INSTR\(LOWER\(o\.comment_text\), :5\) > 0\)[\s\S]*FETCH FIRST 100 ROWS ONLY$/,
      );
      expect(sent.at(-1)).toBe('ROLLBACK');
      const before = log.length;
      await expect(explainStatement('oracle', driver, 'SELECT * FROM t', { readOnly: true, signal })).rejects.toThrow(
        /explain is not available on Oracle in read-only mode/,
      );
      expect(log.length).toBe(before);
    },
  );

  test('mutations mode commits instead', async () => {
    const log: string[] = [];
    const [config] = loadDatabaseConfigs({ dbFlags: ['ora=oracle://scott:tiger@127.0.0.1:1/XE'], env: {}, cwd: dir });
    const driver = new OracleDriver(config!, false, async () => recordingOracleConnection(log));
    await driver.connect(signal);
    await driver.query('UPDATE t SET n = 1', 10, { readOnly: false, signal });
    expect(log.slice(ORACLE_SESSION_SETUP.length)).toEqual(['UPDATE t SET n = 1', 'COMMIT']);
  });

  test('the real driver reports an unreachable server without the password', async () => {
    const runner = makeRunner(configsFor(['ora=oracle://scott:tig3r-pw@127.0.0.1:1/XE?connect_timeout=2'], dir), dir);
    const result = await runner.run('oracle', { operation: 'query', sql: 'SELECT 1 FROM dual' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/^oracle error \(ora\): /);
    expect(result.output).not.toContain('tig3r-pw');
    const refused = await runner.run('oracle', { operation: 'query', sql: 'SELECT 1 FROM dual; DELETE FROM t' });
    expect(refused.output).toMatch(/^refused: only one statement/);
  });
});

class RecordingVerticaClient extends EventEmitter {
  processID = 1;
  constructor(private readonly log: string[]) {
    super();
  }
  async connect(): Promise<void> {}
  async end(): Promise<void> {}
  cancel(): void {
    this.log.push('CANCEL');
  }
  query(query: unknown): unknown {
    if (typeof query === 'string') {
      this.log.push(query);
      return Promise.resolve({ rows: [], fields: [] });
    }
    if (typeof (query as { on?: unknown }).on !== 'function') {
      // A query config ({text, values}): the promise form, as catalogue statements use it.
      this.log.push((query as { text: string }).text);
      return Promise.resolve({ rows: [], fields: [] });
    }
    const emitter = query as EventEmitter & { text: string };
    this.log.push(emitter.text);
    setImmediate(() => {
      for (const value of ['a', 'b', 'c']) emitter.emit('row', [value], { fields: [{ name: 'v' }] });
      emitter.emit('end', { fields: [{ name: 'v' }] });
    });
    return emitter;
  }
}

describe('vertica', () => {
  test('each statement runs inside START TRANSACTION READ ONLY ... ROLLBACK; the session defaults to read-only', async () => {
    const log: string[] = [];
    const [config] = loadDatabaseConfigs({ dbFlags: ['vdb=vertica://u:pw@127.0.0.1:1/vdb'], env: {}, cwd: dir });
    const driver = new VerticaDriver(config!, true, () => new RecordingVerticaClient(log) as never);
    await driver.connect(signal);
    const result = await driver.query('SELECT v FROM t', 2, { readOnly: true, signal });
    expect(result).toEqual({ columns: ['v'], rows: [['a'], ['b']], more: true });
    expect(log).toEqual(["SET SESSION RUNTIMECAP '120 seconds'", VERTICA_SESSION_READ_ONLY, VERTICA_BEGIN_READ_ONLY, 'SELECT v FROM t', 'CANCEL', 'ROLLBACK']);
  });

  test('search and list_tables read v_catalog in one statement each, inside the read-only transaction', async () => {
    const log: string[] = [];
    const [config] = loadDatabaseConfigs({ dbFlags: ['vdb=vertica://u:pw@127.0.0.1:1/vdb'], env: {}, cwd: dir });
    const driver = new VerticaDriver(config!, true, () => new RecordingVerticaClient(log) as never);
    await driver.connect(signal);
    const setup = log.length;
    const found = await searchCatalog('vertica', driver, 'Region', 'any', { readOnly: true, signal });
    expect(found.text).toBe('No table, view or column name or comment contains "Region".');
    const listed = await listTables('vertica', driver, 'fa%ct%', { readOnly: true, signal });
    expect(listed.text).toBe('No tables or views match "fa%ct%".');
    const sent = log.slice(setup);
    expect(sent).toHaveLength(6);
    expect(sent.filter((_, i) => i % 3 === 0)).toEqual([VERTICA_BEGIN_READ_ONLY, VERTICA_BEGIN_READ_ONLY]);
    expect(sent.filter((_, i) => i % 3 === 2)).toEqual(['ROLLBACK', 'ROLLBACK']);
    expect(sent[1]).toMatch(/FROM v_catalog\.columns c[\s\S]*INSTR\(LOWER\(COALESCE\(o\.column_name, o\.table_name\)\), \?\) > 0[\s\S]*LIMIT 100$/);
    expect(sent[4]).toMatch(/FROM v_catalog\.tables t[\s\S]*WHERE table_name ILIKE \? ORDER BY schema_name, table_name\nLIMIT 200$/);
  });

  test('the real driver reports an unreachable server without the password', async () => {
    const runner = makeRunner(configsFor(['vdb=vertica://u:v3rtica-pw@127.0.0.1:1/vdb?connect_timeout=2'], dir), dir);
    const result = await runner.run('vertica', { operation: 'query', sql: 'SELECT 1' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/^vertica error \(vdb\): cannot connect to 127\.0\.0\.1:1 \(connection refused/);
    expect(result.output).not.toContain('v3rtica-pw');
  });
});
