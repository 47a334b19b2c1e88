import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { watchProcessGroup } from '../../../backends/process-watchdog.js';
import { packageRoot } from '../../../config/home.js';
import { ToolError, type ToolErrorKind } from '../../core/types.js';
import { ReadOnlyViolation } from '../sql/statement-check.js';
import type { CellValue, CsvSink, DatabaseConfig, DatabaseDriver, QueryResult, RunOptions, TableDescription } from '../types.js';
import {
  EXPORT_FD,
  FRAME_COLUMNS,
  FRAME_CSV,
  FRAME_END,
  FRAME_HEADER_BYTES,
  type ChildError,
  type ChildReply,
  type ChildRequest,
} from './sqlite-child-protocol.js';

/**
 * SQLite, used in a child process of its own (sqlite-child.ts says why): this driver sends each
 * call there and waits for the answer. Ctrl+C, the statement timeout and the profile budget (an
 * abort of the call's signal) kill that process at once, so SQLite stops within milliseconds
 * whatever it is doing; the next call starts a fresh one. The process is kept between calls (one
 * per connection, started on connect), so an ordinary query costs one round trip (well under a
 * millisecond), not a start. A watchdog (backends/process-watchdog.ts) ends it if quarry is
 * killed; quarry's exit closes its IPC channel, on which it exits by itself.
 */

/** Exports: pipe frames queued for the sink before the pipe is paused. */
const MAX_QUEUED_WRITES = 4;
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

type Call = ChildRequest extends infer R ? (R extends ChildRequest ? Omit<R, 'id'> : never) : never;

interface Running {
  child: ChildProcess;
  dismissWatchdog: () => void;
  pending: Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>;
  exports: Map<number, (type: number, payload: Buffer, rows: number) => void>;
  stderr: string;
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
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [childScript('sqlite-child', import.meta.url)], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
      // Its own process group: a Ctrl+C at the terminal is quarry's to handle (it kills this one).
      detached: true,
    });
    children.add(child);
    if (!exitHookSet) {
      exitHookSet = true;
      process.on('exit', () => {
        for (const each of children) killGroup(each);
      });
    }
    const running: Running = {
      child,
      dismissWatchdog: child.pid === undefined ? () => undefined : watchProcessGroup(spawn, child.pid),
      pending: new Map(),
      exports: new Map(),
      stderr: '',
      exited: false,
    };
    this.running = running;
    child.stderr!.on('data', (chunk: Buffer) => {
      if (running.stderr.length < STDERR_KEPT) running.stderr += chunk.toString('utf8');
    });
    child.on('message', (reply: ChildReply) => {
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
      const reason = error?.message ?? `the SQLite process ended unexpectedly${running.stderr ? `: ${running.stderr.trim().split('\n').pop()}` : ''}`;
      for (const waiting of running.pending.values()) waiting.reject(new Error(reason));
      running.pending.clear();
    };
    child.on('error', ended);
    child.on('exit', () => ended());
    readFrames(child.stdio[EXPORT_FD] as Readable, running);
    this.idle(running);
    await this.send(running, { op: 'open', config: this.config, readOnly: this.readOnly }, null);
    return running;
  }

  /** Nothing of the child keeps quarry alive while no call waits for it. */
  private idle(running: Running): void {
    const busy = running.pending.size > 0;
    const handles = [running.child, running.child.channel, running.child.stderr, running.child.stdio[EXPORT_FD]] as (
      | { ref?: () => void; unref?: () => void }
      | null
      | undefined
    )[];
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
  private call<T>(call: Call, options: RunOptions, onFrame?: (running: Running, id: number) => void): Promise<T> {
    const result = this.queue.then(async () => {
      if (options.signal.aborted) throw stopError('cancel', this.config);
      const running = await this.start();
      onFrame?.(running, this.nextId);
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
   * The child writes the CSV as frames to its export pipe; each is handed to the sink in order,
   * and the pipe is paused while MAX_QUEUED_WRITES wait, so memory stays flat however slow the disk.
   */
  async exportCsv(sql: string, sink: CsvSink, options: RunOptions): Promise<void> {
    let writing: Promise<void> = Promise.resolve();
    let queued = 0;
    let ended!: () => void;
    const end = new Promise<void>((resolve) => {
      ended = resolve;
    });
    let pipe: Readable | null = null;
    let writeError: unknown = null;
    let exportId = 0;
    const onFrame = (running: Running, id: number): void => {
      exportId = id;
      pipe = running.child.stdio[EXPORT_FD] as Readable;
      running.exports.set(id, (type, payload, rows) => {
        if (type === FRAME_COLUMNS) {
          const { columns, header } = JSON.parse(payload.toString('utf8')) as { columns: string[]; header?: string };
          sink.setColumns(columns, header);
        } else if (type === FRAME_CSV) {
          queued++;
          if (queued >= MAX_QUEUED_WRITES) pipe?.pause();
          writing = writing
            .then(() => (writeError ? undefined : sink.writeEncoded(payload, rows)))
            .catch((error: unknown) => {
              writeError ??= error;
              // The export cannot go on: stop the statement.
              this.kill(running);
            })
            .finally(() => {
              queued--;
              if (queued < MAX_QUEUED_WRITES) pipe?.resume();
            });
        } else if (type === FRAME_END) {
          running.exports.delete(id);
          ended();
        }
      });
    };
    try {
      await this.call<number>({ op: 'export', sql, readOnly: options.readOnly }, options, onFrame);
      await end;
    } catch (error) {
      await writing;
      throw writeError ?? error;
    } finally {
      this.running?.exports.delete(exportId);
      (pipe as Readable | null)?.resume();
    }
    await writing;
    if (writeError) throw writeError;
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

/** Reads the export pipe's frames and hands each to its export. */
function readFrames(pipe: Readable, running: Running): void {
  pipe.on(
    'data',
    frameReader((id, type, payload, rows) => running.exports.get(id)?.(type, payload, rows)),
  );
  pipe.on('error', () => undefined);
}

/**
 * The export pipe's bytes, in chunks cut anywhere, back into frames (sqlite-child-protocol.ts).
 * Each payload byte is copied once, from the pipe's chunk into a buffer of the frame's own (the
 * sink may keep it: the preview).
 */
export function frameReader(onFrame: (id: number, type: number, payload: Buffer, rows: number) => void): (chunk: Buffer) => void {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  let headerUsed = 0;
  let payload: Buffer | null = null;
  let payloadUsed = 0;
  return (chunk) => {
    let offset = 0;
    while (offset < chunk.length) {
      if (!payload) {
        const taken = chunk.copy(header, headerUsed, offset, Math.min(chunk.length, offset + FRAME_HEADER_BYTES - headerUsed));
        headerUsed += taken;
        offset += taken;
        if (headerUsed < FRAME_HEADER_BYTES) return;
        payload = Buffer.allocUnsafe(header.readUInt32LE(8));
        payloadUsed = 0;
      }
      const taken = chunk.copy(payload, payloadUsed, offset, Math.min(chunk.length, offset + payload.length - payloadUsed));
      payloadUsed += taken;
      offset += taken;
      if (payloadUsed < payload.length) return;
      const frame = payload;
      payload = null;
      headerUsed = 0;
      onFrame(header.readUInt32LE(0), header.readUInt32LE(4), frame, header.readUInt32LE(12));
    }
  };
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
  return new Error(error.message);
}
