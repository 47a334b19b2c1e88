import { SqlLexError, tokenize, type Token } from './sql-lexer.js';
import type { Engine } from './types.js';
import { checkDuckdbCall, checkDuckdbPragma, DUCKDB_SIDE_EFFECT_FUNCTIONS } from './duckdb-check.js';

/**
 * The first read-only layer (SPEC §11.2): exactly one statement, a read as its leading keyword,
 * and no write hidden inside (data-modifying CTEs, SELECT INTO, locking clauses, COPY, functions
 * with side effects). It reads tokens, never raw text, so words inside strings, comments and
 * quoted identifiers never count. The second layer is the engine's own read-only mode (drivers).
 */

export class ReadOnlyViolation extends Error {
  override name = 'ReadOnlyViolation';
}

export interface CheckedStatement {
  /** The statement text without surrounding comments, whitespace and semicolons: what drivers run. */
  sql: string;
  /** The leading keyword, upper-case (SELECT, WITH, PRAGMA, ...). */
  leadingKeyword: string;
}

const READ_KEYWORDS: Record<Engine, readonly string[]> = {
  sqlite: ['SELECT', 'WITH', 'VALUES', 'EXPLAIN', 'PRAGMA'],
  postgres: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'EXPLAIN', 'SHOW'],
  mysql: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'EXPLAIN', 'SHOW', 'DESCRIBE', 'DESC'],
  // Oracle's EXPLAIN PLAN writes into PLAN_TABLE, so it is not a read there.
  oracle: ['SELECT', 'WITH'],
  vertica: ['SELECT', 'WITH', 'VALUES', 'EXPLAIN', 'SHOW'],
  // FROM-first (`FROM t`), DESCRIBE/SHOW/SUMMARIZE; PRAGMA and CALL only for reads (duckdb-check.ts).
  duckdb: ['SELECT', 'WITH', 'VALUES', 'TABLE', 'FROM', 'EXPLAIN', 'DESCRIBE', 'SHOW', 'SUMMARIZE', 'PRAGMA', 'CALL'],
};

/**
 * Words that only appear in writes, DDL, locking or transaction control. Checked anywhere in the
 * statement (unquoted, not after a `.`), which catches data-modifying CTEs (`WITH d AS (DELETE
 * ...)`), `SELECT ... INTO`, `FOR UPDATE`, `LOCK IN SHARE MODE` and `EXPLAIN ANALYZE` (which runs
 * the statement). A column really named like one of these can be written as a quoted identifier.
 */
const WRITE_WORDS = new Set([
  'INSERT', 'UPDATE', 'DELETE', 'MERGE', 'UPSERT', 'TRUNCATE', 'DROP', 'CREATE', 'ALTER', 'RENAME',
  'GRANT', 'REVOKE', 'COPY', 'INTO', 'CALL', 'EXEC', 'EXECUTE', 'LOCK', 'UNLOCK', 'VACUUM', 'ATTACH',
  'DETACH', 'REINDEX', 'ANALYZE', 'ANALYSE', 'CLUSTER', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'REFRESH',
  'OUTFILE', 'DUMPFILE', 'HANDLER', 'PREPARE', 'DEALLOCATE', 'LISTEN', 'NOTIFY', 'DISCARD', 'IMPORT',
]);

const SEQUENCE_WORDS = new Set(['NEXTVAL', 'SETVAL']);

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
      'nextval', 'setval', 'set_config', 'lowrite', 'pg_notify', 'txid_current', 'pg_current_xact_id',
      'pg_terminate_backend', 'pg_cancel_backend', 'pg_reload_conf', 'pg_rotate_logfile', 'pg_switch_wal',
      'pg_promote', 'pg_logical_emit_message', 'pg_import_system_collations', 'pg_stat_file',
      'query_to_xml', 'query_to_xmlschema', 'query_to_xml_and_xmlschema', 'cursor_to_xml', 'cursor_to_xmlschema',
      'pg_backup_start', 'pg_backup_stop', 'pg_start_backup', 'pg_stop_backup', 'pg_log_backend_memory_contexts',
      // Run SQL given as text, out of the check's sight (tablefunc and xml2 too).
      'ts_stat', 'ts_rewrite', 'connectby', 'xpath_table',
      // Index maintenance that changes the index even inside a read-only transaction.
      'brin_summarize_new_values', 'brin_summarize_range', 'brin_desummarize_range', 'gin_clean_pending_list',
      'pg_stat_statements_reset', 'pg_logical_slot_get_changes', 'pg_logical_slot_get_binary_changes', 'pg_nextoid',
      'pg_truncate_visibility_map',
    ]),
    prefixes: [
      'lo_', 'dblink', 'pg_read_', 'pg_ls_', 'pg_file_', 'pg_logdir_', 'pg_advisory', 'pg_try_advisory', 'pg_create_', 'pg_drop_',
      'pg_copy_', 'pg_replication_', 'pg_stat_reset', 'pg_wal_replay_', 'crosstab', 'binary_upgrade_', 'heap_force_',
    ],
    exceptions: new Set(),
    packages: NONE,
  },
  mysql: {
    exact: new Set(['load_file', 'get_lock', 'release_lock', 'release_all_locks', 'master_pos_wait', 'source_pos_wait', 'sys_exec', 'sys_eval', 'sys_get', 'sys_set']),
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
      'drop_', 'purge_', 'set_', 'clear_', 'close_', 'make_', 'analyze_', 'export_', 'start_', 'swap_', 'copy_', 'move_',
      'cancel_', 'interrupt_', 'enable_', 'disable_', 'reset_', 'rebalance_', 'refresh', 'alter_', 'create_', 'add_', 'remove_',
      'install_', 'uninstall_', 'flush_', 'reap_', 'release_', 'restore_', 'revert_', 'mark_', 'audit', 'import_', 'evaluate_delete',
      'compute_flextable', 'materialize_', 'update_', 'delete_', 'insert_', 'upgrade_', 'run_', 'notify', 'save_', 'load_',
    ],
    exceptions: new Set(['add_months']),
    packages: NONE,
  },
  duckdb: { exact: new Set(DUCKDB_SIDE_EFFECT_FUNCTIONS), prefixes: [], exceptions: new Set(), packages: NONE },
};

