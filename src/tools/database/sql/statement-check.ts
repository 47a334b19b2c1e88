import { SqlLexError, tokenize, type Token } from './lexer.js';
import type { Engine } from '../types.js';
import { checkDuckdbCall, checkDuckdbPragma, DUCKDB_SIDE_EFFECT_FUNCTIONS } from './duckdb-check.js';
import { ReadOnlyViolation } from './read-only-violation.js';
import { CLICKHOUSE_SIDE_EFFECT_FUNCTIONS, checkClickhouseStatement } from './clickhouse-check.js';

/**
 * The first read-only layer (docs/guide/databases.md "Read-only in two layers"): exactly one statement, a read as its leading keyword,
 * and no write hidden inside (data-modifying CTEs, SELECT INTO, locking clauses, COPY, functions
 * with side effects). It reads tokens, never raw text, so words inside strings, comments and
 * quoted identifiers never count. The second layer is the engine's own read-only mode (drivers).
 */

// Its own module so that duckdb-check.ts can use it without importing this file back.
export { ReadOnlyViolation } from './read-only-violation.js';

export interface CheckedStatement {
  /** The statement text without surrounding comments, whitespace and semicolons: what drivers run. */
  sql: string;
  /** The leading keyword, upper-case (SELECT, WITH, PRAGMA, ...). */
  leadingKeyword: string;
}

/**
 * Words that begin a statement in at least one of the engines (reads and writes alike). A
 * leading word outside this set and outside READ_KEYWORDS is a typo, reported as a syntax error
 * rather than as a read-only refusal.
 */
const STATEMENT_KEYWORDS = new Set([
  'ABORT',
  'ALTER',
  'ANALYZE',
  'ATTACH',
  'AUDIT',
  'BACKUP',
  'BEGIN',
  'CACHE',
  'CALL',
  'CHECK',
  'CHECKPOINT',
  'CHECKSUM',
  'CLOSE',
  'CLUSTER',
  'COMMENT',
  'COMMIT',
  'CONNECT',
  'COPY',
  'CREATE',
  'DEALLOCATE',
  'DECLARE',
  'DELETE',
  'DESC',
  'DESCRIBE',
  'DETACH',
  'DISCARD',
  'DO',
  'DROP',
  'END',
  'EXEC',
  'EXECUTE',
  'EXPLAIN',
  'EXPORT',
  'FETCH',
  'FLASHBACK',
  'FLUSH',
  'GRANT',
  'HANDLER',
  'HELP',
  'IMPORT',
  'INSERT',
  'INSTALL',
  'KILL',
  'LISTEN',
  'LOAD',
  'LOCK',
  'MERGE',
  'MOVE',
  'NOAUDIT',
  'NOTIFY',
  'OPTIMIZE',
  'PRAGMA',
  'PREPARE',
  'PROFILE',
  'PURGE',
  'REASSIGN',
  'REFRESH',
  'REINDEX',
  'RELEASE',
  'RENAME',
  'REPAIR',
  'REPLACE',
  'RESET',
  'REVOKE',
  'ROLLBACK',
  'SAVEPOINT',
  'SECURITY',
  'SELECT',
  'SET',
  'SHOW',
  'SHUTDOWN',
  'START',
  'TABLE',
  'TRUNCATE',
  'UNINSTALL',
  'UNLISTEN',
  'UNLOCK',
  'UPDATE',
  'UPSERT',
  'USE',
  'VACUUM',
  'VALUES',
  'WITH',
  'XA',
]);

const READ_KEYWORDS: Record<Engine, readonly string[]> = {
  sqlite: ['SELECT', 'WITH', 'VALUES', 'EXPLAIN', 'PRAGMA'],
  postgres: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'EXPLAIN', 'SHOW'],
  // ANALYZE: MariaDB's `ANALYZE [FORMAT=JSON] SELECT ...` (never ANALYZE TABLE); CHECKSUM TABLE; HELP 'topic'.
  mysql: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'EXPLAIN', 'SHOW', 'DESCRIBE', 'DESC', 'ANALYZE', 'CHECKSUM', 'HELP'],
  // Oracle's EXPLAIN PLAN writes into PLAN_TABLE, so it is not a read there.
  oracle: ['SELECT', 'WITH'],
  vertica: ['SELECT', 'WITH', 'VALUES', 'EXPLAIN', 'SHOW'],
  // FROM-first (`FROM t`), DESCRIBE/SHOW/SUMMARIZE; PRAGMA and CALL only for reads (duckdb-check.ts).
  duckdb: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'FROM', 'EXPLAIN', 'DESCRIBE', 'SHOW', 'SUMMARIZE', 'PRAGMA', 'CALL'],
  // ClickHouse (clickhouse-check.ts): EXISTS [TABLE] name; EXPLAIN only on servers that have it (19.17+).
  clickhouse: ['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN'],
};

