import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { closeAllDatabaseConnections, driverFor } from '../../../src/tools/database/connections.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor } from './helpers.js';

function makeDb(path: string, label: string): void {
  const db = new Database(path);
  db.exec(`CREATE TABLE t (label TEXT); INSERT INTO t VALUES ('${label}');`);
  db.close();
}

afterEach(() => closeAllDatabaseConnections());

describe('connection reuse', () => {
  const options = { readOnly: true, signal: new AbortController().signal };

  test('one alias for two different databases in one process gives two connections', async () => {
    const dir = makeTempDir();
    makeDb(join(dir, 'one.db'), 'first');
    makeDb(join(dir, 'two.db'), 'second');
    const [first] = configsFor([`shop=${join(dir, 'one.db')}`], dir);
    const [second] = configsFor([`shop=${join(dir, 'two.db')}`], dir);
    const a = await driverFor(first!, true);
    const b = await driverFor(second!, true);
    await a.connect(options.signal);
    await b.connect(options.signal);
    expect((await a.query('SELECT label FROM t', 10, options)).rows).toEqual([['first']]);
    expect((await b.query('SELECT label FROM t', 10, options)).rows).toEqual([['second']]);
  });

  test('the same database and mode reuse one connection', async () => {
    const dir = makeTempDir();
    makeDb(join(dir, 'one.db'), 'first');
    const [config] = configsFor([`shop=${join(dir, 'one.db')}`], dir);
    expect(await driverFor(config!, true)).toBe(await driverFor({ ...config! }, true));
    expect(await driverFor(config!, true)).not.toBe(await driverFor(config!, false));
  });
});
