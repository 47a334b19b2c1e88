import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `$QUARRY_HOME`, default `~/.quarry`: config.yaml, profiles/, prompts/, sessions/. */
export function quarryHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.QUARRY_HOME;
  return configured ? resolve(configured) : join(homedir(), '.quarry');
}

let root: string | undefined;

/** The installed package's root (where profiles/ and package.json live). */
export function packageRoot(): string {
  if (root) return root;
  // This code runs from dist/config/home.js, from dist/bundle/main.cjs or (tests) from src/config/home.ts:
  // the root is the nearest directory upwards with a package.json.
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  root = dir;
  return root;
}

/** Where config.yaml is read from, and the flag that named it (then the file must exist). */
export interface ConfigFileLocation {
  path: string;
  flag?: '--config';
}

/**
 * The one place that decides which config.yaml a command reads (docs/guide/running.md,
 * `--config`): the `--config FILE` given (relative to `cwd`; it must exist), else
 * `$QUARRY_HOME/config.yaml` (which may be absent: nothing configured).
 */
export function configFileLocation(configFlag: string | undefined, env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): ConfigFileLocation {
  return configFlag ? { path: resolve(cwd, configFlag), flag: '--config' } : { path: join(quarryHome(env), 'config.yaml') };
}