/** PRAGMAs that only read; the first group also takes a table or index name in parentheses. */
const SQLITE_PRAGMAS_WITH_NAME = new Set([
  'table_info', 'table_xinfo', 'index_list', 'index_info', 'index_xinfo', 'foreign_key_list', 'foreign_key_check',
  'integrity_check', 'quick_check', 'table_list',
]);
const SQLITE_PRAGMAS_BARE = new Set([
  ...SQLITE_PRAGMAS_WITH_NAME, 'database_list', 'collation_list', 'function_list', 'module_list', 'pragma_list',
  'compile_options', 'user_version', 'schema_version', 'application_id', 'page_count', 'page_size', 'freelist_count',
  'encoding', 'journal_mode', 'foreign_keys', 'data_version', 'max_page_count', 'auto_vacuum', 'query_only',
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
  if (!leading || !READ_KEYWORDS[engine].includes(leading)) {
    throw new ReadOnlyViolation(
      `refused: ${leading ? `${leading} statements are` : 'this statement is'} not allowed in read-only mode; ${engine} allows only ${READ_KEYWORDS[engine].join(', ')}${engine === 'sqlite' ? ' (read-only PRAGMAs)' : ''}`,
    );
  }
  checkParentheses(statement);
  if (leading === 'PRAGMA') (engine === 'duckdb' ? checkDuckdbPragma : checkSqlitePragma)(statement);
  if (leading === 'CALL') checkDuckdbCall(statement);
  // CALL itself is a write word elsewhere; DuckDB's CALL of a read-only table function was checked above.
  checkHiddenWrites(leading === 'CALL' ? statement.slice(1) : statement, engine);
  const first = statement[0]!;
  const last = statement[statement.length - 1]!;
  return { sql: sql.slice(first.start, last.end), leadingKeyword: leading };
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
    if (token.kind === 'word' && !qualified && WRITE_WORDS.has(token.value)) {
      throw new ReadOnlyViolation(
        `refused: ${token.value} (at character ${token.start + 1}) can change data or state, and read-only mode allows no writes, locks or transaction control inside a query; if it is a column or table name, quote it as an identifier`,
      );
    }
    // Sequence advances: Oracle and Vertica write them as a pseudo-column (seq.NEXTVAL), MariaDB
    // and the standard as NEXT VALUE FOR seq.
    if (token.kind === 'word' && (SEQUENCE_WORDS.has(token.value) || (token.value === 'NEXT' && next?.kind === 'word' && next.value === 'VALUE'))) {
      throw new ReadOnlyViolation(`refused: ${token.value === 'NEXT' ? 'NEXT VALUE' : token.value} (at character ${token.start + 1}) advances a sequence, which is a write`);
    }
    if (token.kind === 'word' && token.value === 'FOR' && next?.kind === 'word' && LOCKING_AFTER_FOR.has(next.value)) {
      throw new ReadOnlyViolation(`refused: FOR ${next.value} (at character ${token.start + 1}) takes row locks, which read-only mode does not allow`);
    }
    if (token.kind !== 'word' && token.kind !== 'quoted') continue;
    const name = token.value.toLowerCase();
    const calls = next?.kind === 'punct' && next.value === '(';
    if (calls && matches(rules, name)) {
      throw new ReadOnlyViolation(`refused: the function ${name}() (at character ${token.start + 1}) has side effects (files, network, sequences, locks or settings) and is not allowed in read-only mode`);
    }
    const isPackage = next?.kind === 'punct' && next.value === '.';
    if (isPackage && matches(rules.packages, name)) {
      throw new ReadOnlyViolation(`refused: the package ${name.toUpperCase()} (at character ${token.start + 1}) can reach files, the network, jobs or dynamic SQL, and is not allowed in read-only mode`);
    }
  }
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
      `refused: ${name ? `PRAGMA ${name}${setsValue ? ' = ...' : ''}` : 'this PRAGMA'} is not a read-only PRAGMA; allowed: ${[...SQLITE_PRAGMAS_BARE].sort().join(', ')} (without "=")`,
    );
  }
  if (rest.length && !(SQLITE_PRAGMAS_WITH_NAME.has(name) && isSingleParenthesizedName(rest))) {
    throw new ReadOnlyViolation(`refused: PRAGMA ${name}(...) sets a value; only table-information PRAGMAs take an argument (${[...SQLITE_PRAGMAS_WITH_NAME].sort().join(', ')})`);
  }
}

function isSingleParenthesizedName(tokens: Token[]): boolean {
  return tokens.length === 3 && tokens[0]!.value === '(' && tokens[2]!.value === ')' && tokens[1]!.kind !== 'punct';
}
