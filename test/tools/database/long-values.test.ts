import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../../support/context.js';
import { runQuarry } from '../../support/cli.js';
import { requireEnv } from './helpers.js';

/**
 * What the model asked for is what it sees (docs/guide/databases.md): a result of a few long values
 * (DDL, documents) is shown whole up to the output cap, one field per line; every cut says what
 * was cut and how to get the rest; profile's top values are cut on a character boundary.
 */

const home = makeTempDir('quarry-home-');
const env = { QUARRY_HOME: home, QUARRY_PROFILE: undefined };
let dbPath: string;
/** 60 columns: a DDL of about 3,000 characters, far past a table cell's 200. */
const COLUMNS = Array.from({ length: 60 }, (_, i) => `measurement_column_${i} TEXT NOT NULL DEFAULT 'unknown'`);
const DDL = `CREATE TABLE orders (\n  ${COLUMNS.join(',\n  ')}\n)`;

async function tool(db: string, args: object): Promise<{ code: number | null; output: string }> {
  const result = await runQuarry(['tool', db.startsWith('mysql') ? 'mysql' : 'sqlite', '--db', db, '--args', JSON.stringify(args), '--format', 'json'], {
    env,
  });
  const parsed = JSON.parse(result.stdout) as { output: string };
  return { code: result.code, output: parsed.output };
}

beforeAll(() => {
  dbPath = join(makeTempDir(), 'long.db');
  const db = new Database(dbPath);
  db.exec(DDL);
  db.exec('CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)');
  const insert = db.prepare('INSERT INTO docs (id, body) VALUES (?, ?)');
  insert.run(1, 'x'.repeat(100_000));
  insert.run(2, `line one\nline two\twith a tab ${'y'.repeat(300)}`);
  db.exec('CREATE TABLE tags (label TEXT)');
  const tag = db.prepare('INSERT INTO tags VALUES (?)');
  for (let i = 0; i < 3; i++) tag.run('🎉'.repeat(30));
  for (let i = 0; i < 2; i++) tag.run('');
  tag.run(null);
  db.close();
});

describe('long values through quarry tool sqlite', () => {
  it('shows a DDL from sqlite_master whole, newlines kept, in a vertical layout', async () => {
    const { code, output } = await tool(dbPath, { operation: 'query', sql: "SELECT name, sql FROM sqlite_master WHERE name = 'orders'" });
    expect(code).toBe(0);
    expect(output).toContain('-[ row 1 of 1 ]');
    // Every column definition is there, each on its own line, and the closing parenthesis.
    for (const column of COLUMNS) expect(output).toMatch(new RegExp(`^ +\\| +${column},?$`, 'm'));
    expect(output).toMatch(/^ +\| \)$/m);
    expect(output).not.toContain('…');
  });

  it('cuts a value longer than the output cap on a boundary and says what was cut and how to get the rest', async () => {
    const { code, output } = await tool(dbPath, { operation: 'query', sql: 'SELECT id, body FROM docs ORDER BY id' });
    expect(code).toBe(0);
    expect(Buffer.byteLength(output)).toBeLessThanOrEqual(64 * 1024);
    expect(output).toMatch(/\[cut: [\d,]+ of 65,536\+ characters shown\]/);
    expect(output).toMatch(/cut to fit the 64 KiB output: body \(row 1\).*substr\(\).*export_query/);
    // The second row is still shown, whole, with its newline kept and its tab escaped.
    expect(output).toContain('-[ row 2 of 2 ]');
    expect(output).toMatch(/^body \| line one$/m);
    expect(output).toContain(`line two\\twith a tab ${'y'.repeat(300)}`);
  });

  it('in a table of many rows, names the columns whose values were cut and how to see them whole', async () => {
    const { output } = await tool(dbPath, {
      operation: 'query',
      sql: "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30) SELECT i, printf('%.300c', 'z') AS long_text FROM n",
    });
    expect(output).toMatch(/^┌/);
    expect(output).toContain('values over 200 characters are cut with "…" in "long_text"');
    expect(output).toContain('export_query');
  });

  it("profile cuts top values on a character boundary with '…' and shows empty strings as ''", async () => {
    const result = await runQuarry(
      ['tool', 'sqlite', '--db', dbPath, '--args', JSON.stringify({ operation: 'profile', table_name: 'tags' }), '--format', 'json'],
      { env },
    );
    expect(result.code).toBe(0);
    // The JSON holds no lone surrogate (JSON.stringify would write it as \ud83c).
    expect(result.stdout).not.toMatch(/\\ud8[0-3][0-9a-f]/i);
    const output = (JSON.parse(result.stdout) as { output: string }).output;
    expect(output).toContain(`${'🎉'.repeat(19)}… (3)`);
    expect(output).toContain("'' (2)");
  });
});

describe('long values through quarry tool mysql (MariaDB)', () => {
  let admin: mysql.Connection;
  beforeAll(async () => {
    admin = await mysql.createConnection({ uri: requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL') });
    await admin.query('DROP TABLE IF EXISTS long_ddl');
    await admin.query(DDL.replace('orders', 'long_ddl').replaceAll('TEXT NOT NULL', 'VARCHAR(40) NOT NULL'));
  });
  afterAll(async () => {
    await admin.query('DROP TABLE IF EXISTS long_ddl');
    await admin.end();
  });

  it('SHOW CREATE TABLE shows the whole statement', async () => {
    const { code, output } = await tool(requireEnv('QUARRY_TEST_MYSQL_URL'), { operation: 'query', sql: 'SHOW CREATE TABLE long_ddl' });
    expect(code).toBe(0);
    expect(output).toContain('-[ row 1 of 1 ]');
    for (let i = 0; i < 60; i++) expect(output).toMatch(new RegExp(`\`measurement_column_${i}\` varchar\\(40\\) NOT NULL DEFAULT 'unknown'`));
    expect(output).toMatch(/\) ENGINE=/);
    expect(output).not.toContain('…');
  });
});
