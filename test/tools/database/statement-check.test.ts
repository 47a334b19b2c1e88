import { describe, expect, test } from 'vitest';
import { checkReadOnlyStatement, ReadOnlyViolation } from '../../../src/tools/database/statement-check.js';
import { ENGINES } from '../../../src/tools/database/types.js';
import { benignCorpus, mutationCorpus } from './corpus.js';

describe.each(ENGINES)('read-only statement check: %s', (engine) => {
  test('the corpus is at least 40 mutation attempts and 25 benign reads', () => {
    expect(mutationCorpus(engine).length).toBeGreaterThanOrEqual(40);
    expect(benignCorpus(engine).length).toBeGreaterThanOrEqual(25);
  });

  test.each(mutationCorpus(engine))('refuses %j', (sql) => {
    expect(() => checkReadOnlyStatement(sql, engine)).toThrow(ReadOnlyViolation);
  });

  test.each(benignCorpus(engine))('allows %j', (sql) => {
    expect(checkReadOnlyStatement(sql, engine).sql.length).toBeGreaterThan(0);
  });
});

describe('what the check returns and says', () => {
  test('the statement to run has no surrounding comments, whitespace or semicolons', () => {
    expect(checkReadOnlyStatement('  -- lead\n/* x */ SELECT 1 -- tail\n ;; ', 'postgres')).toEqual({ sql: 'SELECT 1', leadingKeyword: 'SELECT' });
  });

  test('the §14 statement is refused for being several statements', () => {
    expect(() => checkReadOnlyStatement('SELECT 1 AS "--"; COMMIT; BEGIN READ WRITE; DELETE FROM t', 'postgres')).toThrow(
      'refused: only one statement per call is allowed in read-only mode (found 4, separated by ";"); run them one at a time',
    );
  });

  test('a hidden write names the keyword and its position', () => {
    expect(() => checkReadOnlyStatement('WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d', 'postgres')).toThrow(
      /^refused: DELETE \(at character 12\) can change data or state/,
    );
  });

  test('a side-effect function is named', () => {
    expect(() => checkReadOnlyStatement("SELECT nextval('s')", 'postgres')).toThrow(/NEXTVAL \(at character 8\) advances a sequence/);
    expect(() => checkReadOnlyStatement("SELECT pg_read_file('/etc/passwd')", 'postgres')).toThrow(/the function pg_read_file\(\) \(at character 8\) has side effects/);
  });

  test('a leading keyword that is not a read lists what is allowed', () => {
    expect(() => checkReadOnlyStatement('VACUUM', 'sqlite')).toThrow(
      'refused: VACUUM statements are not allowed in read-only mode; sqlite allows only SELECT, WITH, VALUES, EXPLAIN, PRAGMA (read-only PRAGMAs)',
    );
  });

  test('MySQL executable comments are refused, optimizer hints are not', () => {
    expect(() => checkReadOnlyStatement('SELECT /*!40001 SQL_NO_CACHE */ 1', 'mysql')).toThrow(/executable comments/);
    expect(checkReadOnlyStatement('SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1', 'mysql').sql).toBe('SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1');
  });

  test('MySQL "--" without a following space is an operator, not a comment', () => {
    expect(() => checkReadOnlyStatement('SELECT 1--1; DELETE FROM t', 'mysql')).toThrow(/only one statement/);
    expect(checkReadOnlyStatement('SELECT 1-- 1; DELETE FROM t', 'mysql').sql).toBe('SELECT 1');
  });

  test('a "/*" inside a block comment is refused where engines do not nest comments', () => {
    expect(() => checkReadOnlyStatement('/* /* */ SELECT 1', 'sqlite')).toThrow(/inside a block comment/);
    expect(checkReadOnlyStatement('/* /* */ */ SELECT 1', 'postgres').sql).toBe('SELECT 1');
  });

  test('a quoted column that looks like a keyword is fine; the bare keyword is not', () => {
    expect(checkReadOnlyStatement('SELECT "delete" FROM t', 'postgres').sql).toBe('SELECT "delete" FROM t');
    expect(checkReadOnlyStatement('SELECT t.delete FROM t', 'postgres').sql).toBe('SELECT t.delete FROM t');
    expect(() => checkReadOnlyStatement('SELECT delete FROM t', 'postgres')).toThrow(/quote it as an identifier/);
  });
});
