'use strict';
/**
 * The unit tier's guard (test/support/tiers.ts): in a unit-tier test worker, and in every Node
 * process it starts (NODE_OPTIONS carries this file), starting the built CLI, a database server,
 * sshd, ClickHouse or a browser throws, so a file the tier classifier missed fails with a message
 * saying what it started instead of silently slowing the inner loop down.
 */
const childProcess = require('node:child_process');
const { syncBuiltinESMExports } = require('node:module');
const { basename, resolve } = require('node:path');

const REPO_ROOT = resolve(__dirname, '..', '..');
const CLI = resolve(REPO_ROOT, 'dist', 'cli.cjs');
const SERVERS = new Set([
  'postgres',
  'pg_ctl',
  'pg_ctlcluster',
  'initdb',
  'mysqld',
  'mariadbd',
  'mysqld_safe',
  'mariadb-install-db',
  'mysql_install_db',
  'sshd',
  'clickhouse',
  'clickhouse-server',
  'chromium',
  'chromium-browser',
  'chrome',
  'google-chrome',
  'headless_shell',
]);
const MARK = Symbol.for('quarry.unitTierGuard');

function refusal(what) {
  return new Error(
    `unit tier: this test starts ${what}, which only the integration and database tiers may do. ` +
      'test/support/tiers.ts classifies test files by the helpers they import and what they name (README Tests); ' +
      'import the starting helper from test/support (runQuarry, runCli, spawnCli, runOnPty, servers, sshd) or name what it needs so the file lands in its tier.',
  );
}

/** What a command line would start that the unit tier refuses, or undefined. */
function forbidden(file, args) {
  const words = [file, ...(Array.isArray(args) ? args : [])].filter((word) => typeof word === 'string');
  for (const word of words) {
    if (word.includes('dist/cli.cjs') || resolve(word) === CLI) return 'the built CLI (dist/cli.cjs)';
  }
  // The program itself; exec('…') passes a command line, whose first word is the program.
  const program = typeof file === 'string' ? basename(file.trim().split(/\s+/)[0] || '') : '';
  if (SERVERS.has(program)) return program;
  return undefined;
}

function install() {
  if (globalThis[MARK]) return;
  globalThis[MARK] = true;
  for (const name of ['spawn', 'spawnSync', 'execFile', 'execFileSync', 'exec', 'execSync', 'fork']) {
    const original = childProcess[name];
    childProcess[name] = function guarded(file, args, ...rest) {
      const what = forbidden(name === 'fork' ? resolve(String(file)) : file, args);
      if (what) throw refusal(what);
      return original.call(this, file, args, ...rest);
    };
  }
  syncBuiltinESMExports();
  const main = process.argv[1];
  if (main && resolve(main) === CLI) {
    process.stderr.write(`${refusal('the built CLI (dist/cli.cjs)').message}\n`);
    process.exit(70);
  }
}

install();
module.exports = { forbidden };
