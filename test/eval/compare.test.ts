import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalValue, compareResults, resultSignature } from '../../src/eval/compare.js';
import { extractFinalSql, vote, type AttemptResult } from '../../src/eval/runner.js';
import { loadSuite, parseCsv } from '../../src/eval/suite.js';
import { makeTempDir } from '../support/context.js';

describe('execution accuracy rules', () => {
  it('set (BIRD): order and duplicates ignored, values only', () => {
    expect(compareResults([[1], [2], [2]], [[2], [1]], 'set').equal).toBe(true);
    expect(compareResults([[1], [2]], [[1], [3]], 'set').equal).toBe(false);
    expect(compareResults([], [], 'set').equal).toBe(true);
    expect(compareResults([[1]], [], 'set')).toEqual({ equal: false, reason: '1 distinct rows, expected 0' });
  });

  it('multiset: duplicates count, order does not', () => {
    expect(compareResults([[2], [1], [2]], [[2], [2], [1]], 'multiset').equal).toBe(true);
    expect(compareResults([[1], [2], [2]], [[1], [1], [2]], 'multiset').equal).toBe(false);
    expect(compareResults([[1], [2]], [[1], [2], [2]], 'multiset').equal).toBe(false);
  });

  it('ordered: the same rows in the same order', () => {
    expect(
      compareResults(
        [
          [1, 'a'],
          [2, 'b'],
        ],
        [
          [1, 'a'],
          [2, 'b'],
        ],
        'ordered',
      ).equal,
    ).toBe(true);
    expect(
      compareResults(
        [
          [2, 'b'],
          [1, 'a'],
        ],
        [
          [1, 'a'],
          [2, 'b'],
        ],
        'ordered',
      ),
    ).toEqual({ equal: false, reason: 'row 1 differs' });
  });

  it('NULLs equal only NULLs; numbers compare like Python (1 == 1.0 == True, "12.50" == 12.5)', () => {
    expect(compareResults([[null]], [[null]], 'set').equal).toBe(true);
    expect(compareResults([[null]], [['']], 'set').equal).toBe(false);
    expect(compareResults([[null]], [[0]], 'set').equal).toBe(false);
    expect(compareResults([[1]], [[1.0]], 'ordered').equal).toBe(true);
    expect(compareResults([[true]], [[1]], 'ordered').equal).toBe(true);
    expect(compareResults([['12.50']], [[12.5]], 'ordered').equal).toBe(true);
    expect(compareResults([[10n]], [[10]], 'ordered').equal).toBe(true);
    // Text that only looks numeric with leading zeros stays text.
    expect(compareResults([['007']], [[7]], 'ordered').equal).toBe(false);
    expect(compareResults([['1']], [['one']], 'ordered').equal).toBe(false);
    // Big integers beyond 2^53 stay exact.
    expect(compareResults([[9007199254740993n]], [['9007199254740993']], 'ordered').equal).toBe(true);
    expect(compareResults([[9007199254740993n]], [['9007199254740992']], 'ordered').equal).toBe(false);
  });

  it('floats within a tolerance, on every rule', () => {
    expect(compareResults([[0.1 + 0.2]], [[0.3]], 'ordered').equal).toBe(false);
    expect(compareResults([[0.1 + 0.2]], [[0.3]], 'ordered', 1e-9).equal).toBe(true);
    expect(compareResults([[3.14159], [2.71828]], [[2.7183], [3.1416]], 'multiset', 1e-3).equal).toBe(true);
    expect(compareResults([[3.14159], [2.71828]], [[2.7183], [3.1416]], 'multiset', 1e-6).equal).toBe(false);
    expect(compareResults([[1.0001], [1.0001]], [[1]], 'set', 0.01).equal).toBe(true);
  });

  it('column names are never compared (rows are plain values)', () => {
    // The runner passes values only: equal values under other names are equal.
    expect(compareResults([['Ada', 3]], [['Ada', 3]], 'set').equal).toBe(true);
    expect(compareResults([['Ada', 3]], [[3, 'Ada']], 'set').equal).toBe(false);
  });

  it('canonical values: dates, buffers, NaN', () => {
    expect(canonicalValue(new Date('2024-02-29T00:00:00Z'))).toBe('2024-02-29T00:00:00.000Z');
    expect(canonicalValue(Buffer.from([1, 255]))).toBe('0x01ff');
    expect(canonicalValue(Number.NaN)).toBe('NaN');
    expect(canonicalValue('-0.5')).toBe(-0.5);
  });

  it('voting groups equal results and takes the largest group (ties: earliest)', () => {
    const attempt = (sql: string, rows: unknown[][], correct: boolean): AttemptResult => ({
      status: 'completed',
      sql,
      sql_source: 'answer',
      correct,
      turns: 1,
      tool_calls: 1,
      usage: { input_tokens: 0, output_tokens: 0, cached_tokens: 0 },
      duration_ms: 1,
      session_id: 'x',
      signature: resultSignature(rows),
    });
    const wrong = attempt('SELECT 2', [[2]], false);
    const right = attempt('SELECT 1', [[1]], true);
    const rightAgain = attempt('SELECT 1 AS one', [[1], [1]], true);
    expect(vote([wrong, right, rightAgain])).toEqual({ sql: 'SELECT 1', correct: true, votes: 2, groups: 2 });
    expect(vote([wrong, right])).toEqual({ sql: 'SELECT 2', correct: false, votes: 1, groups: 2 });
    const failed: AttemptResult = { ...wrong, signature: undefined, error: 'predicted SQL failed' };
    expect(vote([failed, failed])).toEqual({ sql: null, correct: false, votes: 0, groups: 0 });
  });

  it('takes the last fenced sql block of an answer', () => {
    expect(extractFinalSql('First\n```sql\nSELECT 1\n```\nthen\n```SQL\nSELECT 2;\n```\n')).toBe('SELECT 2;');
    expect(extractFinalSql('```python\nprint(1)\n```')).toBeNull();
    expect(extractFinalSql('no code')).toBeNull();
  });

  it('reads CSV with quotes, doubled quotes, CRLF and a final line without a newline', () => {
    expect(parseCsv('a,b\r\n"x, y","say ""hi"""\r\n1,\n2,3')).toEqual([
      ['a', 'b'],
      ['x, y', 'say "hi"'],
      ['1', ''],
      ['2', '3'],
    ]);
  });
});

