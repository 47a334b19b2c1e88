// Makes V8's code cache for dist/bundle/main.cjs (run by scripts/postbuild.mjs in a child
// process): runs a few everyday commands in an empty home and folder, then writes the bytecode of
// every function compiled so far. Usage: node scripts/code-cache.mjs BUNDLE CACHE
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [bundlePath, cachePath] = process.argv.slice(2);
const { loadBundle } = await import(new URL('../dist/cli/load-bundle.cjs', import.meta.url).href);
const home = mkdtempSync(join(tmpdir(), 'quarry-code-cache-'));
try {
  writeFileSync(join(home, 'notes.txt'), 'one\ntwo\nthree\n');
  process.chdir(home);
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, { HOME: home, QUARRY_HOME: join(home, '.quarry'), PATH: '/usr/bin:/bin' });
  const { main, script } = loadBundle(bundlePath, false);
  const commands = [
    ['tools'],
    ['--help'],
    ['profiles'],
    ['db', 'list'],
    ['tool', 'read', '--args', JSON.stringify({ path: 'notes.txt' })],
    ['tool', 'list', '--args', JSON.stringify({ path: '.' })],
  ];
  for (const args of commands) await main(args);
  writeFileSync(cachePath, script.createCachedData());
} finally {
  process.chdir(tmpdir());
  rmSync(home, { recursive: true, force: true });
}
