#!/usr/bin/env node
// Entry point (the `quarry` bin). A CommonJS file, so that starting quarry does not start Node's
// ES module loader (about 20 ms): it loads the build's bundle of the CLI synchronously
// (dist/bundle/main.cjs with its code cache, see src/cli/load-bundle.cts), or, in a tree built
// without the bundle, the plain compiled modules. `quarry --version` loads neither.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { main as Main } from './cli/main.js' with { 'resolution-mode': 'import' };

const args = process.argv.slice(2);
// `--version` anywhere before a command or prompt (e.g. `quarry --no-color --version`).
const versionAsked = args.findIndex((arg) => arg === '--version' || arg === '-V');
if (versionAsked >= 0 && args.slice(0, versionAsked).every((arg) => arg.startsWith('-') && arg !== '--')) {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string };
  process.stdout.write(`${pkg.version}\n`);
} else {
  const bundle = join(__dirname, 'bundle', 'main.cjs');
  // `quarry tool sqlite …` is sure to use SQLite's own process: it starts now, before the bundle
  // loads, so that its Node start overlaps quarry's (src/tools/database/drivers/sqlite-spawn.cts).
  const sqliteChild = join(__dirname, 'bundle', 'sqlite-child.cjs');
  if (args[0] === 'tool' && args[1] === 'sqlite' && existsSync(sqliteChild)) {
    (require('./tools/database/drivers/sqlite-spawn.cjs') as typeof import('./tools/database/drivers/sqlite-spawn.cjs')).startSpareSqliteProcess(sqliteChild);
  }
  const main: Promise<typeof Main> = existsSync(bundle)
    ? Promise.resolve((require('./cli/load-bundle.cjs') as typeof import('./cli/load-bundle.cjs')).loadBundle(bundle).main)
    : import('./cli/main.js').then((module) => module.main);
  void main
    .then((run) => run(args))
    .then((code) => {
      process.exitCode = code;
    });
}
