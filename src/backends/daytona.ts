import { basename, dirname, isAbsolute, join } from 'node:path';
import { nodeCrypto } from '../node-crypto.js';
import { buildKillScript, buildRunScript, parseRunReport, REMOTE_KILL_GRACE_SECONDS, REMOTE_REQUEST_SLACK_SECONDS, shCommandLine } from './daytona-exec.js';
import { createSdkSandbox, sandboxSpecFromEnv, type SandboxFactory, type SandboxSurface } from './daytona-sdk.js';
import { globOverListing, listingArgv, parseListing } from './remote-glob.js';
import type { Backend, ByteRange, DirEntry, EntryType, ExecOptions, ExecResult, FileStat, GlobOptions, GlobResult, WriteOptions } from './types.js';
import { BackendUnavailableError } from './types.js';
import { escapeName } from './names.js';
import { shellQuote } from './shell-quote.js';

const DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
const STDERR_LIMIT_BYTES = 1024 * 1024;
/**
 * A command's stdout crosses the network in one piece when it ends (the SDK does not stream),
 * so a caller that consumes it through onStdout (grep) gets at most this much.
 */
export const REMOTE_STREAMED_OUTPUT_LIMIT_BYTES = 16 * 1024 * 1024;
/** Seconds for a file upload or download request. */
const FILE_TRANSFER_TIMEOUT_SECONDS = 300;
const DELETE_TIMEOUT_SECONDS = 60;
/**
 * A byte range is read with `dd` in the sandbox (the SDK downloads only whole files): up to
 * RANGE_WHOLE_BYTES in one command (such reads are wanted whole), longer ranges in chunks that
 * start small and double, so a consumer that stops early (read_excel in the first rows of a
 * sheet) fetches little and one that reads on needs few round trips.
 */
const RANGE_WHOLE_BYTES = 1024 * 1024;
const RANGE_FIRST_CHUNK_BYTES = 256 * 1024;
const RANGE_MAX_CHUNK_BYTES = 4 * 1024 * 1024;
/** Chunks handed to onStdout, so a consumer can stop early. */
const STDOUT_CHUNK_BYTES = 64 * 1024;

/** Error texts of coreutils/findutils mapped to the errno codes local file calls would give. */
const ERRNO_BY_TEXT: Array<[RegExp, string]> = [
  [/No such file or directory/i, 'ENOENT'],
  [/Not a directory/i, 'ENOTDIR'],
  [/Too many levels of symbolic links/i, 'ELOOP'],
  [/Permission denied/i, 'EACCES'],
  [/Operation not permitted/i, 'EPERM'],
  [/File exists/i, 'EEXIST'],
  [/Is a directory|cannot overwrite directory/i, 'EISDIR'],
  [/Read-only file system/i, 'EROFS'],
  [/No space left on device/i, 'ENOSPC'],
];

/** An error shaped like Node's file errors (code, path), so tools and the registry report it the same way. */
function errnoError(text: string, path: string, syscall: string): NodeJS.ErrnoException {
  const code = ERRNO_BY_TEXT.find(([pattern]) => pattern.test(text))?.[1];
  const error: NodeJS.ErrnoException = new Error(`${syscall} ${path}: ${text.trim() || 'failed'}`);
  if (code) error.code = code;
  error.path = path;
  error.syscall = syscall;
  return error;
}

const ENTRY_TYPES: Record<string, EntryType> = { f: 'file', d: 'directory', l: 'symlink' };

/** `find -printf '%y %s %m %T@'`: type letter, size, octal permission bits, mtime in seconds. */
const STAT_FORMAT = '%y %s %m %T@';

function parseStatFields(fields: string[]): FileStat {
  const [type = '', size = '0', mode = '0', mtime = '0'] = fields;
  return { type: ENTRY_TYPES[type] ?? 'other', size: Number(size), mode: parseInt(mode, 8), mtimeMs: Number(mtime) * 1000 };
}

function requireAbsolute(path: string): string {
  if (!isAbsolute(path)) throw new Error(`the daytona backend needs absolute paths, got ${JSON.stringify(path)}`);
  return path;
}

/**
 * The Backend interface inside a Daytona sandbox. The sandbox is created on the first call
 * (so a missing DAYTONA_API_KEY is reported then, not at start-up), shared by every tool of
 * the session, and deleted by dispose(). File metadata comes from GNU coreutils/findutils in
 * the sandbox (any Debian or Ubuntu image), file contents from the SDK's upload and download.
 */
export interface DaytonaOptions {
  /**
   * The session's working directory: checked in the sandbox when it starts, since the sandbox
   * has its own files (a directory of this machine is not there). When it is missing, the sandbox
   * is deleted and every call fails with one line saying so.
   */
  workingDir?: string;
}