/** Leading keywords of a query: what EXPLAIN (with or without ANALYZE) may explain. */
const QUERY_KEYWORDS: Record<Engine, readonly string[]> = {
  sqlite: ['SELECT', 'WITH', 'VALUES'],
  postgres: ['SELECT', 'WITH', 'VALUES', 'TABLE'],
  mysql: ['SELECT', 'WITH', 'VALUES', 'TABLE'],
  oracle: ['SELECT', 'WITH'],
  vertica: ['SELECT', 'WITH', 'VALUES'],
  duckdb: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'FROM'],
  clickhouse: ['SELECT', 'WITH'],
};

/**
 * Words that only appear in writes, DDL, locking or transaction control. Checked anywhere in a
 * query (unquoted, not after a `.`), which catches data-modifying CTEs (`WITH d AS (DELETE
 * ...)`), `SELECT ... INTO`, `FOR UPDATE` and `LOCK IN SHARE MODE`. A column really named like one
 * of these can be written as a quoted identifier. Where a word has another role in the grammar it
 * is judged by that role instead: the word after SHOW (`SHOW CREATE TABLE`), the options of
 * EXPLAIN (`EXPLAIN ANALYZE`, read by explainPrefix), and MySQL's functions TRUNCATE(x, d) and
 * INSERT(str, pos, len, new) (FUNCTION_WORDS). `upsert` is no keyword of any engine quarry speaks.
 */
const WRITE_WORDS = new Set([
  'INSERT',
  'UPDATE',
  'DELETE',
  'MERGE',
  'TRUNCATE',
  'DROP',
  'CREATE',
  'ALTER',
  'RENAME',
  'GRANT',
  'REVOKE',
  'COPY',
  'INTO',
  'CALL',
  'EXEC',
  'EXECUTE',
  'LOCK',
  'UNLOCK',
  'VACUUM',
  'ATTACH',
  'DETACH',
  'REINDEX',
  'ANALYZE',
  'ANALYSE',
  'CLUSTER',
  'COMMIT',
  'ROLLBACK',
  'SAVEPOINT',
  'REFRESH',
  'OUTFILE',
  'DUMPFILE',
  'HANDLER',
  'PREPARE',
  'DEALLOCATE',
  'LISTEN',
  'NOTIFY',
  'DISCARD',
  'IMPORT',
]);

const SEQUENCE_WORDS = new Set(['NEXTVAL', 'SETVAL']);

/**
 * Write words that are also a built-in function when a "(" follows: MySQL's TRUNCATE(1.223, 1)
 * and INSERT('Quadratic', 3, 4, 'What'). Inside a query no statement can start there (MySQL has
 * no data-modifying CTEs), so the word followed by "(" is the function.
 */
const FUNCTION_WORDS: Record<Engine, ReadonlySet<string>> = {
  sqlite: new Set(),
  postgres: new Set(),
  mysql: new Set(['TRUNCATE', 'INSERT']),
  oracle: new Set(),
  vertica: new Set(),
  duckdb: new Set(),
  // ClickHouse's truncate(x) rounds toward zero; no statement can start inside its queries.
  clickhouse: new Set(['TRUNCATE']),
};

/** Words after FOR that make a locking clause (FOR SHARE, FOR KEY SHARE, FOR NO KEY UPDATE). */
const LOCKING_AFTER_FOR = new Set(['SHARE', 'KEY', 'NO']);

interface NameRules {
  exact: ReadonlySet<string>;
  prefixes: readonly string[];
  /** Names that match a prefix but are plain reads (Vertica ADD_MONTHS, Oracle DBMS_RANDOM). */
  exceptions: ReadonlySet<string>;
}

interface FunctionRules extends NameRules {
  /** Packages whose every member is refused (Oracle `UTL_FILE.PUT_LINE`): a name followed by `.`. */
  packages: NameRules;
}

