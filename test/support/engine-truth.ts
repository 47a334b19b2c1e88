import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * What the engines' own command-line clients say (psql, mariadb, clickhouse-client), as the
 * ground truth for quarry's answers and exports: rows as text, and CSV in quarry's conventions
 * (RFC 4180, records ended by CRLF, NULL an empty field).
 */

/** The cells of a result table as quarry shows it to the model (box-drawn): header first. */
export function tableCells(shown: string): string[][] {
  return shown
    .split('\n')
    .filter((line) => line.startsWith('│'))
    .map((line) =>
      line
        .split('│')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** psql's unaligned rows (tab-separated, NULL shown as NULL, as quarry shows it). */
export function psqlRows(url: string, sql: string): string[][] {
  const out = execFileSync('psql', [url, '-X', '-A', '-t', '-F', '\t', '-P', 'null=NULL', '-c', sql], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t'));
}

/** PostgreSQL's own CSV of a query (COPY ... TO STDOUT through psql), its records ended by CRLF. */
export function psqlCsv(url: string, sql: string): string {
  const out = execFileSync('psql', [url, '-X', '-q', '-c', `COPY (${sql}) TO STDOUT WITH (FORMAT csv, HEADER)`], { encoding: 'utf8' });
  return crlfRecords(out, null);
}

function mariadbArgs(url: string): string[] {
  const parsed = new URL(url);
  return [
    '--host',
    parsed.hostname,
    '--port',
    parsed.port,
    '--user',
    decodeURIComponent(parsed.username),
    `--password=${decodeURIComponent(parsed.password)}`,
    '--database',
    parsed.pathname.slice(1),
    '--skip-ssl',
    '--batch',
  ];
}

const BATCH_ESCAPES: Record<string, string> = { n: '\n', t: '\t', '0': '\0', '\\': '\\' };

/** mariadb --batch: a header, then tab-separated rows with \n, \t, \0 and \\ escaped; NULL written NULL. */
function mariadbBatch(url: string, sql: string): string[][] {
  const out = execFileSync('mariadb', [...mariadbArgs(url), '-e', sql], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t').map((field) => field.replace(/\\(.)/g, (_, ch: string) => BATCH_ESCAPES[ch] ?? ch)));
}

/** The mariadb client's rows (no header), NULL shown as NULL. */
export function mariadbRows(url: string, sql: string): string[][] {
  return mariadbBatch(url, sql).slice(1);
}

function csvQuoted(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The mariadb client's result as quarry's CSV: header, RFC 4180 quoting where needed, NULL empty, CRLF. */
export function mariadbCsv(url: string, sql: string): string {
  const [header = [], ...rows] = mariadbBatch(url, sql);
  return [header, ...rows.map((row) => row.map((field) => (field === 'NULL' ? '' : field)))].map((row) => `${row.map(csvQuoted).join(',')}\r\n`).join('');
}

export interface ClickhouseClientTarget {
  tcpPort: number;
  user: string;
  password: string;
  database: string;
}

/** clickhouse-client (native protocol) answering a statement in a format, as text. */
export function clickhouseClient(target: ClickhouseClientTarget, sql: string, format: string): string {
  if (!existsSync('/usr/bin/clickhouse-client')) throw new Error('clickhouse-client not found (install it: apt-get install -y clickhouse-client)');
  return execFileSync(
    'clickhouse-client',
    [
      '--host',
      '127.0.0.1',
      '--port',
      String(target.tcpPort),
      '--user',
      target.user,
      '--password',
      target.password,
      '--database',
      target.database,
      '--query',
      `${sql} FORMAT ${format}`,
    ],
    { encoding: 'utf8', maxBuffer: 1 << 30 },
  );
}

/**
 * A CSV text whose records end with LF as quarry writes CSV: each record ended by CRLF (a newline
 * inside a quoted field kept), and an unquoted field equal to `nullText` (ClickHouse's `\N`) empty.
 */
export function crlfRecords(csv: string, nullText: string | null): string {
  let out = '';
  let field = '';
  let quoted = false;
  const endField = () => {
    out += nullText !== null && field === nullText ? '' : field;
    field = '';
  };
  for (const ch of csv) {
    if (quoted) {
      field += ch;
      if (ch === '"') quoted = false;
      continue;
    }
    if (ch === '"') {
      quoted = true;
      field += ch;
    } else if (ch === ',') {
      endField();
      out += ',';
    } else if (ch === '\n') {
      endField();
      out += '\r\n';
    } else field += ch;
  }
  endField();
  return out;
}