export class DaytonaBackend implements Backend {
  readonly name = 'daytona' as const;
  private sandbox: Promise<SandboxSurface> | undefined;
  private disposed = false;
  /** Why the sandbox cannot serve this session (its working directory is not there). */
  private refusal: BackendUnavailableError | undefined;
  private dirs: Promise<{ home: string; temp: string }> | undefined;
  private ripgrep: Promise<string | null> | undefined;
  private baseEnv: Promise<Record<string, string>> | undefined;

  constructor(
    private readonly env: NodeJS.ProcessEnv = process.env,
    private readonly createSandbox: SandboxFactory = createSdkSandbox,
    private readonly options: DaytonaOptions = {},
  ) {}

  /** Whether a sandbox was ever requested (for tests and diagnostics). */
  get started(): boolean {
    return this.sandbox !== undefined;
  }

  private getSandbox(): Promise<SandboxSurface> {
    if (this.disposed) return Promise.reject(new BackendUnavailableError('the Daytona sandbox of this session has already been deleted'));
    if (this.refusal) return Promise.reject(this.refusal);
    if (!this.sandbox) {
      this.sandbox = (async () => this.checkWorkingDir(await this.createSandbox(sandboxSpecFromEnv(this.env))))();
      // A failed creation is retried by the next call instead of being remembered forever.
      this.sandbox.catch(() => {
        this.sandbox = undefined;
      });
    }
    return this.sandbox;
  }

  /** The sandbox, once the working directory is known to be a directory there; else it is deleted. */
  private async checkWorkingDir(sandbox: SandboxSurface): Promise<SandboxSurface> {
    const dir = this.options.workingDir;
    if (dir === undefined) return sandbox;
    const path = shellQuote(dir);
    const found = await sandbox.process.executeCommand(shCommandLine(`if [ -d ${path} ]; then echo directory; elif [ -e ${path} ]; then echo other; fi`));
    const kind = found.result.trim();
    if (found.exitCode === 0 && kind === 'directory') return sandbox;
    this.refusal = new BackendUnavailableError(
      kind === 'other'
        ? `working directory is not a directory in the Daytona sandbox: ${dir}`
        : `working directory does not exist in the Daytona sandbox: ${dir} (the sandbox has its own files; give -w a directory that exists there)`,
    );
    await sandbox.delete(DELETE_TIMEOUT_SECONDS).catch(() => undefined);
    throw this.refusal;
  }