const NONE: NameRules = { exact: new Set(), prefixes: [], exceptions: new Set() };

function matches(rules: NameRules, name: string): boolean {
  if (rules.exceptions.has(name)) return false;
  return rules.exact.has(name) || rules.prefixes.some((prefix) => name.startsWith(prefix));
}

/**
 * Functions with side effects (file or network access, sequences, locks, settings, running SQL
 * from a string). Sleep functions are allowed: they change nothing, and the statement timeout
 * and cancellation bound them.
 */
const SIDE_EFFECT_FUNCTIONS: Record<Engine, FunctionRules> = {
  sqlite: {
    exact: new Set(['load_extension', 'readfile', 'writefile', 'edit', 'fts3_tokenizer', 'zipfile', 'sqlar_compress']),
    prefixes: [],
    exceptions: new Set(),
    packages: NONE,
  },
  postgres: {
    exact: new Set([
      'nextval',
      'setval',
      'set_config',
      'lowrite',
      'pg_notify',
      'txid_current',
      'pg_current_xact_id',
      'pg_terminate_backend',
      'pg_cancel_backend',
      'pg_reload_conf',
      'pg_rotate_logfile',
      'pg_switch_wal',
      'pg_promote',
      'pg_logical_emit_message',
      'pg_import_system_collations',
      'pg_stat_file',
      'query_to_xml',
      'query_to_xmlschema',
      'query_to_xml_and_xmlschema',
      'cursor_to_xml',
      'cursor_to_xmlschema',
      'pg_backup_start',
      'pg_backup_stop',
      'pg_start_backup',
      'pg_stop_backup',
      'pg_log_backend_memory_contexts',
      // Run SQL given as text, out of the check's sight (tablefunc and xml2 too).
      'ts_stat',
      'ts_rewrite',
      'connectby',
      'xpath_table',
      // Index maintenance that changes the index even inside a read-only transaction.
      'brin_summarize_new_values',
      'brin_summarize_range',
      'brin_desummarize_range',
      'gin_clean_pending_list',
      'pg_stat_statements_reset',
      'pg_logical_slot_get_changes',
      'pg_logical_slot_get_binary_changes',
      'pg_nextoid',
      'pg_truncate_visibility_map',
      // The session's random seed: it survives the rollback and DISCARD ALL, so it would outlive the call.
      'setseed',
    ]),
    prefixes: [
      'lo_',
      'dblink',
      'pg_read_',
      'pg_ls_',
      'pg_file_',
      'pg_logdir_',
      'pg_advisory',
      'pg_try_advisory',
      'pg_create_',
      'pg_drop_',
      'pg_copy_',
      'pg_replication_',
      'pg_stat_reset',
      'pg_wal_replay_',
      'crosstab',
      'binary_upgrade_',
      'heap_force_',
      // PostgreSQL 18's statistics import (pg_restore_relation_stats, pg_clear_attribute_stats, ...):
      // they change the catalogs even inside a read-only transaction; only the rollback undoes them.
      'pg_restore_',
      'pg_clear_',
    ],
    // Large-object reads: the position of an open descriptor, the contents of an object.
    exceptions: new Set(['lo_tell', 'lo_tell64', 'lo_get']),
    packages: NONE,
  },
  mysql: {
    exact: new Set([
      'load_file',
      'get_lock',
      'release_lock',
      'release_all_locks',
      'master_pos_wait',
      'source_pos_wait',
      'sys_exec',
      'sys_eval',
      'sys_get',
      'sys_set',
    ]),
    prefixes: [],
    exceptions: new Set(),
    packages: NONE,
  },
  oracle: {
    exact: new Set(['httpuritype', 'dburitype', 'xdburitype']),
    prefixes: [],
    exceptions: new Set(),
    // Oracle's built-in packages reach files, the network, jobs and dynamic SQL.
    packages: { exact: new Set(['htp', 'htf', 'owa']), prefixes: ['dbms_', 'utl_', 'ctx_', 'owa_'], exceptions: new Set(['dbms_random']) },
  },
  vertica: {
    exact: new Set(['purge', 'shutdown', 'rebalance_cluster', 'hard_partition', 'partition_table', 'partition_projection', 'do_tm_task']),
    // Vertica meta-functions are called with SELECT and often commit on their own.
    prefixes: [
      'drop_',
      'purge_',
      'set_',
      'clear_',
      'close_',
      'make_',
      'analyze_',
      'export_',
      'start_',
      'swap_',
      'copy_',
      'move_',
      'cancel_',
      'interrupt_',
      'enable_',
      'disable_',
      'reset_',
      'rebalance_',
      'refresh',
      'alter_',
      'create_',
      'add_',
      'remove_',
      'install_',
      'uninstall_',
      'flush_',
      'reap_',
      'release_',
      'restore_',
      'revert_',
      'mark_',
      'audit',
      'import_',
      'evaluate_delete',
      'compute_flextable',
      'materialize_',
      'update_',
      'delete_',
      'insert_',
      'upgrade_',
      'run_',
      'notify',
      'save_',
      'load_',
    ],
    exceptions: new Set(['add_months']),
    packages: NONE,
  },
  duckdb: { exact: new Set(DUCKDB_SIDE_EFFECT_FUNCTIONS), prefixes: [], exceptions: new Set(), packages: NONE },
  clickhouse: {
    exact: new Set(CLICKHOUSE_SIDE_EFFECT_FUNCTIONS),
    prefixes: ['iceberg', 'deltalake', 'hudi', 'azureblob', 's3', 'hdfs'],
    exceptions: new Set(),
    packages: NONE,
  },
};

