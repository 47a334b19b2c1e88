import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { CLI_PATH, REPO_ROOT } from '../support/cli.js';

// The build's bundle and V8 code cache (scripts/postbuild.mjs, src/cli/load-bundle.cts): a plain
// `node` must accept the cache, and the bundle must run without it.
const bundle = join(REPO_ROOT, 'dist/bundle/main.cjs');
const loader = join(REPO_ROOT, 'dist/cli/load-bundle.cjs');

/** Loads the bundle in a fresh `node` (no NODE_OPTIONS: V8 flags there would not match the cache) and runs `tools`. */
function load(bundlePath: string): { cacheUsed: boolean; tools: string } {
  const script = `
    const { loadBundle } = await import(${JSON.stringify(loader)});
    const { main, cacheUsed } = loadBundle(${JSON.stringify(bundlePath)});
    let tools = '';
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (text) => { tools += text; return true; };
    const code = await main(['tools', '--profile', 'readonly']);
    process.stdout.write = write;
    process.stdout.write(JSON.stringify({ cacheUsed, code, tools }));`;
  const { NODE_OPTIONS: _ignored, ...env } = process.env;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: makeTempDir(),
    env: { ...env, QUARRY_HOME: makeTempDir('quarry-home-') },
    encoding: 'utf8',
  });
  const result = JSON.parse(output) as { cacheUsed: boolean; code: number; tools: string };
  expect(result.code).toBe(0);
  return result;
}

describe('the bundle and its code cache', () => {
  it('node accepts the cache the build made, and the bundle runs the same without one', () => {
    const cached = load(bundle);
    expect(cached.cacheUsed).toBe(true);
    expect(cached.tools).toMatch(/^Tools under profile "readonly":/);
    // A copy of the package without the cache file (and without node_modules: tools needs none).
    const copy = makeTempDir('quarry-package-');
    for (const entry of ['package.json', 'profiles', 'schemas', 'dist/profiles', 'dist/bundle/main.cjs'])
      cpSync(join(REPO_ROOT, entry), join(copy, entry), { recursive: true });
    const uncached = load(join(copy, 'dist/bundle/main.cjs'));
    expect(uncached.cacheUsed).toBe(false);
    expect(uncached.tools).toBe(cached.tools);
  });

  it("the bin starts without Node's ES module loader (about 20 ms) or child processes for everyday commands, and still answers", () => {
    // A preload that reports, at exit, which of Node's own modules the process loaded.
    const dir = makeTempDir();
    const preload = join(dir, 'report-loaded.cjs');
    writeFileSync(preload, "process.on('exit', () => require('node:fs').writeSync(3, JSON.stringify(process.moduleLoadList)));\n");
    writeFileSync(join(dir, 'notes.txt'), 'one\n');
    const { NODE_OPTIONS: _ignored, ...env } = process.env;
    const loadedModules = (argv: string[]) => {
      const run = spawnSync(process.execPath, ['--require', preload, ...argv], {
        cwd: dir,
        env: { ...env, QUARRY_HOME: makeTempDir('quarry-home-') },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      });
      expect(run.status, `${argv.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stdout.length, argv.join(' ')).toBeGreaterThan(0);
      return JSON.parse(run.output[3] as string) as string[];
    };
    const esmModules = (argv: string[]) => loadedModules(argv).filter((name) => name.includes('internal/modules/esm/'));
    // A preload itself sets up part of the loader; an ES module entry loads the rest (module_job, translators, ...).
    const baseline = esmModules(['-e', 'console.log(1)']);
    expect(esmModules(['--input-type=module', '-e', 'console.log(1)']).filter((name) => !baseline.includes(name)).length).toBeGreaterThan(0);
    for (const args of [['--help'], ['profiles'], ['db', 'list'], ['tools'], ['tool', 'read', '--args', '{"path":"notes.txt"}']]) {
      expect(
        esmModules([CLI_PATH, ...args]).filter((name) => !baseline.includes(name)),
        args.join(' '),
      ).toEqual([]);
    }
    // Nor does reading a file start child processes' machinery (node:child_process, a few ms): only a command does.
    expect(loadedModules([CLI_PATH, 'tool', 'read', '--args', '{"path":"notes.txt"}'])).not.toContain('NativeModule child_process');
    expect(loadedModules([CLI_PATH, 'tool', 'bash', '-p', 'developer', '--args', '{"command":"true"}'])).toContain('NativeModule child_process');
  });
});
