import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CLI_PATH, REPO_ROOT, runQuarry, type CliOptions, type CliResult } from './cli.js';

/** Helpers for agent runs of the real CLI: a private environment, and children driven while they run. */

/** A private QUARRY_HOME, 1 ms retry delays, and no model settings leaking in from the caller's shell. */
export function cliEnv(home: string, extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const cleared = ['QUARRY_MODEL', 'QUARRY_PROFILE', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL'];
  return {
    ...process.env,
    ...Object.fromEntries(cleared.map((name) => [name, undefined])),
    QUARRY_HOME: home,
    QUARRY_RETRY_BASE_MS: '1',
    NO_COLOR: '1',
    ...extra,
  };
}

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return runQuarry(args, { timeoutMs: 30_000, ...options });
}

export function spawnCli(args: string[], options: CliOptions = {}): ChildProcess {
  if (!existsSync(CLI_PATH)) throw new Error(`${CLI_PATH} is missing: run npm run build first`);
  return spawn(process.execPath, [CLI_PATH, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: (options.env ?? process.env) as NodeJS.ProcessEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
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
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveResult({ code, stdout, stderr });
    });
  });
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

/** The URL `quarry mcp --http` prints on stderr once it serves. */
export function mcpServingUrl(child: ChildProcess, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed: ${seen}`)), timeoutMs);
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = /at (http:\/\/\S+\/mcp)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
}