/** PRAGMAs that only read; the first group also takes a table or index name in parentheses. */
const SQLITE_PRAGMAS_WITH_NAME = new Set([
  'table_info',
  'table_xinfo',
  'index_list',
  'index_info',
  'index_xinfo',
  'foreign_key_list',
  'foreign_key_check',
  'integrity_check',
  'quick_check',
  'table_list',
]);
const SQLITE_PRAGMAS_BARE = new Set([
  ...SQLITE_PRAGMAS_WITH_NAME,
  'database_list',
  'collation_list',
  'function_list',
  'module_list',
  'pragma_list',
  'compile_options',
  'user_version',
  'schema_version',
  'application_id',
  'page_count',
  'page_size',
  'freelist_count',
  'encoding',
  'journal_mode',
  'foreign_keys',
  'data_version',
  'max_page_count',
  'auto_vacuum',
  'query_only',
]);

/** Checks one statement for read-only use; throws ReadOnlyViolation saying what and why. */
export function checkReadOnlyStatement(sql: string, engine: Engine): CheckedStatement {
  let tokens: Token[];
  try {
    tokens = tokenize(sql, engine);
  } catch (error) {
    if (error instanceof SqlLexError) throw new ReadOnlyViolation(`refused: ${error.message}`);
    throw error;
  }
  const statements = splitStatements(tokens);
  if (statements.length === 0) throw new ReadOnlyViolation('refused: no SQL statement was given');
  if (statements.length > 1) {
    throw new ReadOnlyViolation(
      `refused: only one statement per call is allowed in read-only mode (found ${statements.length}, separated by ";"); run them one at a time`,
    );
  }
  const statement = statements[0]!;
  const leading = leadingKeyword(statement);
  if (leading && !READ_KEYWORDS[engine].includes(leading) && !STATEMENT_KEYWORDS.has(leading)) {
    // A typo (SELEC) is not a permission problem: say that the statement is not SQL.
    throw new ReadOnlyViolation(
      `syntax error: "${leading}" at character ${statement.find((token) => token.kind === 'word')!.start + 1} does not begin any SQL statement; ${engine} ` +
        `queries here begin with ${READ_KEYWORDS[engine].join(', ')}`,
    );
  }
  if (!leading || !READ_KEYWORDS[engine].includes(leading)) {
    throw new ReadOnlyViolation(
      `refused: ${leading ? `${leading} statements are` : 'this statement is'} not allowed in read-only mode; ${engine} allows only ` +
        `${READ_KEYWORDS[engine].join(', ')}${engine === 'sqlite' ? ' (read-only PRAGMAs)' : ''}`,
    );
  }
  checkParentheses(statement);
  if (engine === 'duckdb') {
    // DuckDB's dialect (duckdb-check.ts): PRAGMA and CALL only for reads; the rest read like a query.
    if (leading === 'PRAGMA') checkDuckdbPragma(statement);
    if (leading === 'CALL') checkDuckdbCall(statement);
    // EXPLAIN of a query that passes on its own (EXPLAIN ANALYZE stays refused: it turns on DuckDB's
    // profiler); DESCRIBE/SHOW/SUMMARIZE read like a query.
    if (leading === 'EXPLAIN') checkExplain(statement, engine);
    // CALL itself is a write word elsewhere; DuckDB's CALL of a read-only table function was checked above.
    else checkHiddenWrites(leading === 'CALL' ? statement.slice(1) : statement, engine);
  } else if (engine === 'clickhouse') checkClickhouseStatement(statement, leading, (tokens) => checkHiddenWrites(tokens, engine));
  else checkByGrammar(statement, leading, engine);
  const first = statement[0]!;
  const last = statement[statement.length - 1]!;
  return { sql: sql.slice(first.start, last.end), leadingKeyword: leading };
}

