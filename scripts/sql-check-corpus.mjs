#!/usr/bin/env node
/**
 * Runs a directory of real SQL through the read-only statement check and reports the share of
 * reads it refuses, grouped by cause. The corpora are public test suites and benchmark sets that
 * are not part of this repository (PostgreSQL's regression SQL, MySQL/MariaDB's mysql-test,
 * SQLite's sqllogictest, Spider/BIRD gold SQL); the script reads them where they are.
 *
 *   npm run build
 *   node scripts/sql-check-corpus.mjs --engine postgres DIR [DIR...] [--check dist/tools/database/sql/statement-check.js] [--per-file N] [--show N]
 *   node scripts/sql-check-corpus.mjs --engine sqlite --spider-tables tables.json dev.json
 *
 * With --spider-tables (Spider's or BIRD's schema file), each record's statement is also prepared
 * by better-sqlite3 against an empty database with its schema, as written and after quarry's
 * double-quoted-string handling (sqlite-dqs.ts): how many fail to prepare before and after.
 *
 * Files by extension: `.sql` a script (psql meta-commands and COPY data skipped), `.test` a
 * sqllogictest file (sqlite) or a mysqltest file (mysql), `.json` Spider/BIRD records ({query} or
 * {SQL}), `.txt`/`.tsv` one statement a line (text before a tab). A read is a statement whose
 * leading keyword reads (SELECT, WITH, VALUES, TABLE, SHOW, DESCRIBE, EXPLAIN, PRAGMA, MariaDB's
 * ANALYZE SELECT, CHECKSUM TABLE, HELP); each distinct statement counts once.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  if (at < 0) return fallback;
  const value = args[at + 1];
  args.splice(at, 2);
  return value;
};
const engine = option('--engine');
const checkPath = resolve(option('--check', new URL('../dist/tools/database/sql/statement-check.js', import.meta.url).pathname));
const perFile = Number(option('--per-file', '1000'));
const spiderTables = option('--spider-tables');
const show = Number(option('--show', '3'));
if (!['sqlite', 'postgres', 'mysql', 'oracle', 'vertica'].includes(engine) || args.length === 0) {
  console.error('usage: node scripts/sql-check-corpus.mjs --engine sqlite|postgres|mysql|oracle|vertica DIR... [--check PATH] [--per-file N] [--show N]');
  process.exit(2);
}
for (const path of [...args, ...(spiderTables ? [spiderTables] : []), checkPath]) {
  if (!existsSync(path)) {
    console.error(`sql-check-corpus: ${path} does not exist${path === checkPath ? ' (run npm run build first, or give --check)' : ''}`);
    process.exit(2);
  }
}
const { checkReadOnlyStatement } = await import(pathToFileURL(checkPath).href);

const READ_START =
  /^[\s(]*(SELECT|WITH|VALUES|TABLE|SHOW|DESCRIBE|DESC|EXPLAIN|PRAGMA|CHECKSUM\s+TABLE|HELP|ANALYZE\s+(?:FORMAT\s*=\s*\w+\s+)?[(\s]*SELECT)\b/i;

function* files(path) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path).sort()) yield* files(join(path, name));
  } else {
    yield path;
  }
}

/** Splits SQL text at top-level semicolons (strings, quoted names, comments and dollar quotes skipped). */
function splitSql(text, { backslash = false, hash = false, dollar = false, delimiter = ';' } = {}) {
  const out = [];
  let start = 0;
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === "'" || c === '"' || c === '`') {
      i++;
      while (i < n && text[i] !== c) i += backslash && text[i] === '\\' ? 2 : 1;
      i++;
    } else if ((c === '-' && text[i + 1] === '-') || (hash && c === '#')) {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (dollar && c === '$') {
      const tag = /^\$[A-Za-z_]*\$/.exec(text.slice(i, i + 64))?.[0];
      if (tag) {
        const end = text.indexOf(tag, i + tag.length);
        i = end < 0 ? n : end + tag.length;
      } else i++;
    } else if (text.startsWith(delimiter, i)) {
      out.push(text.slice(start, i));
      i += delimiter.length;
      start = i;
    } else i++;
  }
  out.push(text.slice(start));
  return out.map((sql) => sql.trim()).filter(Boolean);
}

