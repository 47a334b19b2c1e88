import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** `$QUARRY_HOME`, default `~/.quarry`: config.yaml, profiles/, prompts/, sessions/. */
export function quarryHome(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env.QUARRY_HOME;
  return configured ? resolve(configured) : join(homedir(), '.quarry');
}

/** The installed package's root (where profiles/ and package.json live). */
export function packageRoot(): string {
  // dist/config.js -> package root
  return resolve(new URL('.', import.meta.url).pathname, '..');
}