/** The statement judged by what its leading keyword makes it (the keyword itself is known to be allowed). */
function checkByGrammar(statement: Token[], leading: string, engine: Engine): void {
  switch (leading) {
    case 'PRAGMA':
      checkSqlitePragma(statement);
      return;
    case 'SHOW':
      // SHOW CREATE TABLE, SHOW CREATE PROCEDURE, SHOW ANALYZE FOR ...: the word after SHOW names
      // what is shown. The rest (LIKE patterns, WHERE conditions) is read like any query.
      checkHiddenWrites(statement.slice(2), engine);
      return;
    case 'CHECKSUM':
      checkTableList(statement, 'CHECKSUM TABLE', ['QUICK', 'EXTENDED']);
      return;
    case 'HELP':
      if (statement.length !== 2 || statement[1]!.kind === 'punct' || statement[1]!.kind === 'number') {
        throw new ReadOnlyViolation("refused: HELP takes one topic, as in HELP 'SELECT'");
      }
      return;
    case 'EXPLAIN':
    case 'DESCRIBE':
    case 'DESC':
    case 'ANALYZE':
      checkExplain(statement, engine);
      return;
    default:
      checkHiddenWrites(statement, engine);
  }
}

/**
 * EXPLAIN and its relatives: the options are read by explainPrefix, and what is explained must be
 * a query that passes the check on its own. With ANALYZE the engine runs it (inside the read-only
 * transaction, like any query); without, it only plans it, but EXPLAIN of a write is refused all
 * the same (docs/guide/databases.md: fail closed): MySQL and MariaDB evaluate constant subqueries while planning,
 * so planning an UPDATE can run what its subqueries call, and planning the equivalent SELECT
 * answers the same question.
 */
function checkExplain(statement: Token[], engine: Engine): void {
  const leading = statement[0]!.value;
  const { body, options } = explainPrefix(statement, engine);
  if (engine === 'mysql' && leading !== 'ANALYZE') {
    // EXPLAIN FOR CONNECTION 12: the plan of another session's running statement.
    if (body.length === 3 && body[0]!.value === 'FOR' && body[1]!.value === 'CONNECTION' && body[2]!.kind === 'number') return;
    // DESCRIBE customers [column]: SHOW COLUMNS.
    const bodyLeading = leadingKeyword(body);
    if (options === 0 && body.length > 0 && !(bodyLeading && QUERY_KEYWORDS.mysql.includes(bodyLeading)) && isTableReference(body)) return;
  }
  const explained = leadingKeyword(body);
  // MySQL: ANALYZE ... TABLE is ANALYZE TABLE (a write) for MariaDB, whatever MySQL 8 makes of it.
  const analyzes = engine === 'mysql' && statement.slice(0, statement.length - body.length).some((token) => token.kind === 'word' && token.value === 'ANALYZE');
  const allowed = analyzes ? QUERY_KEYWORDS[engine].filter((keyword) => keyword !== 'TABLE') : QUERY_KEYWORDS[engine];
  if (!explained || !allowed.includes(explained)) {
    throw new ReadOnlyViolation(
      analyzes && explained === 'TABLE'
        ? 'refused: ANALYZE TABLE updates the table statistics, which is a write'
        : `refused: ${leading} ${explained ? `of ${explained}` : 'of this statement'} is not allowed in read-only mode; ${leading} takes only a query ` +
            `(${allowed.join(', ')}) that is itself allowed; for the plan of a write, explain the SELECT that finds its rows`,
    );
  }
  checkHiddenWrites(body, engine);
}