describe('suite files', () => {
  const dir = makeTempDir('quarry-eval-suites-');
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('loads BIRD, Spider and quarry YAML into one shape', () => {
    const bird = loadSuite(
      write('b.json', JSON.stringify([{ question_id: 7, db_id: 'shop', question: 'How many?', evidence: 'x means y', SQL: 'SELECT 1', difficulty: 'simple' }])),
      dir,
    );
    expect(bird).toMatchObject({
      format: 'bird',
      defaultRule: 'set',
      questions: [{ id: '7', database: 'shop', evidence: 'x means y', expected: { kind: 'sql', sql: 'SELECT 1' }, difficulty: 'simple' }],
    });
    const spider = loadSuite(
      write(
        's.json',
        JSON.stringify([
          { db_id: 'shop', question: 'Q1', query: 'SELECT 1' },
          { db_id: 'shop', question: 'Q2', query: 'SELECT 2' },
        ]),
      ),
      dir,
    );
    expect(spider.questions.map((question) => question.id)).toEqual(['0', '1']);
    expect(spider.format).toBe('spider');
    write('expected.csv', 'name,total\r\nAda,3\r\n');
    const yaml = loadSuite(
      write(
        'q.yaml',
        'questions:\n  - {id: a, question: Q, database: main, expected_rows: [[1, x], {n: 2, s: y}], order_matters: true, tags: [kpi]}\n  - {id: b, ' +
          'question: Q2, database: main, expected_csv: expected.csv, tolerance: 0.01}\n',
      ),
      dir,
    );
    expect(yaml.questions[0]).toMatchObject({
      expected: {
        kind: 'rows',
        rows: [
          [1, 'x'],
          [2, 'y'],
        ],
      },
      orderMatters: true,
      tags: ['kpi'],
    });
    expect(yaml.questions[1]).toMatchObject({ expected: { kind: 'csv', rows: [['Ada', '3']] }, tolerance: 0.01 });
  });

  it('reads expected_csv as a file unless it holds a line break, commas in the name included', () => {
    write('a,b.csv', 'n\r\n5\r\n');
    const suite = loadSuite(
      write(
        'csv.yaml',
        'questions:\n  - {id: f, question: Q, database: main, expected_csv: "a,b.csv"}\n  - {id: t, question: Q, database: main, expected_csv: ' +
          '"n,m\\n1,2\\n"}\n',
      ),
      dir,
    );
    expect(suite.questions[0]).toMatchObject({ expected: { kind: 'csv', rows: [['5']] } });
    expect(suite.questions[1]).toMatchObject({ expected: { kind: 'csv', rows: [['1', '2']] } });
    expect(() => loadSuite(write('csv2.yaml', 'questions:\n  - {id: g, question: Q, database: main, expected_csv: "n,m"}\n'), dir)).toThrow(/expected_csv/);
  });

  it('names the entry and the field of a malformed suite', () => {
    expect(() =>
      loadSuite(
        write(
          'm1.json',
          JSON.stringify([
            { question_id: 1, db_id: 'a', question: 'q', SQL: 'SELECT 1' },
            { question_id: 2, db_id: 'a', SQL: 'SELECT 1' },
          ]),
        ),
        dir,
      ),
    ).toThrow(/entry 2 \(question_id 2\): missing field "question"/);
    expect(() => loadSuite(write('m2.json', '{"not": "a list"}'), dir)).toThrow(/expected a non-empty JSON list/);
    expect(() => loadSuite(write('m3.json', '[{"foo": 1}]'), dir)).toThrow(/entry 1: neither a BIRD entry/);
    expect(() => loadSuite(write('m4.json', '[{"db_id": "a", "question": "q", "query": 5}]'), dir)).toThrow(
      /entry 1: field "query" must be a non-empty string/,
    );
    expect(() => loadSuite(write('m5.yaml', 'questions:\n  - {question: q, database: d}\n'), dir)).toThrow(
      /question 1: needs exactly one of expected_sql, expected_rows, expected_csv \(has none\)/,
    );
    expect(() => loadSuite(write('m6.yaml', 'questions:\n  - {question: q, database: d, expected_sql: SELECT 1, expectd_rows: []}\n'), dir)).toThrow(
      /question 1: unknown key "expectd_rows"; allowed keys: id, question, evidence, database, expected_sql, expected_rows/,
    );
    expect(() =>
      loadSuite(
        write(
          'm7.yaml',
          'questions:\n  - {id: x, question: q, database: d, expected_sql: SELECT 1}\n  - {id: x, question: q, database: d, expected_sql: SELECT 1}\n',
        ),
        dir,
      ),
    ).toThrow(/id "x" is used twice/);
    expect(() => loadSuite(write('m8.json', '[{"question_id": 1, '), dir)).toThrow(/JSON: /);
    expect(() => loadSuite(join(dir, 'missing.json'), dir)).toThrow(/no such file/);
  });
});
