import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Runs the real, compiled CLI (`npm run build` first; `npm test` does it). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = join(REPO_ROOT, 'dist', 'cli.js');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  input?: string;
  timeoutMs?: number;
}

/** The environment of a test run: a private QUARRY_HOME, short retry delays, no stray model settings. */
export function cliEnv(home: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env, QUARRY_HOME: home, QUARRY_RETRY_BASE_MS: '1', NO_COLOR: '1' };
  for (const name of ['QUARRY_MODEL', 'QUARRY_PROFILE', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL']) delete env[name];
  return { ...env, ...extra };
}

export function spawnCli(args: string[], options: CliOptions = {}): ChildProcess {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`);
  return spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? REPO_ROOT, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
}

export function collect(child: ChildProcess, timeoutMs = 30_000): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolveResult, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolveResult({ code, signal, stdout, stderr });
    });
  });
}

export async function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const child = spawnCli(args, options);
  if (options.input !== undefined) child.stdin?.end(options.input);
  else child.stdin?.end();
  return collect(child, options.timeoutMs);
}

/** Resolves once the child's stdout contains text matching the pattern. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 15_000): Promise<string> {
  let seen = '';
  return new Promise((resolveText, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern} in: ${seen}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      if (pattern.test(seen)) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolveText(seen);
      }
    };
    child.stdout?.on('data', onData);
  });
}
