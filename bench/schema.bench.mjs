// Knowing the data (docs/guide/databases.md): search over a 20,000-table schema and a profile of a 2,000,000-row
// table through `quarry tool sqlite`, each beside sqlite3 doing the nearest thing by hand (the
// catalogue query with the same filter; the same aggregates over every row), in alternation.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from './database.bench.mjs';
import { measurePair } from './support.mjs';

const RUNS = 3;
const TABLES = 20_000;
const ROWS = 2_000_000;

const shellQuote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

function makeDatabases(root, dir) {
  const script =
    `
    const Database = require(${JSON.stringify(join(root, 'node_modules/better-sqlite3'))});
    const many = new Database(${JSON.stringify(join(dir, 'many.db'))});
    many.transaction(() => { for (let i = 0; i < ${TABLES}; i++) many.exec('CREATE TABLE t' + String(i).padStart(5, '0') + '_facts (id INTEGER, amount ` +
    `REAL, note TEXT)'); })();
    many.exec('CREATE TABLE customer_accounts (id INTEGER PRIMARY KEY, email_address TEXT)');
    many.close();
    const big = new Database(${JSON.stringify(join(dir, 'big.db'))});
    big.exec("CREATE TABLE big (id INTEGER PRIMARY KEY, grp INTEGER, label TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ` +
    `${ROWS}) INSERT INTO big SELECT i, i % 7, 'row ' || i FROM n");
    big.close();`;
  execFileSync(process.execPath, ['-e', script]);
}

export async function run({ root }) {
  const dir = mkdtempSync(join(tmpdir(), 'quarry-bench-schema-'));
  try {
    makeDatabases(root, dir);
    const cli = join(root, 'dist/cli.cjs');
    const quarry = (args, db) => [
      'bash',
      '-c',
      `exec ${shellQuote(process.execPath)} ${shellQuote(cli)} tool sqlite -w ${shellQuote(dir)} --db ${shellQuote(db)} --args ` +
        `${shellQuote(JSON.stringify(args))} > /dev/null`,
    ];
    const sqlite3 = (db, sql) => ['bash', '-c', `sqlite3 ${shellQuote(db)} ${shellQuote(sql)} > /dev/null`];
    const rows = [];
    const pair = (name, a, b, referenceName, note, memoryNote) => {
      const result = measurePair(a, b, { runs: RUNS });
      rows.push({ name: `${name} (time)`, quarry: result.a.ms, reference: result.b.ms, ratio: result.ratio, referenceName, unit: 'ms', note });
      rows.push({ name: `${name} (peak memory)`, quarry: result.a.rssMb, reference: result.b.rssMb, referenceName, unit: 'MB', note: memoryNote });
    };
    const many = join(dir, 'many.db');
    pair(
      `search "email" over ${TABLES.toLocaleString('en-US')} tables`,
      quarry({ operation: 'search', pattern: 'email' }, many),
      sqlite3(
        many,
        "SELECT t.name, c.name FROM pragma_table_list AS t JOIN pragma_table_info(t.name, t.schema) AS c WHERE instr(lower(c.name), 'email') > 0 OR " +
          "instr(lower(t.name), 'email') > 0",
      ),
      'sqlite3 catalogue query',
      'one catalogue statement; ranked, with the total',
      'node and the CLI; the matches are bounded to 100',
    );
    const big = join(dir, 'big.db');
    pair(
      `profile ${ROWS.toLocaleString('en-US')} rows (3 columns)`,
      quarry({ operation: 'profile', table_name: 'big' }, big),
      sqlite3(big, 'SELECT COUNT(*), COUNT(grp), COUNT(DISTINCT grp), MIN(grp), MAX(grp), AVG(grp), COUNT(DISTINCT label), MIN(label), MAX(label) FROM big'),
      'sqlite3 full-table aggregates',
      'quarry samples about 100,000 rows through the rowid index',
      'node and the CLI; the engine aggregates',
    );
    const postgres = await startPostgres();
    try {
      execFileSync('psql', [
        '-X',
        '-q',
        '-d',
        postgres.url,
        '-c',
        'CREATE TABLE events AS SELECT i AS id, i % 97 AS kind FROM generate_series(1, 1000000) AS i; ALTER TABLE events ADD PRIMARY KEY (id)',
        '-c',
        'VACUUM ANALYZE events',
      ]);
      const answer = execFileSync(process.execPath, [join(root, 'bench/guard-session.mjs'), postgres.url, dir, 'SELECT * FROM events WHERE id = 4242', '200'], {
        encoding: 'utf8',
      });
      const { guarded, unguarded } = JSON.parse(answer);
      for (let start = 1; start <= TABLES; start += 500) {
        execFileSync('psql', [
          '-X',
          '-q',
          '-d',
          postgres.url,
          '-c',
          `DO $$ BEGIN FOR i IN ${start}..${start + 499} LOOP EXECUTE format('CREATE TABLE t%s_facts (id int, amount float8, note text)', lpad(i::text, 5, ` +
            `'0')); END LOOP; END $$`,
        ]);
      }
      const psql = (sql) => ['bash', '-c', `psql -X -q -d ${shellQuote(postgres.url)} -c ${shellQuote(sql)} > /dev/null`];
      const pgTool = (args) => [
        'bash',
        '-c',
        `exec ${shellQuote(process.execPath)} ${shellQuote(cli)} tool postgres -w ${shellQuote(dir)} --db ${shellQuote(postgres.url)} --args ` +
          `${shellQuote(JSON.stringify(args))} > /dev/null`,
      ];
      pair(
        `postgres search "email" over ${TABLES.toLocaleString('en-US')} tables`,
        pgTool({ operation: 'search', pattern: 'email' }),
        psql(
          "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE a.attnum > 0 AND strpos(lower(a.attname), 'email') > 0",
        ),
        'psql catalogue query',
        'one catalogue statement; ranked, with the total',
        'node and the CLI; the matches are bounded to 100',
      );
      pair(
        `postgres list_tables over ${TABLES.toLocaleString('en-US')} tables`,
        pgTool({ operation: 'list_tables' }),
        psql(
          "SELECT n.nspname, c.relname, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'v') AND " +
            "n.nspname = 'public' ORDER BY 1, 2",
        ),
        'psql catalogue query',
        'was about 20 s and 167 MB; 200 rows shown with the total',
        'node and the CLI; 200 rows',
      );
      rows.push({
        name: 'postgres query with the query guard (indexed lookup)',
        quarry: guarded,
        reference: unguarded,
        ratio: guarded / unguarded,
        referenceName: 'same, guard off',
        unit: 'ms',
        note: `guard costs ${(guarded - unguarded).toFixed(2)} ms per statement (one EXPLAIN); target: a few ms`,
      });
    } finally {
      postgres.stop();
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
