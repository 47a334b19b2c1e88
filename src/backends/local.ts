import { createReadStream } from 'node:fs';
import { chmod, link, lstat, mkdir, opendir, readdir, readFile, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { escapeName, hasNameEscapes, unescapeName } from './names.js';
import { globFiles, localNameAdapter } from './glob-files.js';
import { tempPathFor } from './temp-files.js';
import { watchProcessGroup } from './process-watchdog.js';
import type { Backend, ByteRange, DirEntry, EntryType, ExecOptions, ExecResult, FileStat, GlobOptions, GlobResult, WriteOptions } from './types.js';

const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** Grace period between SIGTERM and SIGKILL for a process group. */
const KILL_GRACE_MS = 2000;
const READ_CHUNK_BYTES = 256 * 1024;

async function* emptyChunks(): AsyncIterable<Buffer> {}

async function exists(path: string | Buffer): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/**
 * The path to give `fs` for a path as the tools show it. File names that are not valid UTF-8
 * or hold control characters are shown escaped (escapeName in src/backends/names.ts), and a path
 * holding such escapes names the unescaped file when that exists (or its directory does, and the
 * path taken literally does not). Bytes that are not UTF-8 can only be passed as a Buffer.
 */
export async function localFsPath(path: string): Promise<string | Buffer> {
  if (!hasNameEscapes(path)) return path;
  const bytes = unescapeName(path);
  const usable = (): string | Buffer => (escapeName(bytes.toString('utf8')) === escapeName(bytes) ? bytes.toString('utf8') : bytes);
  if (await exists(bytes)) return usable();
  if (await exists(path)) return path;
  const slash = bytes.lastIndexOf(0x2f);
  return slash > 0 && (await exists(bytes.subarray(0, slash))) ? usable() : path;
}

function childPath(dir: string | Buffer, name: Buffer): Buffer {
  const parent = typeof dir === 'string' ? Buffer.from(dir, 'utf8') : dir;
  return Buffer.concat([parent, parent[parent.length - 1] === 0x2f ? Buffer.alloc(0) : Buffer.from('/'), name]);
}

/** Runs `work` on at most `limit` items at a time, results in order. */
async function mapBounded<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** How many lstat calls a directory listing keeps in flight. */
const STAT_CONCURRENCY = 32;

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

  async execFile(argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    const [program, ...args] = argv;
    if (!program) throw new Error('execFile needs a program');
    // Loaded on the first command, not at start-up: tools that never run one do not pay for it.
    const { spawn } = await import('node:child_process');
    const started = performance.now();
    return new Promise((resolvePromise, rejectPromise) => {
      const child = spawn(program, args, {
        cwd: options.cwd,
        env: options.env ?? process.env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true, // its own process group, so that a kill reaches every descendant
      });
      // However quarry ends (kill -9 too), the group ends with it (process-watchdog.ts).
      const dismissWatchdog = child.pid === undefined ? () => undefined : watchProcessGroup(spawn, child.pid);
      const stdout = new BoundedBuffer(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
      const stderr = new BoundedBuffer(1024 * 1024);
      let exited = false;
      let timedOut = false;
      let aborted = false;
      const stop = () => {
        if (child.pid !== undefined && !exited) killProcessGroup(child.pid, () => exited);
      };
      const timer =
        options.timeoutMs !== undefined
          ? setTimeout(() => {
              timedOut = true;
              stop();
            }, options.timeoutMs)
          : undefined;
      const onAbort = () => {
        aborted = true;
        stop();
      };
      if (options.signal?.aborted) onAbort();
      else options.signal?.addEventListener('abort', onAbort, { once: true });

      child.stdout.on('data', (chunk: Buffer) => {
        stdout.push(chunk);
        options.onStdout?.(chunk);
      });
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.on('error', (error) => {
        exited = true;
        dismissWatchdog();
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        rejectPromise(error);
      });
      child.on('close', (code) => {
        exited = true;
        dismissWatchdog();
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

  async lstat(path: string): Promise<FileStat | null> {
    const target = await localFsPath(path);
    return statOrNull(() => lstat(target));
  }

  async stat(path: string): Promise<FileStat | null> {
    const target = await localFsPath(path);
    return statOrNull(() => stat(target));
  }

  async realpath(path: string): Promise<string> {
    const target = await localFsPath(path);
    if (typeof target === 'string') return realpath(target);
    return escapeName(await realpath(target, { encoding: 'buffer' }));
  }

  async readFile(path: string): Promise<Buffer> {
    return readFile(await localFsPath(path));
  }

  readStream(path: string, range?: ByteRange): AsyncIterable<Buffer> {
    // fs counts `end` inclusive and cannot express an empty range.
    if (range && range.end <= range.start) return emptyChunks();
    const options = range ? { highWaterMark: READ_CHUNK_BYTES, start: range.start, end: range.end - 1 } : { highWaterMark: READ_CHUNK_BYTES };
    if (!hasNameEscapes(path)) return createReadStream(path, options);
    return (async function* () {
      yield* createReadStream(await localFsPath(path), options) as AsyncIterable<Buffer>;
    })();
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
    const dir = await localFsPath(path);
    const names = await readdir(dir, { encoding: 'buffer' });
    return this.statNames(path, names);
  }

  /** Entry names, escaped as the tools show them, one at a time: memory stays flat on huge directories. */
  async *listNames(path: string): AsyncIterable<string> {
    const dir = await opendir(await localFsPath(path), { encoding: 'buffer' as BufferEncoding, bufferSize: 256 });
    for await (const entry of dir) yield escapeName(entry.name as unknown as Buffer);
  }

  /** lstat of named entries (as listNames gives them), at most 32 at a time; vanished entries are left out. */
  async statEntries(path: string, names: readonly string[]): Promise<DirEntry[]> {
    return this.statNames(
      path,
      names.map((name) => unescapeName(name)),
    );
  }

  private async statNames(path: string, names: readonly Buffer[]): Promise<DirEntry[]> {
    const dir = await localFsPath(path);
    const entries = await mapBounded(names, STAT_CONCURRENCY, async (name) => {
      const found = await statOrNull(() => lstat(childPath(dir, name)));
      return found ? { name: escapeName(name), ...found } : null;
    });
    return entries.filter((entry): entry is DirEntry => entry !== null);
  }

  async glob(pattern: string, options: GlobOptions): Promise<GlobResult> {
    return globFiles(pattern, options, localNameAdapter(options.cwd, await localFsPath(options.cwd)));
  }
}
