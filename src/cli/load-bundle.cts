// Loads the build's CommonJS bundle of the CLI (dist/bundle/main.cjs, made by scripts/postbuild.mjs)
// with V8's code cache beside it, so that a command deserializes compiled bytecode instead of
// compiling about 2 MB of JavaScript. Used by dist/cli.cjs and, to make the cache, scripts/code-cache.mjs.
// CommonJS like the entry point, which requires it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

type CliModule = typeof import('./main.js', { with: { 'resolution-mode': 'import' }});
type BundleFunction = (
  module: { exports: unknown },
  exports: unknown,
  require: NodeJS.Require,
  filename: string,
  dirname: string,
  quarryImport: (specifier: string) => Promise<unknown>,
) => void;

export interface LoadedBundle {
  main: CliModule['main'];
  /** The compiled script, for createCachedData(). */
  script: Script;
  /** Whether V8 used the cache (false: none, or it did not fit this Node, its flags or the bundle). */
  cacheUsed: boolean;
}

/** The bundle's cache file: `main.cjs.cache` beside it. */
export function codeCachePath(bundlePath: string): string {
  return `${bundlePath}.cache`;
}

export function loadBundle(bundlePath: string, useCache = true): LoadedBundle {
  let cachedData: Buffer | undefined;
  if (useCache) {
    try {
      cachedData = readFileSync(codeCachePath(bundlePath));
    } catch {
      cachedData = undefined;
    }
  }
  // esbuild writes ASCII only (non-ASCII characters escaped), so latin1 reads the same text, faster.
  const script = new Script(readFileSync(bundlePath, 'latin1'), { filename: bundlePath, cachedData });
  const load = script.runInThisContext() as BundleFunction;
  const module = { exports: {} as CliModule };
  // Packages that have no CommonJS entry are imported by this module (scripts/postbuild.mjs, IMPORT_ONLY).
  load(module, module.exports, createRequire(bundlePath), bundlePath, dirname(bundlePath), (specifier) => import(specifier));
  return { main: module.exports.main, script, cacheUsed: cachedData !== undefined && !script.cachedDataRejected };
}
