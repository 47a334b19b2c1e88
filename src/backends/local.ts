import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, link, lstat, mkdir, readdir, readFile, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, delimiter, dirname, join } from 'node:path';
import { globFiles } from './glob-files.js';
import { tempPathFor } from './temp-files.js';
import type { Backend, ByteRange, DirEntry, EntryType, ExecOptions, ExecResult, FileStat, GlobOptions, GlobResult, WriteOptions } from './types.js';

const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** Grace period between SIGTERM and SIGKILL for a process group. */
const KILL_GRACE_MS = 2000;
const READ_CHUNK_BYTES = 256 * 1024;

async function* emptyChunks(): AsyncIterable<Buffer> {}

function entryType(stats: Stats): EntryType {
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isDirectory()) return 'directory';
  if (stats.isFile()) return 'file';
  return 'other';
}

function toFileStat(stats: Stats): FileStat {
  return { type: entryType(stats), size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs };
}

async function statOrNull(fn: () => Promise<Stats>): Promise<FileStat | null> {
  try {
    return toFileStat(await fn());
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/** Kills a detached child's whole process group: SIGTERM, then SIGKILL if it lingers. */
export function killProcessGroup(pid: number, exited: () => boolean): void {
  const send = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  send('SIGTERM');
  // SIGKILL the group even when the leader has exited: its children may outlive it.
  const timer = setTimeout(() => send('SIGKILL'), exited() ? 0 : KILL_GRACE_MS);
  timer.unref();
}

/** Appends to a buffer list up to a byte budget; counts what it had to drop. */
class BoundedBuffer {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  dropped = 0;
  constructor(private readonly limit: number) {}
  push(chunk: Buffer): void {
    const room = this.limit - this.kept;
    if (room <= 0) {
      this.dropped += chunk.length;
      return;
    }
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
    this.dropped += chunk.length - part.length;
  }
  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.kept);
  }
}

export class LocalBackend implements Backend {
  readonly name = 'local' as const;
  private ripgrep: Promise<string | null> | undefined;

  async homeDir(): Promise<string> {
    return homedir();
  }

  async tempDir(): Promise<string> {
    return tmpdir();
  }

  async environment(): Promise<Record<string, string>> {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
    return env;
  }

  execFile(argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    const [program, ...args] = argv;
    if (!program) return Promise.reject(new Error('execFile needs a program'));
    const started = performance.now();
    return new Promise((resolvePromise, rejectPromise) => {
      const child = spawn(program, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true, // its own process group, so that a kill reaches every descendant
      });
      const stdout = new BoundedBuffer(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
      const stderr = new BoundedBuffer(1024 * 1024);
      let exited = false;
      let timedOut = false;
      let aborted = false;
      const stop = () => {
        if (child.pid !== undefined && !exited) killProcessGroup(child.pid, () => exited);
      };
      const timer = options.timeoutMs !== undefined ? setTimeout(() => { timedOut = true; stop(); }, options.timeoutMs) : undefined;
      const onAbort = () => { aborted = true; stop(); };
      if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });

      child.stdout.on('data', (chunk: Buffer) => {
        stdout.push(chunk);
        options.onStdout?.(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.on('error', (error) => {
        exited = true;
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        rejectPromise(error);
      });
      child.on('close', (code) => {
        exited = true;
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        resolvePromise({
          stdout: stdout.toBuffer(),
          stderr: stderr.toBuffer(),
          exitCode: code,
          timedOut,
          aborted,
          droppedBytes: stdout.dropped,
          durationMs: performance.now() - started,
        });
      });
    });
  }

  async which(program: string): Promise<string | null> {
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
      if (!dir) continue;
      const candidate = join(dir, program);
      const found = await statOrNull(() => stat(candidate));
      if (found?.type === 'file' && (found.mode & 0o111) !== 0) return candidate;
    }
    return null;
  }

  ripgrepPath(): Promise<string | null> {
    if (process.env.QUARRY_NO_RIPGREP === '1') return Promise.resolve(null);
    this.ripgrep ??= import('@vscode/ripgrep')
      .then(async ({ rgPath }) => ((await statOrNull(() => stat(rgPath))) ? rgPath : this.which('rg')))
      .catch(() => this.which('rg'));
    return this.ripgrep;
  }

  lstat(path: string): Promise<FileStat | null> {
    return statOrNull(() => lstat(path));
  }

  stat(path: string): Promise<FileStat | null> {
    return statOrNull(() => stat(path));
  }

  realpath(path: string): Promise<string> {
    return realpath(path);
  }

  readFile(path: string): Promise<Buffer> {
    return readFile(path);
  }

  readStream(path: string, range?: ByteRange): AsyncIterable<Buffer> {
    if (!range) return createReadStream(path, { highWaterMark: READ_CHUNK_BYTES });
    // fs counts `end` inclusive and cannot express an empty range.
    if (range.end <= range.start) return emptyChunks();
    return createReadStream(path, { highWaterMark: READ_CHUNK_BYTES, start: range.start, end: range.end - 1 });
  }

  async writeFileAtomic(path: string, data: Buffer, options: WriteOptions): Promise<void> {
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const temporary = tempPathFor(path);
    const existing = options.exclusive ? null : await statOrNull(() => stat(path));
    try {
      // Inside the try: a write that fails part-way (ENOSPC) leaves a partial temporary file.
      await writeFile(temporary, data, { flag: 'wx', mode: existing?.mode ?? 0o666 });
      if (existing) await chmod(temporary, existing.mode);
      if (options.exclusive) {
        // link() fails with EEXIST instead of replacing: no window in which another file is overwritten.
        await link(temporary, path);
        await unlink(temporary);
      } else {
        await rename(temporary, path);
      }
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      throw error;
    }
  }

  async listDir(path: string): Promise<DirEntry[]> {
    const names = await readdir(path);
    const entries = await Promise.all(
      names.map(async (name) => {
        const found = await statOrNull(() => lstat(join(path, name)));
        return found ? { name, ...found } : null;
      }),
    );
    return entries.filter((entry): entry is DirEntry => entry !== null);
  }

  glob(pattern: string, options: GlobOptions): Promise<GlobResult> {
    return globFiles(pattern, options);
  }
}
