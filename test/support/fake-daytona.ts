import { spawn } from 'node:child_process';
import { mkdir, open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { SandboxFactory, SandboxSpec, SandboxSurface } from '../../src/backends/daytona-sdk.js';
import { makeTempDir } from './context.js';

/**
 * A stand-in for a Daytona sandbox that does the real work on this machine: commands run as
 * real `sh -c` processes and files are real files, so the daytona backend is exercised end to
 * end. The sandbox's $HOME and $TMPDIR are directories inside one temporary root; other paths
 * are this machine's own. Like the real toolbox, stdout and stderr come back merged in one
 * text result, and a request timeout kills the command.
 */
export class FakeSandbox implements SandboxSurface {
  readonly id: string;
  deleted = false;
  /** Every command line run, for tests that count round trips. */
  readonly commands: string[] = [];
  readonly home: string;
  readonly temp: string;

  constructor(readonly root: string, readonly spec: SandboxSpec, index: number, private readonly path: string) {
    this.id = `fake-sandbox-${index}`;
    this.home = join(root, 'home');
    this.temp = join(root, 'tmp');
  }

  private alive(): void {
    if (this.deleted) throw new Error(`sandbox ${this.id} was deleted`);
  }

  readonly process = {
    executeCommand: (command: string, cwd?: string, env?: Record<string, string>, timeout?: number): Promise<{ exitCode: number; result: string }> => {
      this.alive();
      this.commands.push(command);
      return new Promise((resolve, reject) => {
        const child = spawn('sh', ['-c', command], {
          cwd: cwd ?? this.home,
          env: { PATH: this.path, HOME: this.home, TMPDIR: this.temp, LANG: 'C.UTF-8', ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        });
        const chunks: Buffer[] = [];
        child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
        child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
        const timer = timeout ? setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), timeout * 1000) : undefined;
        child.on('error', reject);
        child.on('close', (code, signal) => {
          if (timer) clearTimeout(timer);
          resolve({ exitCode: code ?? (signal ? 128 + 9 : 1), result: Buffer.concat(chunks).toString('utf8') });
        });
      });
    },
  };

  readonly fs = {
    uploadFile: async (file: Buffer, remotePath: string): Promise<void> => {
      this.alive();
      await writeFile(remotePath, file);
    },
    downloadFile: async (remotePath: string): Promise<Buffer> => {
      this.alive();
      return readFile(remotePath);
    },
    downloadFileStream: async (remotePath: string, options?: { signal?: AbortSignal }): Promise<Readable> => {
      this.alive();
      // Opened first, so a missing file fails the request as the real API does.
      const handle = await open(remotePath, 'r');
      const stream = handle.createReadStream({ highWaterMark: 64 * 1024 });
      options?.signal?.addEventListener('abort', () => stream.destroy(), { once: true });
      return stream;
    },
  };

  async delete(): Promise<void> {
    this.alive();
    this.deleted = true;
  }
}

export interface FakeDaytona {
  factory: SandboxFactory;
  /** Every sandbox created, in order. */
  sandboxes: FakeSandbox[];
  /** The environment a backend needs so that its spec parses. */
  env: NodeJS.ProcessEnv;
}

/** `path`: the sandbox's PATH (default this machine's), e.g. to give it a ripgrep. */
export function fakeDaytona(extraEnv: NodeJS.ProcessEnv = {}, options: { path?: string } = {}): FakeDaytona {
  const sandboxes: FakeSandbox[] = [];
  const factory: SandboxFactory = async (spec) => {
    const root = makeTempDir('quarry-fake-sandbox-');
    await mkdir(join(root, 'home'));
    await mkdir(join(root, 'tmp'));
    const sandbox = new FakeSandbox(root, spec, sandboxes.length + 1, options.path ?? process.env.PATH ?? '/usr/bin:/bin');
    sandboxes.push(sandbox);
    return sandbox;
  };
  return { factory, sandboxes, env: { DAYTONA_API_KEY: 'test-key', ...extraEnv } };
}