/**
 * Splits EXPLAIN's options from the statement explained, per dialect:
 * PostgreSQL `EXPLAIN [ANALYZE|ANALYSE] [VERBOSE]` or `EXPLAIN (option [value], ...)`; MySQL and
 * MariaDB `EXPLAIN|DESCRIBE|DESC [EXTENDED|PARTITIONS|ANALYZE|FORMAT=name]...` and MariaDB's
 * `ANALYZE [FORMAT=name]`; SQLite `EXPLAIN [QUERY PLAN]`; Vertica `EXPLAIN [LOCAL] [VERBOSE]
 * [JSON] [ANNOTATED]`. `options` counts the words consumed.
 */
function explainPrefix(statement: Token[], engine: Engine): { body: Token[]; options: number } {
  let index = 1;
  const word = (at: number, ...values: string[]) => statement[at]?.kind === 'word' && values.includes(statement[at]!.value);
  const punct = (at: number, value: string) => statement[at]?.kind === 'punct' && statement[at]!.value === value;
  switch (engine) {
    case 'postgres':
      if (punct(index, '(') && !isQueryStart(statement, index + 1, engine)) {
        const close = statement.findIndex((token, at) => at > index && token.kind === 'punct' && token.value === ')');
        const inside = statement.slice(index + 1, close);
        checkPostgresExplainOptions(inside);
        return { body: statement.slice(close + 1), options: inside.length };
      }
      if (word(index, 'ANALYZE', 'ANALYSE')) index++;
      if (word(index, 'VERBOSE')) index++;
      break;
    case 'mysql':
      for (;;) {
        if (word(index, 'EXTENDED', 'PARTITIONS', 'ANALYZE') && statement[0]!.value !== 'ANALYZE') index++;
        else if (word(index, 'FORMAT') && punct(index + 1, '=') && statement[index + 2]?.kind === 'word') index += 3;
        else break;
      }
      break;
    case 'sqlite':
      if (word(index, 'QUERY') && word(index + 1, 'PLAN')) index += 2;
      break;
    case 'vertica':
      while (word(index, 'LOCAL', 'VERBOSE', 'JSON', 'ANNOTATED')) index++;
      break;
    case 'oracle':
      break;
  }
  return { body: statement.slice(index), options: index - 1 };
}

/** PostgreSQL's EXPLAIN options, each `NAME [value]`; anything else is refused. */
const POSTGRES_EXPLAIN_OPTIONS = new Set([
  'ANALYZE',
  'ANALYSE',
  'VERBOSE',
  'COSTS',
  'SETTINGS',
  'GENERIC_PLAN',
  'BUFFERS',
  'SERIALIZE',
  'WAL',
  'TIMING',
  'SUMMARY',
  'MEMORY',
  'FORMAT',
]);

function checkPostgresExplainOptions(tokens: Token[]): void {
  const items: Token[][] = [[]];
  for (const token of tokens) {
    if (token.kind === 'punct' && token.value === ',') items.push([]);
    else items[items.length - 1]!.push(token);
  }
  for (const [name, value, ...extra] of items) {
    const known = name?.kind === 'word' && POSTGRES_EXPLAIN_OPTIONS.has(name.value);
    const plainValue = value === undefined || value.kind === 'word' || value.kind === 'number' || value.kind === 'string';
    if (!known || !plainValue || extra.length > 0) {
      throw new ReadOnlyViolation(
        `refused: EXPLAIN (...) takes options as in EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON); allowed: ${[...POSTGRES_EXPLAIN_OPTIONS].join(', ')}`,
      );
    }
  }
}

function isQueryStart(statement: Token[], index: number, engine: Engine): boolean {
  const leading = leadingKeyword(statement.slice(index));
  return leading !== null && QUERY_KEYWORDS[engine].includes(leading);
}

/** Words that start a statement or a clause in MySQL: never an unquoted table name after DESCRIBE. */
const MYSQL_NOT_A_NAME = new Set([
  'EXPLAIN',
  'DESCRIBE',
  'DESC',
  'ANALYZE',
  'SHOW',
  'SELECT',
  'WITH',
  'VALUES',
  'TABLE',
  'FOR',
  'FORMAT',
  'SET',
  'DO',
  'HANDLER',
  'LOAD',
  'REPLACE',
  'INTO',
  'FROM',
  'WHERE',
  'FLUSH',
  'OPTIMIZE',
  'REPAIR',
  'CHECK',
  'CHECKSUM',
  'HELP',
  'START',
  'BEGIN',
  'XA',
  'KILL',
  'RESET',
  'PURGE',
  'INSTALL',
  'UNINSTALL',
  'CACHE',
  'USE',
  'SHUTDOWN',
  'BINLOG',
  'SIGNAL',
  'RESIGNAL',
  'GET',
  'BACKUP',
  'CLONE',
  'RESTART',
]);

