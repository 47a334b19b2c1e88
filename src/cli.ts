#!/usr/bin/env node
// Entry point. Kept tiny so that `quarry --version` does not pay for loading yargs or any tool:
// everything else is imported only when a command needs it.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
// `--version` anywhere before a command or prompt (e.g. `quarry --no-color --version`).
const versionAsked = args.findIndex((arg) => arg === '--version' || arg === '-V');
if (versionAsked >= 0 && args.slice(0, versionAsked).every((arg) => arg.startsWith('-') && arg !== '--')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  process.stdout.write(`${pkg.version}\n`);
} else {
  // The build bundles the CLI with V8's code cache (scripts/postbuild.mjs); the plain compiled modules are the fallback.
  const bundle = fileURLToPath(new URL('./bundle/main.cjs', import.meta.url));
  const main = existsSync(bundle)
    ? (await import('./cli/load-bundle.js')).loadBundle(bundle).main
    : (await import('./cli/main.js')).main;
  process.exitCode = await main(args);
}
