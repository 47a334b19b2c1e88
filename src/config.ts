import { existsSync, readFileSync, statSync } from 'node:fs';
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
  // This code runs from dist/config.js, from dist/bundle/main.cjs or (tests) from src/config.ts:
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

/** The top-level keys of config.yaml (and of a `--databases` file, which may be the same file). */
export const CONFIG_KEYS = ['databases', 'mcp_servers'] as const;

/** An unknown top-level key is an error naming it and the allowed ones, so a typo (`mcp_server:`) is not silently ignored. */
export function checkConfigKeys(document: unknown, file: string): void {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) return;
  for (const key of Object.keys(document)) {
    if (!(CONFIG_KEYS as readonly string[]).includes(key)) {
      throw new ConfigError(`${file}: unknown key "${key}"; allowed keys: ${CONFIG_KEYS.join(', ')}`);
    }
  }
}

/**
 * The text of a configuration file. `flag` names the option the user gave the path with
 * (`--config`, `--databases`): such a file must exist. Without one (the default
 * `$QUARRY_HOME/config.yaml`) a missing file means "nothing configured" and gives undefined.
 * A folder or an unreadable file is an error naming the flag, never a raw EISDIR.
 */
export function readConfigText(path: string, flag: string | undefined): string | undefined {
  const named = flag ? `${flag} ${path}` : path;
  let stats;
  try {
    stats = statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !flag) return undefined;
    throw new ConfigError(code === 'ENOENT' ? `${named}: file not found` : `${named}: cannot read it (${code ?? (error as Error).message})`);
  }
  if (stats.isDirectory()) throw new ConfigError(`${named}: is a folder; expected a YAML file`);
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${named}: cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}