/** A table name, `name` or `schema.name`, from `at`; the index after it, or -1. */
function tableName(tokens: Token[], at: number): number {
  const name = (token: Token | undefined) =>
    token !== undefined && (token.kind === 'quoted' || (token.kind === 'word' && !WRITE_WORDS.has(token.value) && !MYSQL_NOT_A_NAME.has(token.value)));
  if (!name(tokens[at])) return -1;
  if (tokens[at + 1]?.kind === 'punct' && tokens[at + 1]!.value === '.') return name(tokens[at + 2]) ? at + 3 : -1;
  return at + 1;
}

/** `name` or `schema.name`, optionally followed by a column name or a 'pattern': MySQL's DESCRIBE of a table (SHOW COLUMNS). */
function isTableReference(tokens: Token[]): boolean {
  let index = tableName(tokens, 0);
  if (index < 0) return false;
  if (index < tokens.length && (tokens[index]!.kind === 'string' || tableName(tokens, index) === index + 1)) index++;
  return index === tokens.length;
}

/** `CHECKSUM TABLE a, db.b [QUICK|EXTENDED]`: table names only. */
function checkTableList(statement: Token[], what: string, trailing: readonly string[]): void {
  let valid = statement[1]?.kind === 'word' && statement[1].value === 'TABLE';
  let index = 2;
  for (;;) {
    index = valid ? tableName(statement, index) : -1;
    if (index < 0 || !(statement[index]?.kind === 'punct' && statement[index]!.value === ',')) break;
    index++;
  }
  if (index > 0 && statement[index]?.kind === 'word' && trailing.includes(statement[index]!.value)) index++;
  valid = index === statement.length;
  if (!valid)
    throw new ReadOnlyViolation(
      `refused: only ${what} followed by table names${trailing.length ? ` (and ${trailing.join(' or ')})` : ''} is allowed in read-only mode`,
    );
}

/** Statements split at top-level semicolons; empty ones (stray `;`) are dropped. */
function splitStatements(tokens: Token[]): Token[][] {
  const statements: Token[][] = [];
  let current: Token[] = [];
  for (const token of tokens) {
    if (token.kind === 'punct' && token.value === ';') {
      if (current.length) statements.push(current);
      current = [];
    } else {
      current.push(token);
    }
  }
  if (current.length) statements.push(current);
  return statements;
}

function leadingKeyword(statement: Token[]): string | null {
  // `(SELECT ...) UNION (SELECT ...)` starts with parentheses.
  const first = statement.find((token) => !(token.kind === 'punct' && token.value === '('));
  return first?.kind === 'word' ? first.value : null;
}

