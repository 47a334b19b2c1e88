import { describe, expect, test } from 'vitest';
import { checkReadOnlyStatement, ReadOnlyViolation } from '../../../../src/tools/database/sql/statement-check.js';
import { ENGINES } from '../../../../src/tools/database/types.js';
import { benignCorpus, mutationCorpus } from '../corpus.js';

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

  test("the Python original's escape statement is refused for being several statements", () => {
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
    expect(() => checkReadOnlyStatement("SELECT pg_read_file('/etc/passwd')", 'postgres')).toThrow(
      /the function pg_read_file\(\) \(at character 8\) has side effects/,
    );
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

describe('the lexer reads text the way each engine does (red-team findings)', () => {
  test('only ASCII whitespace separates tokens; other characters are part of a name, as the engines read them', () => {
    expect(checkReadOnlyStatement('SELECT 1 AS \u00a0x', 'postgres').sql).toBe('SELECT 1 AS \u00a0x');
    // "\u00a0$a$" is a name for PostgreSQL, not the start of a dollar quote.
    expect(() => checkReadOnlyStatement('SELECT 1 AS \u00a0$a$, pg_sleep(0), pg_advisory_lock(1) AS \u00a0$a$', 'postgres')).toThrow(/pg_advisory_lock\(\)/);
  });

  test('a carriage return ends a "--" comment for PostgreSQL, not for SQLite or MySQL, and is refused where unknown', () => {
    expect(() => checkReadOnlyStatement('SELECT 1 --\r, pg_advisory_lock(1)\n', 'postgres')).toThrow(/pg_advisory_lock/);
    expect(checkReadOnlyStatement('SELECT 1 --\r, load_extension(1)\n', 'sqlite').sql).toBe('SELECT 1');
    expect(checkReadOnlyStatement('SELECT 1 --\r, LOAD_FILE(1)\n', 'mysql').sql).toBe('SELECT 1');
    for (const engine of ['oracle', 'vertica'] as const) {
      expect(() => checkReadOnlyStatement('SELECT 1 --\r x\nFROM dual', engine)).toThrow(/carriage return inside the line comment/);
      expect(checkReadOnlyStatement('SELECT 1 -- x\r\nFROM dual', engine).sql).toBe('SELECT 1 -- x\r\nFROM dual');
    }
  });

  test('MySQL: "--" followed by DEL is a comment; followed by a non-ASCII character it is refused as ambiguous', () => {
    expect(checkReadOnlyStatement('SELECT 1 --\x7f DELETE', 'mysql').sql).toBe('SELECT 1');
    expect(() => checkReadOnlyStatement('SELECT 1 --\u00a0x', 'mysql')).toThrow(/may or may not start a comment/);
  });

  test('dollar-quote tags of any length are read as PostgreSQL reads them', () => {
    const tag = `$${'t'.repeat(5000)}$`;
    expect(checkReadOnlyStatement(`SELECT ${tag}'; DELETE FROM t ${tag} AS s`, 'postgres').sql).toBe(`SELECT ${tag}'; DELETE FROM t ${tag} AS s`);
  });

  test('U&"..." names with escapes and UESCAPE are refused; a plain U&"..." name is fine', () => {
    expect(() => checkReadOnlyStatement('SELECT U&"pg\\005fadvisory\\005flock"(1)', 'postgres')).toThrow(/U&"..." identifier with escapes/);
    expect(() => checkReadOnlyStatement('SELECT U&"x" UESCAPE \'!\'', 'vertica')).toThrow(/UESCAPE/);
    expect(checkReadOnlyStatement('SELECT 1 AS U&"plain"', 'postgres').sql).toBe('SELECT 1 AS U&"plain"');
  });

  test('a megabyte of text is checked in linear time', () => {
    const inputs = [
      'SELECT 1 ' + '--x\n'.repeat(250_000),
      'SELECT ' + '$a '.repeat(300_000),
      `SELECT 1 ${'/* x */'.repeat(150_000)}`,
      `SELECT $a$${'x'.repeat(1_000_000)}`,
    ];
    for (const sql of inputs) {
      const started = performance.now();
      try {
        checkReadOnlyStatement(sql, 'postgres');
      } catch (error) {
        expect(error).toBeInstanceOf(ReadOnlyViolation);
      }
      expect(performance.now() - started).toBeLessThan(20_000); // quadratic work on a megabyte would take hours
    }
  });
});

describe('keywords judged by their role in the statement (issue: reads refused for a word)', () => {
  const explainForms: Record<string, string[]> = {
    postgres: [
      'EXPLAIN ',
      'EXPLAIN ANALYZE ',
      'EXPLAIN ANALYSE VERBOSE ',
      'EXPLAIN (ANALYZE) ',
      'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ',
      'explain (analyze true, costs off) ',
    ],
    mysql: [
      'EXPLAIN ',
      'EXPLAIN ANALYZE ',
      'EXPLAIN FORMAT=JSON ',
      'EXPLAIN EXTENDED ',
      'DESCRIBE ',
      'DESC ',
      'ANALYZE ',
      'ANALYZE FORMAT=JSON ',
      'EXPLAIN ANALYZE FORMAT=TREE ',
    ],
    sqlite: ['EXPLAIN ', 'EXPLAIN QUERY PLAN '],
    vertica: ['EXPLAIN ', 'EXPLAIN LOCAL VERBOSE '],
  };

  test.each(Object.entries(explainForms))(
    '%s: every EXPLAIN form of every corpus mutation is refused; of every benign SELECT/WITH it is allowed',
    (engine, forms) => {
      const typed = engine as 'postgres' | 'mysql' | 'sqlite' | 'vertica';
      for (const form of forms) {
        for (const sql of mutationCorpus(typed)) {
          expect(() => checkReadOnlyStatement(form + sql, typed), form + sql).toThrow(ReadOnlyViolation);
        }
        for (const sql of benignCorpus(typed).filter((sql) => /^(SELECT|WITH)\b/i.test(sql))) {
          expect(checkReadOnlyStatement(form + sql, typed).sql, form + sql).toContain(sql.replace(/;$/, ''));
        }
      }
    },
  );

  test('EXPLAIN of a write names what was refused and why', () => {
    expect(() => checkReadOnlyStatement('EXPLAIN DELETE FROM t', 'postgres')).toThrow(
      /^refused: EXPLAIN of DELETE is not allowed in read-only mode; EXPLAIN takes only a query \(SELECT, WITH, VALUES, TABLE\) that is itself allowed/,
    );
    expect(() => checkReadOnlyStatement('ANALYZE TABLE t', 'mysql')).toThrow('refused: ANALYZE TABLE updates the table statistics, which is a write');
    expect(() => checkReadOnlyStatement('EXPLAIN (ANALYZE, DELETE) SELECT 1', 'postgres')).toThrow(/EXPLAIN \(\.\.\.\) takes options/);
  });

  test('the word after SHOW is what is shown; the rest is read like a query', () => {
    for (const object of ['TABLE t', 'VIEW v', 'PROCEDURE p', 'FUNCTION f', 'TRIGGER tr', 'EVENT e', 'DATABASE d', 'USER u', 'SEQUENCE s']) {
      expect(checkReadOnlyStatement(`SHOW CREATE ${object}`, 'mysql').leadingKeyword).toBe('SHOW');
    }
    expect(() => checkReadOnlyStatement("SHOW TABLES WHERE LOAD_FILE('/etc/passwd') IS NOT NULL", 'mysql')).toThrow(/load_file\(\)/);
    expect(() => checkReadOnlyStatement('SHOW TABLES WHERE 1 IN (SELECT 1 INTO @x)', 'mysql')).toThrow(/INTO/);
  });

  test('TRUNCATE and INSERT are functions only where MySQL has them and only when called', () => {
    expect(checkReadOnlyStatement('SELECT TRUNCATE(1.223, 1), `insert`(1)', 'mysql').leadingKeyword).toBe('SELECT');
    expect(() => checkReadOnlyStatement('SELECT truncate FROM t', 'mysql')).toThrow(/TRUNCATE/);
    expect(() => checkReadOnlyStatement('SELECT TRUNCATE(1.2, 1)', 'postgres')).toThrow(/TRUNCATE/);
    expect(() => checkReadOnlyStatement("SELECT INSERT('a', 1, 1, 'b')", 'sqlite')).toThrow(/INSERT/);
  });

  test('ts_rewrite: three arguments are constant tsqueries, two are SQL text; nested calls are counted at their own level', () => {
    expect(checkReadOnlyStatement("SELECT ts_rewrite(ts_rewrite('a'::tsquery, 'a', 'b'), to_tsquery('b'), 'c'::tsquery)", 'postgres').leadingKeyword).toBe(
      'SELECT',
    );
    expect(() => checkReadOnlyStatement("SELECT ts_rewrite('a'::tsquery, f('x', 'y'))", 'postgres')).toThrow(/ts_rewrite\(\)/);
    expect(() => checkReadOnlyStatement("SELECT ts_rewrite(ts_rewrite('a'::tsquery, 'a', 'b'), 'SELECT 1')", 'postgres')).toThrow(/ts_rewrite\(\)/);
    expect(() => checkReadOnlyStatement('SELECT ts_rewrite()', 'postgres')).toThrow(/ts_rewrite\(\)/);
  });

  test('CHECKSUM TABLE and HELP take names and one topic only', () => {
    expect(checkReadOnlyStatement('checksum table a, `b`.c quick', 'mysql').leadingKeyword).toBe('CHECKSUM');
    expect(checkReadOnlyStatement("HELP 'contents'", 'mysql').leadingKeyword).toBe('HELP');
    for (const sql of ['CHECKSUM TABLE', 'CHECKSUM TABLE a QUICK EXTENDED', 'CHECKSUM TABLE a, (SELECT 1)', 'HELP 1', 'HELP (SELECT 1)']) {
      expect(() => checkReadOnlyStatement(sql, 'mysql'), sql).toThrow(ReadOnlyViolation);
    }
    expect(() => checkReadOnlyStatement('CHECKSUM TABLE a', 'postgres')).toThrow(/CHECKSUM statements are not allowed/);
  });
});
