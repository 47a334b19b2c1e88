import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { watchProcessGroup } from '../../../backends/process-watchdog.js';
import { packageRoot } from '../../../config/home.js';
import { ToolError, type ToolErrorKind } from '../../core/types.js';
import { ReadOnlyViolation } from '../sql/statement-check.js';
import { spawnSqliteProcess, takeSpareSqliteProcess } from './sqlite-spawn.cjs';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';
import type { ChildError, ChildReply, ChildRequest, DirectWritten } from './sqlite-child-protocol.js';

/**
 * SQLite, used in a child process of its own (sqlite-child.ts says why): this driver sends each
 * call there and waits for the answer. Ctrl+C, the statement timeout and the profile budget (an
 * abort of the call's signal) kill that process at once, so SQLite stops within milliseconds
 * whatever it is doing; the next call starts a fresh one. The process is kept between calls (one
 * per connection, started on connect), so an ordinary query costs one round trip (well under a
 * millisecond), not a start. A watchdog (backends/process-watchdog.ts) ends it if quarry is
 * killed; quarry's exit closes its IPC channel, on which it exits by itself.
 */

/** What of the child's standard error is kept, for the message when it dies. */
const STDERR_KEPT = 4096;

/** Compiled JavaScript of the child: the CommonJS bundle beside the CLI's (dist/bundle), else the build's per-module copy (tests run TypeScript). */
export function childScript(name: string, moduleUrl: string): string {
  const beside = join(fileURLToPath(new URL('.', moduleUrl)), `${name}.cjs`);
  if (existsSync(beside)) return beside;
  return join(packageRoot(), `dist/tools/database/drivers/${name}.js`);
}

/** Every SQLite process of this one, killed when quarry exits (a run's exit does not wait for its calls to unwind). */
const children = new Set<ChildProcess>();
let exitHookSet = false;

function killGroup(child: ChildProcess): void {
  children.delete(child);
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

interface Spawned {
  child: ChildProcess;
  dismissWatchdog: () => void;
  /** What of its standard error is kept (STDERR_KEPT), from its start. */
  stderr: { text: string };
  /** Why it could not be started, if it could not. */
  failed: { error: Error | null };
}

/**
 * A SQLite process (not yet given a database) with its watchdog: the one the CLI's entry point
 * started ahead of need (sqlite-spawn.cts), else a new one. Nothing of it keeps quarry alive yet.
 */
async function spawnChild(): Promise<Spawned> {
  const { spawn } = await import('node:child_process');
  const child = takeSpareSqliteProcess() ?? spawnSqliteProcess(childScript('sqlite-child', import.meta.url));
  children.add(child);
  if (!exitHookSet) {
    exitHookSet = true;
    process.on('exit', () => {
      for (const each of children) killGroup(each);
    });
  }
  const stderr = { text: '' };
  child.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.text.length < STDERR_KEPT) stderr.text += chunk.toString('utf8');
  });
  const failed = { error: null as Error | null };
  child.on('error', (error) => {
    failed.error ??= error;
  });
  for (const handle of [child, child.channel, child.stderr] as ({ unref?: () => void } | null | undefined)[]) handle?.unref?.();
  return { child, dismissWatchdog: child.pid === undefined ? () => undefined : watchProcessGroup(spawn, child.pid), stderr, failed };
}

type Call = ChildRequest extends infer R ? (R extends ChildRequest ? Omit<R, 'id'> : never) : never;

interface Running {
  child: ChildProcess;
  dismissWatchdog: () => void;
  pending: Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>;
  /** Exports' progress (CsvSink.directProgress), by request id. */
  progress: Map<number, (rows: number, bytes: number) => void>;
  stderr: { text: string };
  exited: boolean;
}

export class SqliteProcessDriver implements DatabaseDriver {
  readonly engine = 'sqlite' as const;
  private running: Running | null = null;
  private nextId = 1;
  /** Calls run one at a time: stopping one kills the process, which must not end another. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly config: DatabaseConfig,
    private readonly readOnly: boolean,
  ) {}

  private async start(): Promise<Running> {
    if (this.running && !this.running.exited) return this.running;
    const { child, dismissWatchdog, stderr, failed } = await spawnChild();
    if (failed.error || child.pid === undefined || !child.connected) {
      killGroup(child);
      dismissWatchdog();
      throw new Error(`could not start the SQLite process: ${failed.error?.message ?? (stderr.text.trim() || 'it exited at once')}`);
    }
    const running: Running = {
      child,
      dismissWatchdog,
      pending: new Map(),
      progress: new Map(),
      stderr,
      exited: false,
    };
    this.running = running;
    child.on('message', (reply: ChildReply) => {
      if ('progress' in reply) {
        running.progress.get(reply.id)?.(reply.progress.rows, reply.progress.bytes);
        return;
      }
      const waiting = running.pending.get(reply.id);
      if (!waiting) return;
      running.pending.delete(reply.id);
      if (reply.ok) waiting.resolve(reply.value);
      else waiting.reject(rebuildError(reply.error));
      this.idle(running);
    });
    const ended = (error?: Error): void => {
      if (running.exited) return;
      running.exited = true;
      children.delete(child);
      running.dismissWatchdog();
      const kept = running.stderr.text;
      const reason = error?.message ?? `the SQLite process ended unexpectedly${kept ? `: ${kept.trim().split('\n').pop()}` : ''}`;
      for (const waiting of running.pending.values()) waiting.reject(new Error(reason));
      running.pending.clear();
    };
    child.on('error', ended);
    child.on('exit', () => ended());
    this.idle(running);
    try {
      await this.send(running, { op: 'open', config: this.config, readOnly: this.readOnly }, null);
    } catch (error) {
      // A process without its database is no use: the next call starts a fresh one (the file may be back).
      this.kill(running);
      throw error;
    }
    return running;
  }

  /** Nothing of the child keeps quarry alive while no call waits for it. */
  private idle(running: Running): void {
    const busy = running.pending.size > 0;
    const handles = [running.child, running.child.channel, running.child.stderr] as ({ ref?: () => void; unref?: () => void } | null | undefined)[];
    for (const handle of handles) (busy ? handle?.ref : handle?.unref)?.call(handle);
  }

