import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, test } from 'vitest';
import { CsvExportFile, ReplacedTempFile } from '../../../src/tools/database/csv.js';
import { SqliteProcessDriver } from '../../../src/tools/database/drivers/sqlite-process.js';
import { makeTempDir } from '../../support/context.js';
import { configsFor } from './helpers.js';

/**
 * The export file's last step and the SQLite process's first: what is linked into place must be
 * the very file that was written (the link is by name), and a SQLite process whose database could
 * not be opened is not kept for the next call.
 */

describe('an export file is put in place only if it is the file written', () => {
  test('a temporary file renamed away and replaced before the link: refused, no target, the written file is not passed off as another', async () => {
    const dir = makeTempDir();
    const target = join(dir, 'out.csv');
    const file = await CsvExportFile.create(target, { showProgress: false });
    file.setColumns(['a', 'b']);
    await file.writeRows([
      [1n, 'x'],
      [2n, 'y'],
    ]);
    const temp = readdirSync(dir).find((name) => name.endsWith('.tmp'))!;
    expect(temp).toMatch(/^\.out\.csv\.quarry-\d+-[0-9a-f]+\.tmp$/);
    renameSync(join(dir, temp), join(dir, 'stolen'));
    writeFileSync(join(dir, temp), 'a,b\r\nPLANTED,1\r\n');
    await expect(file.commit()).rejects.toBeInstanceOf(ReplacedTempFile);
    expect(readdirSync(dir).sort()).toEqual(['stolen']);
  });

  test('left alone, the same file is put in place whole', async () => {
    const dir = makeTempDir();
    const file = await CsvExportFile.create(join(dir, 'out.csv'), { showProgress: false });
    file.setColumns(['a', 'b']);
    await file.writeRows([[1n, 'x, y']]);
    const summary = await file.commit();
    expect(summary).toMatchObject({ rows: 1, bytes: 15, columns: ['a', 'b'] });
    expect(readFileSync(join(dir, 'out.csv'), 'utf8')).toBe('a,b\r\n1,"x, y"\r\n');
    expect(readdirSync(dir)).toEqual(['out.csv']);
  });
});

describe('a SQLite process that could not open its database', () => {
  test('is not kept: once the file is back, the next call opens it', async () => {
    const dir = makeTempDir();
    const path = join(dir, 'later.db');
    const db = new Database(path);
    db.exec("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('back')");
    db.close();
    const driver = new SqliteProcessDriver(configsFor([`later=${path}`], dir)[0]!, true);
    // Moved away before the first call (a file being replaced, a disk not yet mounted).
    renameSync(path, join(dir, 'away.db'));
    const options = { readOnly: true, signal: new AbortController().signal };
    try {
      await expect(driver.query('SELECT v FROM t', 10, options)).rejects.toThrow(/later\.db|unable to open|no such file/i);
      renameSync(join(dir, 'away.db'), path);
      expect((await driver.query('SELECT v FROM t', 10, options)).rows).toEqual([['back']]);
    } finally {
      await driver.close();
    }
  });
});
