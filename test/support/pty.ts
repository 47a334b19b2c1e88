import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { CLI_PATH, REPO_ROOT } from './cli.js';

/** Drives the real CLI on a pseudo-terminal (Python's pty support; no native npm module needed). */
export type PtyStep = { expect: string } | { send: string } | { sleep: number };

export interface PtyResult {
  transcript: string;
  code: number | null;
  failed: string | null;
}

export function runOnPty(args: string[], env: Record<string, string | undefined>, steps: PtyStep[], timeoutSeconds = 25): Promise<PtyResult> {
  const spec = JSON.stringify({ argv: [process.execPath, CLI_PATH, ...args], env, cwd: REPO_ROOT, steps, timeout: timeoutSeconds });
  return new Promise((resolve, reject) => {
    execFile('python3', [join(REPO_ROOT, 'test', 'support', 'pty-driver.py'), spec], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`pty driver failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as PtyResult);
    });
  });
}