  private send(running: Running, call: Call, options: RunOptions | null): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const onAbort = (): void => stop('cancel');
      const settled = (): void => {
        clearTimeout(timer);
        options?.signal.removeEventListener('abort', onAbort);
      };
      const stop = (reason: 'cancel' | 'timeout'): void => {
        if (!running.pending.delete(id)) return;
        settled();
        this.kill(running);
        reject(stopError(reason, this.config));
      };
      running.pending.set(id, {
        resolve: (value) => {
          settled();
          resolve(value);
        },
        reject: (error) => {
          settled();
          reject(error);
        },
      });
      this.idle(running);
      running.child.send({ ...call, id } as ChildRequest);
      if (!options) return;
      timer = setTimeout(() => stop('timeout'), this.config.statementTimeoutMs);
      if (options.signal.aborted) onAbort();
      else options.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private kill(running: Running): void {
    if (!running.exited) killGroup(running.child);
    running.dismissWatchdog();
    if (this.running === running) this.running = null;
  }

  /** One call, after the ones before it; the process is started (again) if needed. */
  private call<T>(call: Call, options: RunOptions, onSent?: (running: Running, id: number) => void): Promise<T> {
    const result = this.queue.then(async () => {
      if (options.signal.aborted) throw stopError('cancel', this.config);
      const running = await this.start();
      onSent?.(running, this.nextId);
      return (await this.send(running, call, options)) as T;
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  async connect(): Promise<void> {
    const started = this.queue.then(() => this.start());
    this.queue = started.catch(() => undefined);
    try {
      await started;
    } catch (error) {
      throw error instanceof ToolError ? error : new ToolError((error as Error).message, 'database_error');
    }
  }

  async query(sql: string, limit: number, options: RunOptions): Promise<QueryResult> {
    const result = await this.call<QueryResult>({ op: 'query', sql, limit, readOnly: options.readOnly }, options);
    return { ...result, rows: result.rows.map(asBuffers) };
  }

  async describe(table: string, options: RunOptions): Promise<TableDescription> {
    return this.call<TableDescription>({ op: 'describe', table, readOnly: options.readOnly }, options);
  }

  async catalog(sql: string, params: readonly unknown[], options: RunOptions): Promise<CellValue[][]> {
    return (await this.call<CellValue[][]>({ op: 'catalog', sql, params: [...params], readOnly: options.readOnly }, options)).map(asBuffers);
  }

  async ping(options: RunOptions): Promise<string> {
    return this.call<string>({ op: 'ping', readOnly: options.readOnly }, options);
  }

  /**
   * The child writes the whole CSV into the sink's temporary file itself (sqlite-child.ts says
   * why) and answers with what it wrote; this process only waits and passes its progress on.
   * Memory stays flat however slow the disk: the child writes each megabyte before the next.
   */
  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    const file = sink.directFile && sink.directWritten ? await sink.directFile() : null;
    if (!file) throw new Error('a SQLite export needs an empty file of its own to write (csv.ts CsvExportFile)');
    let exportId = 0;
    const written = await this.call<DirectWritten>({ op: 'export', sql, readOnly: options.readOnly, file }, options, (running, id) => {
      exportId = id;
      running.progress.set(id, (rows, bytes) => sink.directProgress?.(rows, bytes));
    }).finally(() => this.running?.progress.delete(exportId));
    sink.directWritten!(written);
  }

  async close(): Promise<void> {
    const running = this.running;
    if (!running) return;
    this.running = null;
    // Idle: it exits on its own when its channel closes. Busy: a statement nobody waits for any more.
    if (running.pending.size > 0) this.kill(running);
    else if (!running.exited) running.child.disconnect?.();
    running.dismissWatchdog();
    running.child.unref();
  }
}

function stopError(reason: 'cancel' | 'timeout', config: DatabaseConfig): ToolError {
  return reason === 'timeout'
    ? new ToolError(`the statement ran longer than the statement timeout (${config.statementTimeoutMs / 1000} s) and was stopped`, 'timeout')
    : new ToolError('cancelled: the SQLite statement was stopped', 'cancelled');
}

/** Blobs cross as Uint8Array (structured clone); the tool layer expects Buffers. */
function asBuffers(row: CellValue[]): CellValue[] {
  for (let i = 0; i < row.length; i++) {
    const value = row[i] as unknown;
    if (value instanceof Uint8Array && !Buffer.isBuffer(value)) row[i] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return row;
}

function rebuildError(error: ChildError): Error {
  if (error.readOnlyViolation) return new ReadOnlyViolation(error.message);
  if (error.kind) return new ToolError(error.message, error.kind as ToolErrorKind, error.metadata);
  return error.code ? Object.assign(new Error(error.message), { code: error.code }) : new Error(error.message);
}
