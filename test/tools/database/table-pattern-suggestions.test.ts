import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { makeTempDir } from '../../support/context.js';
import { configsFor, directoryFingerprint, makeRunner } from './helpers.js';

/**
 * A table_pattern that matches no table (list_tables, find_values) names the tables it may have
 * meant, as a misspelt name in a statement does (README "Knowing the data"); a pattern with LIKE
 * wildcards inside is left alone. On the real SQLite sample database, whose file is unchanged.
 */

let dir = '';
let before = '';
let runner: ReturnType<typeof makeRunner>;

beforeAll(() => {
  dir = makeTempDir('table-pattern-');
  copyFileSync(join(process.cwd(), 'fixtures', 'sample.db'), join(dir, 'sample.db'));
  before = directoryFingerprint(dir);
  runner = makeRunner(configsFor([`sample=${join(dir, 'sample.db')}`], dir), dir);
});

afterAll(() => {
  expect(directoryFingerprint(dir)).toBe(before);
});

describe('table_pattern that matches nothing', () => {
  test.each([
    ['custmers', 'customers'],
    ['Customer', 'customers'],
    ['%ordr%', 'orders'],
  ])('list_tables %s suggests %s', async (pattern, table) => {
    const result = await runner.run('sqlite', { operation: 'list_tables', table_pattern: pattern });
    expect(result.ok).toBe(true);
    expect(result.output).toBe(`No tables or views match ${JSON.stringify(pattern)}; did you mean ${table}?`);
  });

  test('find_values with a misspelt table_pattern suggests the table', async () => {
    const result = await runner.run('sqlite', { operation: 'find_values', value: 'Berlin', table_pattern: 'custmers' });
    expect(result.output.split('\n')[0]).toBe('No table matches "custmers" with a column that could hold "Berlin" (exact, any case); did you mean customers?');
  });

  test('a pattern with wildcards inside, or one far from every name, gets no guess', async () => {
    for (const pattern of ['cu_tomerz%q', 'zzzzzzzz']) {
      const result = await runner.run('sqlite', { operation: 'list_tables', table_pattern: pattern });
      expect(result.output).toBe(`No tables or views match ${JSON.stringify(pattern)}.`);
    }
  });
});