/** A psql script: meta-commands end the statement before them; COPY ... FROM stdin data is skipped. */
function psqlStatements(text) {
  const kept = [];
  let inCopyData = false;
  for (const line of text.split('\n')) {
    if (inCopyData) {
      if (line.startsWith('\\.')) inCopyData = false;
      continue;
    }
    if (/^\s*\\/.test(line)) {
      kept.push(';');
      continue;
    }
    // \g, \gset, \gx, \gexec, \crosstabview after a statement end it, like ";".
    kept.push(line.replace(/\s\\(g|gset|gx|gexec|gdesc|crosstabview|watch)\b.*$/, ';'));
    if (/^\s*COPY\b.*\bFROM\s+stdin/i.test(line) && line.trimEnd().endsWith(';')) inCopyData = true;
  }
  return splitSql(kept.join('\n'), { dollar: true });
}

/** sqllogictest records: `statement ok|error` and `query TYPES ...` followed by SQL up to `----` or a blank line. */
function sqllogictestStatements(text) {
  const out = [];
  for (const record of text.split(/\n\s*\n/)) {
    const lines = record.split('\n').filter((line) => !line.startsWith('#'));
    let skip = false;
    while (lines.length && /^(skipif|onlyif|hash-threshold)\b/.test(lines[0])) {
      const [directive, target] = lines.shift().split(/\s+/);
      if ((directive === 'onlyif' && target !== 'sqlite') || (directive === 'skipif' && target === 'sqlite')) skip = true;
    }
    if (skip || !lines.length || !/^(statement|query)\b/.test(lines[0])) continue;
    const end = lines.findIndex((line) => line.trim() === '----');
    out.push(
      lines
        .slice(1, end < 0 ? undefined : end)
        .join('\n')
        .trim(),
    );
  }
  return out.filter(Boolean);
}

const MYSQLTEST_COMMANDS =
  /^(let|eval|echo|connect|connection|disconnect|source|if|while|}|{|sleep|real_sleep|error|send|reap|query_vertical|query_horizontal|replace_column|replace_result|replace_regex|disable_\w+|enable_\w+|exec|perl|die|skip|inc|dec|vertical_results|horizontal_results|system|write_file|append_file|cat_file|remove_file|remove_files_wildcard|copy_file|move_file|file_exists|mkdir|rmdir|list_files\w*|save_master_pos|sync_slave_with_master|sync_with_master|wait_for_slave_to_stop|dirty_close|ping|character_set|sorted_result|start_timer|end_timer|result_format|lowercase_result|query_get_value|change_user|chmod|exit|send_eval|shutdown_server|send_shutdown|debug_sync|--)\b/i;