  /** Deletes the sandbox (if one was created). Safe to call more than once. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const pending = this.sandbox;
    this.sandbox = undefined;
    if (!pending) return;
    const sandbox = await pending.catch(() => null);
    await sandbox?.delete(DELETE_TIMEOUT_SECONDS);
  }

  async homeDir(): Promise<string> {
    return (await this.directories()).home;
  }

  async tempDir(): Promise<string> {
    return (await this.directories()).temp;
  }

  private directories(): Promise<{ home: string; temp: string }> {
    this.dirs ??= this.sh('printf "%s\\n%s" "$HOME" "${TMPDIR:-/tmp}"', []).then((text) => {
      const [home = '/', temp = '/tmp'] = text.split('\n');
      return { home: home || '/', temp: temp.length > 1 ? temp.replace(/\/+$/, '') : temp || '/tmp' };
    });
    this.dirs.catch(() => {
      this.dirs = undefined;
    });
    return this.dirs;
  }

  /** The sandbox's own environment (what its login gives a command), read once. */
  environment(): Promise<Record<string, string>> {
    this.baseEnv ??= this.execFile(['env', '-0'], { cwd: '/' }).then((result) => {
      const env: Record<string, string> = {};
      for (const entry of result.stdout.toString('utf8').split('\0')) {
        const equals = entry.indexOf('=');
        if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1);
      }
      return env;
    });
    this.baseEnv.catch(() => {
      this.baseEnv = undefined;
    });
    return this.baseEnv.then((env) => ({ ...env }));
  }

  async execFile(argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    const [program] = argv;
    if (!program) throw new Error('execFile needs a program');
    const sandbox = await this.getSandbox();
    const started = performance.now();
    const runId = nodeCrypto().randomBytes(8).toString('hex');
    const keepBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdoutLimit = options.onStdout ? Math.max(keepBytes, REMOTE_STREAMED_OUTPUT_LIMIT_BYTES) : keepBytes;
    const script = buildRunScript({
      runId,
      argv,
      cwd: options.cwd,
      env: options.env,
      timeoutMs: options.timeoutMs,
      stdoutLimit,
      stderrLimit: STDERR_LIMIT_BYTES,
    });
    const requestTimeout = options.timeoutMs === undefined ? 0 : Math.ceil(options.timeoutMs / 1000) + REMOTE_KILL_GRACE_SECONDS + REMOTE_REQUEST_SLACK_SECONDS;

    let aborted = false;
    let killing: Promise<unknown> | undefined;
    const onAbort = () => {
      aborted = true;
      killing ??= sandbox.process
        .executeCommand(shCommandLine(buildKillScript(runId)), undefined, undefined, REMOTE_KILL_GRACE_SECONDS + REMOTE_REQUEST_SLACK_SECONDS)
        .catch(() => undefined);
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    let response: { exitCode: number; result: string };
    try {
      response = await sandbox.process.executeCommand(shCommandLine(script), undefined, undefined, requestTimeout);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    await killing;
    const report = parseRunReport(response.result, runId);
    if (!report) throw new Error(`the sandbox did not run the command (exit ${response.exitCode}): ${response.result.trim().slice(-500) || 'no output'}`);
    if (report.status === 'cwd') throw errnoError(report.stderr.toString('utf8'), options.cwd, 'chdir');
    const durationMs = performance.now() - started;
    const status = report.status === 'aborted' ? null : Number(report.status);
    const stderrText = report.stderr.toString('utf8');
    // timeout/env say so when the program itself cannot be run: the same ENOENT a local spawn gives.
    if (status === 127 && report.stdoutBytes === 0 && /^(timeout: failed to run command|env: ).*No such file or directory/m.test(stderrText)) {
      throw errnoError('No such file or directory', program, `spawn ${program}`);
    }
    const timedOut = !aborted && options.timeoutMs !== undefined && (status === 124 || status === 137) && durationMs >= options.timeoutMs;

    const stdout = report.stdout.subarray(0, keepBytes);
    if (options.onStdout) {
      for (let offset = 0; offset < report.stdout.length && !options.signal?.aborted; offset += STDOUT_CHUNK_BYTES) {
        options.onStdout(report.stdout.subarray(offset, offset + STDOUT_CHUNK_BYTES));
      }
    }
    aborted ||= options.signal?.aborted ?? false;
    return {
      stdout,
      stderr: report.stderr,
      exitCode: aborted || timedOut ? null : status,
      timedOut,
      aborted,
      droppedBytes: Math.max(0, report.stdoutBytes - stdout.length),
      durationMs,
    };
  }

  /** Runs a small sh script with positional arguments; returns stdout, or throws an errno-shaped error. */
  private async sh(script: string, args: string[], errorPath = '', syscall = 'sh'): Promise<string> {
    const result = await this.execFile(['sh', '-c', script, 'sh', ...args], { cwd: '/' });
    if (result.exitCode !== 0) throw errnoError(result.stderr.toString('utf8'), errorPath, syscall);
    return result.stdout.toString('utf8');
  }

  async which(program: string): Promise<string | null> {
    if (program.startsWith('-') || program.includes('/')) return null;
    const found = (await this.sh('command -v "$1" || true', [program])).trim();
    return found.startsWith('/') ? found : null;
  }

  ripgrepPath(): Promise<string | null> {
    if (this.env.QUARRY_NO_RIPGREP === '1') return Promise.resolve(null);
    this.ripgrep ??= this.which('rg');
    this.ripgrep.catch(() => {
      this.ripgrep = undefined;
    });
    return this.ripgrep;
  }

  async lstat(path: string): Promise<FileStat | null> {
    const out = await this.sh(`if [ -e "$1" ] || [ -L "$1" ]; then find "$1" -maxdepth 0 -printf '${STAT_FORMAT}'; fi`, [requireAbsolute(path)], path, 'lstat');
    return out.trim() ? parseStatFields(out.trim().split(' ')) : null;
  }

  async stat(path: string): Promise<FileStat | null> {
    const out = await this.sh(`if [ -e "$1" ]; then find -L "$1" -maxdepth 0 -printf '${STAT_FORMAT}'; fi`, [requireAbsolute(path)], path, 'stat');
    return out.trim() ? parseStatFields(out.trim().split(' ')) : null;
  }

  async realpath(path: string): Promise<string> {
    const out = await this.sh('realpath -e -- "$1"', [requireAbsolute(path)], path, 'realpath');
    return out.replace(/\n$/, '');
  }

  async readFile(path: string): Promise<Buffer> {
    const sandbox = await this.getSandbox();
    try {
      return await sandbox.fs.downloadFile(requireAbsolute(path), FILE_TRANSFER_TIMEOUT_SECONDS);
    } catch (error) {
      throw await this.explainFileError(path, 'open', error);
    }
  }

  async *readStream(path: string, range?: ByteRange): AsyncIterable<Buffer> {
    if (range) {
      yield* this.readRange(requireAbsolute(path), range);
      return;
    }
    const sandbox = await this.getSandbox();
    const stop = new AbortController();
    let stream: AsyncIterable<Buffer>;
    try {
      stream = await sandbox.fs.downloadFileStream(requireAbsolute(path), { signal: stop.signal, timeout: FILE_TRANSFER_TIMEOUT_SECONDS });
    } catch (error) {
      throw await this.explainFileError(path, 'open', error);
    }
    try {
      for await (const chunk of stream) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    } catch (error) {
      throw await this.explainFileError(path, 'read', error);
    } finally {
      // The consumer may stop early (read shows the first lines): end the download.
      stop.abort();
    }
  }

  private async *readRange(path: string, { start, end }: ByteRange): AsyncIterable<Buffer> {
    let offset = start;
    let chunk = end - start <= RANGE_WHOLE_BYTES ? end - start : RANGE_FIRST_CHUNK_BYTES;
    while (offset < end) {
      const count = Math.min(chunk, end - offset);
      const argv = ['dd', `if=${path}`, 'iflag=skip_bytes,count_bytes', `skip=${offset}`, `count=${count}`, 'bs=65536', 'status=none'];
      const result = await this.execFile(argv, { cwd: '/', maxOutputBytes: count });
      if (result.exitCode !== 0) throw errnoError(result.stderr.toString('utf8'), path, 'read');
      if (result.stdout.length > 0) yield result.stdout;
      if (result.stdout.length < count) return; // the file ended
      offset += count;
      chunk = Math.min(2 * chunk, RANGE_MAX_CHUNK_BYTES);
    }
  }

  /** A failed transfer turned into the errno error a local call would give, when the cause can be seen. */
  private async explainFileError(path: string, syscall: string, error: unknown): Promise<Error> {
    const found = await this.stat(path).catch(() => undefined);
    if (found === null) return errnoError('No such file or directory', path, syscall);
    if (found?.type === 'directory') return errnoError('Is a directory', path, syscall);
    return new Error(`${syscall} ${path} in the sandbox failed: ${(error as Error)?.message ?? String(error)}`);
  }

  async writeFileAtomic(path: string, data: Buffer, options: WriteOptions): Promise<void> {
    const dir = dirname(requireAbsolute(path));
    const temporary = join(dir, `.${basename(path)}.quarry-${nodeCrypto().randomBytes(6).toString('hex')}.tmp`);
    await this.sh('mkdir -p -- "$1"', [dir], dir, 'mkdir');
    const sandbox = await this.getSandbox();
    await sandbox.fs.uploadFile(data, temporary, FILE_TRANSFER_TIMEOUT_SECONDS);
    // Inside the sandbox: a hard link fails instead of replacing (exclusive); mv -T is rename(2).
    const finish = options.exclusive
      ? 'ln -T -- "$1" "$2"; s=$?; rm -f -- "$1"; exit $s'
      : 'if [ -e "$2" ]; then chmod --reference="$2" -- "$1" 2>/dev/null; fi; mv -f -T -- "$1" "$2" || { s=$?; rm -f -- "$1"; exit $s; }';
    await this.sh(finish, [temporary, path], path, options.exclusive ? 'link' : 'rename');
  }

  async listDir(path: string): Promise<DirEntry[]> {
    const script =
      'if [ ! -d "$1" ]; then if [ -e "$1" ]; then echo "$1: Not a directory" >&2; else echo "$1: No such file or directory" >&2; fi; exit 2; fi\n' +
      `find "$1" -mindepth 1 -maxdepth 1 -printf '${STAT_FORMAT} %f\\0'`;
    const out = await this.sh(script, [requireAbsolute(path)], path, 'scandir');
    return out
      .split('\0')
      .filter((record) => record !== '')
      .map((record) => {
        const fields = record.split(' ');
        // Shown escaped like the local backend's names (escapeName in src/backends/names.ts).
        return { ...parseStatFields(fields.slice(0, 4)), name: escapeName(fields.slice(4).join(' ')) };
      });
  }

  async glob(pattern: string, options: GlobOptions): Promise<GlobResult> {
    const root = requireAbsolute(options.cwd);
    const listing = await this.execFile(listingArgv(root, options.skipDirs), { cwd: '/' });
    if (listing.exitCode !== 0 && listing.stdout.length === 0) throw errnoError(listing.stderr.toString('utf8'), root, 'scandir');
    return globOverListing(pattern, options, parseListing(root, listing.stdout));
  }
}

export function createDaytonaBackend(env: NodeJS.ProcessEnv = process.env, createSandbox?: SandboxFactory, options: DaytonaOptions = {}): DaytonaBackend {
  return new DaytonaBackend(env, createSandbox, options);
}
