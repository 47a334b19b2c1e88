import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllDatabaseConnections } from '../../../src/tools/database/connections.js';
import { runQuery } from '../../../src/tools/database/run-query.js';
import type { DatabaseConfig } from '../../../src/tools/database/types.js';
import { ToolError } from '../../../src/tools/core/types.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor } from './helpers.js';
import { createSqliteFixture } from './sqlite-fixture.js';

/**
 * run-query.ts is what the database tool's folder shares with other tools (the chart tool, the
 * knowledge check): one statement, checked when read-only, in its turn, failures worded as the
 * database tools word them. A real SQLite file; effects are read back from the file.
 */

let file: string;
let config: DatabaseConfig;
const signal = () => new AbortController().signal;
const customers = () => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM customers').get() as { n: number }).n;
  } finally {
    db.close();
  }
};

async function failure(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

beforeAll(() => {
  const dir = makeTempDir('quarry-run-query-');
  file = createSqliteFixture(dir);
  config = configsFor([`shop=${file}`], dir)[0]!;
});

afterAll(async () => {
  await closeAllDatabaseConnections();
});

describe('runQuery', () => {
  it('returns at most the limit of rows and says there are more', async () => {
    const result = await runQuery(config, 'SELECT id, name FROM customers ORDER BY id', 2, true, signal(), 'chart query');
    expect(result.columns).toEqual(['id', 'name']);
    expect(result.rows).toEqual([
      [1n, 'Ada'],
      [2n, 'Bob'],
    ]);
    expect(result.more).toBe(true);
  });

  it('read-only: refuses a change before it runs, with the statement check kind; the file is unchanged', async () => {
    const error = await failure(runQuery(config, 'DELETE FROM customers', 10, true, signal(), 'chart query'));
    expect(error.kind).toBe('read_only_violation');
    expect(error.message).toMatch(/^refused: DELETE statements are not allowed in read-only mode/);
    expect(customers()).toBe(3);
  });

  it('not read-only: runs the statement trimmed of its trailing semicolons; the row is in the file', async () => {
    await runQuery(config, "INSERT INTO customers (name) VALUES ('Dee');;  ", 10, false, signal(), 'query');
    expect(customers()).toBe(4);
  });

  it("an engine error is the database tools' wording, naming the engine and the alias", async () => {
    const error = await failure(runQuery(config, 'SELECT * FROM no_such_table', 10, true, signal(), 'chart query'));
    expect(error.kind).toBe('database_error');
    expect(error.message).toBe('sqlite error (shop): no such table: no_such_table');
  });

  it('a stopped call says which operation was stopped', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await failure(runQuery(config, 'SELECT 1', 10, true, controller.signal, 'chart query'));
    expect(error.kind).toBe('cancelled');
    expect(error.message).toBe('cancelled: the sqlite chart query was stopped');
  });
});