/** mysqltest: `--command` lines and mysqltest's own commands skipped; `delimiter X` honoured; $variables dropped. */
function mysqltestStatements(text) {
  const out = [];
  let delimiter = ';';
  let buffer = [];
  let heredoc = null;
  const flush = () => {
    if (buffer.length) out.push(...splitSql(buffer.join('\n'), { backslash: true, hash: true, delimiter }));
    buffer = [];
  };
  for (const line of text.split('\n')) {
    if (heredoc) {
      if (line.trim() === heredoc) heredoc = null;
      continue;
    }
    const trimmed = line.trim();
    const block = /^(--)?\s*(perl|write_file|append_file)\b.*?(?:\s(\w+))?\s*;?$/i.exec(trimmed);
    if (block) {
      flush();
      heredoc = block[3] && block[2].toLowerCase() !== block[3].toLowerCase() && !block[3].includes('/') ? block[3] : 'EOF';
      continue;
    }
    const changed = /^(--)?\s*delimiter\s+(\S+?)\s*$/i.exec(trimmed);
    if (changed) {
      flush();
      delimiter = changed[2].replace(new RegExp(`${delimiter.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`), '') || changed[2];
      continue;
    }
    // `--command` and `-- command` lines are mysqltest's, `#` lines comments.
    if (trimmed.startsWith('--') || trimmed.startsWith('#')) continue;
    buffer.push(line);
    if (trimmed.endsWith(delimiter)) flush();
  }
  flush();
  return out.filter((sql) => !MYSQLTEST_COMMANDS.test(sql) && !/\$[A-Za-z_{]/.test(sql));
}

function jsonStatements(text) {
  const records = JSON.parse(text);
  return (Array.isArray(records) ? records : []).map((record) => record.query ?? record.SQL ?? record.sql).filter((sql) => typeof sql === 'string');
}

function statementsOf(path) {
  const text = readFileSync(path, 'utf8');
  switch (extname(path)) {
    case '.sql':
      return engine === 'postgres' ? psqlStatements(text) : splitSql(text, { backslash: engine === 'mysql', hash: engine === 'mysql' });
    case '.test':
      return engine === 'mysql' ? mysqltestStatements(text) : sqllogictestStatements(text);
    case '.json':
      return jsonStatements(text);
    case '.txt':
    case '.tsv':
      return text
        .split('\n')
        .map((line) => line.split('\t')[0].trim())
        .filter(Boolean);
    default:
      return [];
  }
}

if (spiderTables) {
  await prepareSpider(spiderTables, args);
  process.exit(0);
}

/** Spider/BIRD records ({db_id, query}) prepared against empty databases with their schemas. */
async function prepareSpider(tablesPath, recordFiles) {
  const { default: Database } = await import('better-sqlite3');
  const { withDoubleQuotedStrings } = await import(new URL('../dist/tools/database/drivers/sqlite-dqs.js', import.meta.url).href);
  const schemas = new Map();
  for (const schema of JSON.parse(readFileSync(tablesPath, 'utf8'))) {
    const db = new Database(':memory:');
    const quote = (name) => `"${name.replaceAll('"', '""')}"`;
    schema.table_names_original.forEach((table, index) => {
      if (/^sqlite_/i.test(table)) return;
      const columns = schema.column_names_original
        .map(([owner, name], at) => ({ owner, name, type: schema.column_types[at] === 'number' ? 'NUMERIC' : 'TEXT' }))
        .filter(({ owner }) => owner === index)
        .map(({ name, type }) => `${quote(name)} ${type}`);
      db.exec(`CREATE TABLE ${quote(table)} (${columns.join(', ') || 'x'})`);
    });
    schemas.set(schema.db_id, db);
  }
  let records = 0;
  let failedBefore = 0;
  let failedAfter = 0;
  const reasons = new Map();
  for (const file of recordFiles) {
    for (const record of JSON.parse(readFileSync(file, 'utf8'))) {
      const db = schemas.get(record.db_id);
      const sql = record.query ?? record.SQL;
      if (!db || typeof sql !== 'string') continue;
      records++;
      const fails = (text) => {
        try {
          db.prepare(text);
          return null;
        } catch (error) {
          return error.message;
        }
      };
      if (fails(sql)) failedBefore++;
      const after = fails(withDoubleQuotedStrings(db, sql));
      if (after) {
        failedAfter++;
        const reason = after.replace(/: .*/, '');
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      }
    }
  }
  const percent = (part) => ((100 * part) / records).toFixed(1);
  console.log(
    `${records} statements prepared against their schemas: ${failedBefore} (${percent(failedBefore)}%) fail as written, ${failedAfter} ` +
      `(${percent(failedAfter)}%) with double-quoted strings accepted`,
  );
  for (const [reason, count] of reasons) console.log(`${String(count).padStart(7)}  ${reason}`);
}

const seen = new Set();
let total = 0;
let reads = 0;
let refused = 0;
const causes = new Map();
for (const dir of args) {
  for (const path of files(dir)) {
    let taken = 0;
    for (const sql of statementsOf(path)) {
      if (seen.has(sql)) continue;
      seen.add(sql);
      total++;
      if (!READ_START.test(sql.replace(/^(\s*(--[^\n]*\n|\/\*[^!][\s\S]*?\*\/))*/, ''))) continue;
      if (++taken > perFile) break;
      reads++;
      try {
        checkReadOnlyStatement(sql, engine);
      } catch (error) {
        if (!/^refused/.test(error.message)) throw error;
        refused++;
        const cause = error.message
          .replace(/\(at character \d+\)/g, '')
          .replace(/character \d+/g, 'character N')
          .replace(/\s*\(found \d+,/, ' (found N,')
          .replace(/; allowed: .*/, '')
          .replace(/;.*$/, '')
          .slice(0, 110);
        const entry = causes.get(cause) ?? { count: 0, examples: [] };
        entry.count++;
        if (entry.examples.length < show) entry.examples.push(sql.replace(/\s+/g, ' ').slice(0, 140));
        causes.set(cause, entry);
      }
    }
  }
}

const percent = (part, whole) => (whole ? ((100 * part) / whole).toFixed(2) : '0.00');
console.log(`${engine}: ${total} distinct statements, ${reads} reads, ${refused} refused (${percent(refused, reads)}%) by ${checkPath}`);
for (const [cause, { count, examples }] of [...causes].sort((a, b) => b[1].count - a[1].count)) {
  console.log(`${String(count).padStart(7)}  ${cause}`);
  for (const example of examples) console.log(`           e.g. ${example}`);
}
