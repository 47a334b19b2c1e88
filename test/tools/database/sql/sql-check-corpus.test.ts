import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeTempDir } from '../../../support/context.js';

/**
 * scripts/sql-check-corpus.mjs reads real test suites in their own formats; these small files,
 * written for this test, exercise each reader (psql meta-commands and COPY data, mysqltest
 * commands and delimiters, sqllogictest directives, Spider JSON) and the counts it prints.
 * It loads the check from dist/, so `npm run build` first.
 */

const SCRIPT = join(import.meta.dirname, '../../../../scripts/sql-check-corpus.mjs');

function run(...args: string[]) {
  const result = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

function corpus(files: Record<string, string>): string {
  const dir = makeTempDir();
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

describe('the corpus measurement script', () => {
  test('postgres: a psql script with meta-commands, \\gset and COPY data', () => {
    const dir = corpus({
      'regress.sql': [
        '-- comment',
        'SELECT 1;',
        '\\set x 1',
        "SELECT 'a;b' AS s \\gset",
        'EXPLAIN ANALYZE SELECT * FROM t;',
        'COPY t FROM stdin;',
        '1\t2',
        '\\.',
        'SELECT $$;$$;',
        'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d;',
        "SELECT nextval('s');",
        'INSERT INTO t VALUES (1);',
        '',
      ].join('\n'),
    });
    const result = run('--engine', 'postgres', dir);
    expect(result).toMatchObject({ status: 0, signal: null, stderr: '' });
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^postgres: 8 distinct statements, 6 reads, 2 refused \(33\.33%\) by .*statement-check\.js$/);
    expect(lines.filter((line) => /^ {6}1 {2}refused/.test(line)).sort()).toEqual([
      '      1  refused: DELETE  can change data or state, and read-only mode allows no writes, locks or transaction control i',
      '      1  refused: NEXTVAL  advances a sequence, which is a write',
    ]);
  });

  test('mysql: mysqltest commands, variables and a changed delimiter are not statements', () => {
    const dir = corpus({
      'show.test': [
        '--source include/have_innodb.inc',
        '--disable_warnings',
        'DROP TABLE IF EXISTS t1;',
        '--enable_warnings',
        '# a comment',
        'SHOW CREATE TABLE t1;',
        "SELECT TRUNCATE(1.5, 0), INSERT('ab', 1, 1, 'x');",
        'let $x = 1;',
        'eval SELECT $x;',
        'delimiter |;',
        'CREATE PROCEDURE p() BEGIN SELECT 1; END|',
        'delimiter ;|',
        '--error 1064',
        "SELECT 1 INTO OUTFILE '/tmp/x';",
        'CHECKSUM TABLE t1;',
        '',
      ].join('\n'),
    });
    const result = run('--engine', 'mysql', dir, '--show', '1');
    expect(result).toMatchObject({ status: 0, signal: null, stderr: '' });
    expect(result.stdout.split('\n')[0]).toMatch(/^mysql: 6 distinct statements, 4 reads, 1 refused \(25\.00%\)/);
    expect(result.stdout).toContain("           e.g. SELECT 1 INTO OUTFILE '/tmp/x'");
  });

  test('sqlite: sqllogictest directives and Spider JSON; --spider-tables prepares gold SQL with and without double-quoted strings', () => {
    const dir = corpus({
      'select.test': [
        'statement ok',
        'CREATE TABLE t1(a INTEGER)',
        '',
        'query I rowsort',
        'SELECT a FROM t1 WHERE a = "x"',
        '----',
        '',
        'onlyif mysql',
        'query I',
        'SELECT 1 FROM t1 LOCK IN SHARE MODE',
        '----',
        '1',
        '',
        'skipif sqlite',
        'query I',
        'SELECT 2',
        '----',
        '2',
        '',
        'query I nosort',
        'SELECT 3',
        '----',
        '3',
        '',
      ].join('\n'),
      'dev.json': JSON.stringify([
        { db_id: 'w', query: 'SELECT name FROM country WHERE GovernmentForm = "Republic"' },
        { db_id: 'w', query: 'SELECT name FROM country' },
        { db_id: 'w', query: 'SELECT nope FROM country' },
        { db_id: 'w', query: 'SELECT 1; DROP TABLE country' },
      ]),
    });
    const checked = run('--engine', 'sqlite', dir);
    expect(checked).toMatchObject({ status: 0, signal: null, stderr: '' });
    expect(checked.stdout.split('\n')[0]).toMatch(/^sqlite: 7 distinct statements, 6 reads, 1 refused \(16\.67%\)/);
    expect(checked.stdout).toContain('refused: only one statement per call is allowed in read-only mode');

    const tables = join(makeTempDir(), 'tables.json');
    writeFileSync(
      tables,
      JSON.stringify([
        {
          db_id: 'w',
          table_names_original: ['country'],
          column_names_original: [
            [-1, '*'],
            [0, 'name'],
            [0, 'GovernmentForm'],
          ],
          column_types: ['text', 'text', 'text'],
        },
      ]),
    );
    const before = readdirSync(dir).sort();
    const prepared = run('--engine', 'sqlite', '--spider-tables', tables, join(dir, 'dev.json'));
    expect(prepared).toMatchObject({ status: 0, signal: null, stderr: '' });
    expect(prepared.stdout).toBe(
      '4 statements prepared against their schemas: 3 (75.0%) fail as written, 2 (50.0%) with double-quoted strings accepted\n' +
        '      1  no such column\n      1  The supplied SQL string contains more than one statement\n',
    );
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  test('bad arguments: a usage line and exit code 2', () => {
    for (const args of [[], ['--engine', 'nosql', '.'], ['--engine', 'sqlite']]) {
      const result = run(...args);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/^usage: node scripts\/sql-check-corpus\.mjs --engine/);
      expect(result.stdout).toBe('');
    }
    const missing = run('--engine', 'sqlite', '/nonexistent/quarry-corpus');
    expect(missing).toMatchObject({ status: 2, stdout: '', stderr: 'sql-check-corpus: /nonexistent/quarry-corpus does not exist\n' });
    const empty = join(makeTempDir(), 'empty');
    mkdirSync(empty);
    expect(run('--engine', 'mysql', empty)).toMatchObject({
      status: 0,
      stdout: expect.stringMatching(/^mysql: 0 distinct statements, 0 reads, 0 refused \(0\.00%\)/),
    });
  });
});
