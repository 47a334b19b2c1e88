import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { REPO_ROOT } from '../support/cli.js';

/**
 * The packed package installed without its optional packages (docs/guide/install.md
 * "Optional packages"), from the registry into a temporary prefix: SQLite and the restricted shell work,
 * PostgreSQL says in one line which package to install. Into a prefix, not with -g: npm 11 ignores
 * --omit with --global and a tarball (npm/cli#8284). Slow (better-sqlite3 builds from source
 * where no prebuilt binary can be downloaded: minutes), so it runs where QUARRY_TEST_INSTALL=1
 * (.ci/run sets it) and says so in its name otherwise.
 */

const OPTIONAL = [
  'pg',
  'pg-cursor',
  'mysql2',
  'oracledb',
  'vertica-nodejs',
  'ssh2',
  '@clickhouse/client',
  '@duckdb/node-api',
  'vega',
  'vega-lite',
  '@resvg/resvg-js',
];
let prefix: string;
let quarry: string;

function run(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const result = spawnSync(quarry, args, { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const enabled = process.env.QUARRY_TEST_INSTALL === '1';

beforeAll(() => {
  if (!enabled) return;
  const dir = makeTempDir('quarry-install-');
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: REPO_ROOT, stdio: 'ignore' });
  const tarball = join(dir, readdirSync(dir).find((name) => name.endsWith('.tgz'))!);
  prefix = join(dir, 'prefix');
  execFileSync('npm', ['install', '--omit=optional', '--no-audit', '--no-fund', '--prefix', prefix, tarball], { stdio: 'ignore', timeout: 1_500_000 });
  quarry = join(prefix, 'node_modules', '.bin', 'quarry');
}, 1_600_000);

describe.skipIf(!enabled)(`installed without optional packages${enabled ? '' : ' (skipped: set QUARRY_TEST_INSTALL=1; it builds better-sqlite3)'}`, () => {
  test('none of them, nor tree-sitter-bash, is installed', () => {
    const modules = join(prefix, 'node_modules');
    for (const name of [...OPTIONAL, 'tree-sitter-bash']) expect(existsSync(join(modules, name)), name).toBe(false);
    expect(existsSync(join(modules, 'quarry', 'dist', 'tree-sitter-bash.wasm'))).toBe(true);
  });

  test('a SQLite query and the restricted shell work', () => {
    const query = run([
      'tool',
      'sqlite',
      '--db',
      'fixtures/sample.db',
      '--args',
      JSON.stringify({ operation: 'query', sql: 'SELECT count(*) AS n FROM customers' }),
    ]);
    expect(query.stderr).toBe('');
    expect(query.stdout).toMatch(/│ n +│/);
    expect(query.code).toBe(0);
    const shell = run(['tool', 'bash', '--args', JSON.stringify({ command: 'echo parsed | tr a-z A-Z' })]);
    expect(shell.stdout).toContain('PARSED');
  });

  test('a PostgreSQL URL gets one line naming the package and how to install it; db check lists what is missing', () => {
    const pg = run(['tool', 'postgres', '--db', 'postgres://u:secret@127.0.0.1:1/db', '--args', JSON.stringify({ operation: 'query', sql: 'SELECT 1' })]);
    const output = `${pg.stdout}${pg.stderr}`.trim();
    expect(output).toMatch(
      /^PostgreSQL needs the optional package pg, which is not installed; install it with: npm install -g pg@\^8\.\d+\.\d+ \(or npm install pg@\^8\.\d+\.\d+ beside a local quarry\)$/,
    );
    expect(pg.code).not.toBe(0);
    const check = run(['db', 'check', '--db', 'fixtures/sample.db']);
    expect(check.stdout).toMatch(
      /^packages: \(none\); not installed: pg, pg-cursor, mysql2, oracledb, vertica-nodejs, ssh2, @clickhouse\/client, @duckdb\/node-api/m,
    );
    expect(check.stdout).toMatch(/^ok {2}sample: SQLite /m);
  });
});
