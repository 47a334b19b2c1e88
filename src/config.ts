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
  // This code runs from dist/config.js, from a chunk in dist/bundle/ or (tests) from src/config.ts:
  // the root is the nearest directory upwards with a package.json.
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  root = dir;
  return root;
}

/** A mistake in a configuration file or variable: reported in one line as a usage error (exit 2). */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Replaces `${VAR}` with the environment's value; an unset variable is an error naming it and where. */
export function interpolateEnv(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(/\$\{([^}]*)\}/g, (_match, name: string) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ConfigError(`${where}: "\${${name}}" is not a valid variable reference`);
    const resolved = env[name];
    if (resolved === undefined) throw new ConfigError(`${where}: environment variable ${name} is not set (referenced as \${${name}})`);
    return resolved;
  });
}