function checkHiddenWrites(statement: Token[], engine: Engine): void {
  const rules = SIDE_EFFECT_FUNCTIONS[engine];
  for (let index = 0; index < statement.length; index++) {
    const token = statement[index]!;
    const previous = statement[index - 1];
    const next = statement[index + 1];
    const qualified = previous?.kind === 'punct' && previous.value === '.';
    const calls = next?.kind === 'punct' && next.value === '(';
    const functionWord = calls && FUNCTION_WORDS[engine].has(token.value);
    // MySQL 5 and MariaDB: SELECT ... PROCEDURE ANALYSE() suggests column types for the result.
    const analyseProcedure = engine === 'mysql' && calls && token.value === 'ANALYSE' && previous?.kind === 'word' && previous.value === 'PROCEDURE';
    if (token.kind === 'word' && !qualified && WRITE_WORDS.has(token.value) && !functionWord && !analyseProcedure) {
      throw new ReadOnlyViolation(
        `refused: ${token.value} (at character ${token.start + 1}) can change data or state, and read-only mode allows no writes, locks or transaction ` +
          `control inside a query; if it is a column or table name, quote it as an identifier`,
      );
    }
    // Sequence advances: Oracle and Vertica write them as a pseudo-column (seq.NEXTVAL), MariaDB
    // and the standard as NEXT VALUE FOR seq.
    if (token.kind === 'word' && (SEQUENCE_WORDS.has(token.value) || (token.value === 'NEXT' && next?.kind === 'word' && next.value === 'VALUE'))) {
      throw new ReadOnlyViolation(
        `refused: ${token.value === 'NEXT' ? 'NEXT VALUE' : token.value} (at character ${token.start + 1}) advances a sequence, which is a write`,
      );
    }
    if (token.kind === 'word' && token.value === 'FOR' && next?.kind === 'word' && LOCKING_AFTER_FOR.has(next.value)) {
      throw new ReadOnlyViolation(`refused: FOR ${next.value} (at character ${token.start + 1}) takes row locks, which read-only mode does not allow`);
    }
    if (token.kind !== 'word' && token.kind !== 'quoted') continue;
    const name = token.value.toLowerCase();
    // ts_rewrite(query, target, substitute) rewrites with constant tsqueries; ts_rewrite(query, 'SELECT ...') runs SQL text.
    if (calls && engine === 'postgres' && name === 'ts_rewrite' && argumentCount(statement, index + 1) === 3) continue;
    if (calls && matches(rules, name)) {
      throw new ReadOnlyViolation(
        `refused: the function ${name}() (at character ${token.start + 1}) has side effects (files, network, sequences, locks or settings) and is not ` +
          `allowed in read-only mode`,
      );
    }
    const isPackage = next?.kind === 'punct' && next.value === '.';
    if (isPackage && matches(rules.packages, name)) {
      throw new ReadOnlyViolation(
        `refused: the package ${name.toUpperCase()} (at character ${token.start + 1}) can reach files, the network, jobs or dynamic SQL, and is not allowed ` +
          `in read-only mode`,
      );
    }
  }
}

/** The number of top-level arguments of the call whose "(" is at `open`. */
function argumentCount(statement: Token[], open: number): number {
  let depth = 0;
  let count = 1;
  for (let index = open; index < statement.length; index++) {
    const token = statement[index]!;
    if (token.kind !== 'punct') continue;
    if (token.value === '(') depth++;
    else if (token.value === ')' && --depth === 0) return index === open + 1 ? 0 : count;
    else if (token.value === ',' && depth === 1) count++;
  }
  return -1;
}

/** Unbalanced parentheses are refused: drivers wrap statements (COPY (...) TO STDOUT) and a stray ")" must not escape. */
function checkParentheses(statement: Token[]): void {
  let depth = 0;
  for (const token of statement) {
    if (token.kind !== 'punct') continue;
    if (token.value === '(') depth++;
    else if (token.value === ')' && --depth < 0) {
      throw new ReadOnlyViolation(`refused: unbalanced ")" at character ${token.start + 1}`);
    }
  }
  if (depth !== 0) throw new ReadOnlyViolation('refused: unbalanced parentheses (a "(" is never closed)');
}

/** `PRAGMA [schema.]name` or `PRAGMA name(table)` for the read-only PRAGMAs; never `= value`. */
function checkSqlitePragma(statement: Token[]): void {
  let index = 1;
  if (statement[index + 1]?.value === '.') index += 2;
  const nameToken = statement[index];
  const name = nameToken?.kind === 'word' ? nameToken.value.toLowerCase() : '';
  const rest = statement.slice(index + 1);
  const setsValue = rest.some((token) => token.kind === 'punct' && token.value === '=');
  if (!name || setsValue || !SQLITE_PRAGMAS_BARE.has(name)) {
    throw new ReadOnlyViolation(
      `refused: ${name ? `PRAGMA ${name}${setsValue ? ' = ...' : ''}` : 'this PRAGMA'} is not a read-only PRAGMA; allowed: ` +
        `${[...SQLITE_PRAGMAS_BARE].sort().join(', ')} (without "=")`,
    );
  }
  if (rest.length && !(SQLITE_PRAGMAS_WITH_NAME.has(name) && isSingleParenthesizedName(rest))) {
    throw new ReadOnlyViolation(
      `refused: PRAGMA ${name}(...) sets a value; only table-information PRAGMAs take an argument (${[...SQLITE_PRAGMAS_WITH_NAME].sort().join(', ')})`,
    );
  }
}

function isSingleParenthesizedName(tokens: Token[]): boolean {
  return tokens.length === 3 && tokens[0]!.value === '(' && tokens[2]!.value === ')' && tokens[1]!.kind !== 'punct';
}
