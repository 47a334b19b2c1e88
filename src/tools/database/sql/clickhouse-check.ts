import type { Token } from './lexer.js';
import { ReadOnlyViolation } from './read-only-violation.js';

/**
 * ClickHouse's dialect for the read-only check (docs/guide/databases.md "ClickHouse"). The leading keyword is
 * already one of SELECT, WITH, SHOW, DESCRIBE/DESC, EXISTS, EXPLAIN; INSERT (also INSERT INTO
 * FUNCTION), ALTER ... DELETE/UPDATE, DROP, TRUNCATE, CREATE, RENAME, OPTIMIZE, SYSTEM, KILL, SET
 * and several statements were refused before. Here: what the rest may hold. Every query also runs
 * with ClickHouse's own `readonly=1` (drivers/clickhouse.ts), the second layer; KILL QUERY is
 * refused here because `readonly=1` lets a user kill their own queries.
 */

/**
 * Table functions and functions that reach files, other servers or programs. Old servers refuse
 * every table function under readonly=1; newer ones allow them, so these are refused here.
 */
export const CLICKHOUSE_SIDE_EFFECT_FUNCTIONS = [
  'file',
  'filecluster',
  'url',
  'urlcluster',
  'gcs',
  'cosn',
  'oss',
  'remote',
  'remotesecure',
  'cluster',
  'clusterallreplicas',
  'mysql',
  'postgresql',
  'jdbc',
  'odbc',
  'mongodb',
  'redis',
  'sqlite',
  'executable',
  'input',
  'arrowflight',
  'ytsaurus',
  'paimon',
];

/** Words after EXPLAIN that name what to show (EXPLAIN AST|SYNTAX|PLAN|PIPELINE|ESTIMATE|QUERY TREE SELECT ...). */
const EXPLAIN_KINDS = new Set(['AST', 'SYNTAX', 'PLAN', 'PIPELINE', 'ESTIMATE', 'QUERY']);

export function checkClickhouseStatement(statement: Token[], leading: string, checkHiddenWrites: (tokens: Token[]) => void): void {
  const word = (at: number) => (statement[at]?.kind === 'word' ? statement[at]!.value : undefined);
  for (const [index, token] of statement.entries()) {
    if (token.kind !== 'word') continue;
    const previous = statement[index - 1];
    if (previous?.kind === 'punct' && previous.value === '.') continue;
    const next = statement[index + 1];
    const calls = next?.kind === 'punct' && next.value === '(';
    if (token.value === 'SETTINGS' && !calls) {
      throw new ReadOnlyViolation(
        `refused: SETTINGS (at character ${token.start + 1}) changes the query's settings, which read-only mode does not allow; quarry sets the ` +
          'statement timeout and read-only mode itself',
      );
    }
    if (token.value === 'FORMAT' && !calls) {
      throw new ReadOnlyViolation(
        `refused: FORMAT (at character ${token.start + 1}): quarry chooses the output format itself; leave the FORMAT clause out (export_query writes CSV)`,
      );
    }
  }
  switch (leading) {
    case 'SHOW':
      // SHOW TABLES, SHOW DATABASES, SHOW CREATE TABLE t, SHOW PROCESSLIST: the word after SHOW names what is shown.
      checkHiddenWrites(statement.slice(2));
      return;
    case 'DESCRIBE':
    case 'DESC':
    case 'EXISTS':
      // DESCRIBE [TABLE] t, DESCRIBE (SELECT ...), EXISTS [TEMPORARY] TABLE t: a table function inside is still checked.
      checkHiddenWrites(statement.slice(word(1) === 'TABLE' ? 2 : 1));
      return;
    case 'EXPLAIN': {
      let index = 1;
      if (word(index) === 'QUERY' && word(index + 1) === 'TREE') index += 2;
      else if (word(index) && EXPLAIN_KINDS.has(word(index)!)) index++;
      const body = statement.slice(index);
      const first = body.find((token) => !(token.kind === 'punct' && token.value === '('));
      if (first?.kind !== 'word' || (first.value !== 'SELECT' && first.value !== 'WITH')) {
        throw new ReadOnlyViolation('refused: EXPLAIN takes only a query (SELECT, WITH) that is itself allowed, without settings');
      }
      checkHiddenWrites(body);
      return;
    }
    default:
      checkHiddenWrites(statement);
  }
}
