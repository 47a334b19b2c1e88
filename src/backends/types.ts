/**
 * The seam between tools and the world. File and shell tools never import `fs` or
 * `child_process`; they call a Backend, so the same tool code runs on this machine
 * (`local`) or inside a remote sandbox (`daytona`).
 */

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface FileStat {
  type: EntryType;
  size: number;
  /** Permission bits, e.g. 0o644. */
  mode: number;
  mtimeMs: number;
}

export interface DirEntry extends FileStat {
  name: string;
}

export interface ExecOptions {
  cwd: string;
  /** Kill the whole process group after this many milliseconds. */
  timeoutMs?: number;
  /** Aborting kills the whole process group; output so far is kept. */
  signal?: AbortSignal;
  /** The complete environment of the child (not merged with anything). */
  env?: Record<string, string>;
  /** Called with each stdout chunk as it arrives (for tools that stop early). */
  onStdout?: (chunk: Buffer) => void;
  /** Keep at most this many bytes of stdout (head), dropping the rest; default 16 MiB. */
  maxOutputBytes?: number;
}

export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  /** null when the process was killed by a signal. */
  exitCode: number | null;
  timedOut: boolean;
  aborted: boolean;
  /** Bytes of stdout that were dropped because of maxOutputBytes. */
  droppedBytes: number;
  durationMs: number;
}

export interface GlobOptions {
  cwd: string;
  /** Directory names never descended into. */
  skipDirs: readonly string[];
  includeHidden: boolean;
  limit: number;
}

export interface GlobResult {
  /** Paths relative to `cwd`, sorted. */
  paths: string[];
  truncated: boolean;
  /** How many paths matched in all, when the backend knows. */
  total?: number;
}

/** A byte range of a file: `start` inclusive, `end` exclusive (as in Buffer.subarray). */
export interface ByteRange {
  start: number;
  end: number;
}

export interface WriteOptions {
  /** Fail (with code EEXIST) instead of replacing an existing file. */
  exclusive: boolean;
}

export interface Backend {
  readonly name: 'local' | 'daytona';
  /** The home directory and temporary directory as seen by this backend. */
  homeDir(): Promise<string>;
  tempDir(): Promise<string>;
  /**
   * The environment commands start from on this backend (this process's for local, the
   * sandbox's own for daytona): tools filter it and pass it as ExecOptions.env, so that nothing
   * of this machine's environment (API keys included) is sent into a remote sandbox.
   */
  environment(): Promise<Record<string, string>>;
  /** Run an argument vector (no shell). */
  execFile(argv: readonly string[], options: ExecOptions): Promise<ExecResult>;
  /** Whether an executable of this name can be found on the backend's PATH, and where. */
  which(program: string): Promise<string | null>;
  /** The ripgrep binary this backend can use, or null (then tools fall back to grep). */
  ripgrepPath(): Promise<string | null>;
  /** stat without following a final symlink; null when nothing exists there. */
  lstat(path: string): Promise<FileStat | null>;
  /** stat following symlinks; null when nothing exists there. */
  stat(path: string): Promise<FileStat | null>;
  realpath(path: string): Promise<string>;
  readFile(path: string): Promise<Buffer>;
  /**
   * The file's bytes as a stream of chunks, so large files need not fit in memory; with a range,
   * only those bytes (fewer when the file ends first; none for an empty range), for readers that
   * need random access (read_excel reads a zip's directory at its end, then single parts).
   */
  readStream(path: string, range?: ByteRange): AsyncIterable<Buffer>;
  /** Atomic: a temporary file beside the target, then a rename (or a link when exclusive). Creates parents. */
  writeFileAtomic(path: string, data: Buffer, options: WriteOptions): Promise<void>;
  /** Every entry with its lstat; names as the tools show them (escapeName in src/backends/names.ts). */
  listDir(path: string): Promise<DirEntry[]>;
  /**
   * Optional, for huge directories: the entry names one at a time (no stat), and then the lstat
   * of the few that are shown. `list` uses them where a backend has them, listDir otherwise.
   */
  listNames?(path: string): AsyncIterable<string>;
  statEntries?(path: string, names: readonly string[]): Promise<DirEntry[]>;
  glob(pattern: string, options: GlobOptions): Promise<GlobResult>;
  /** Releases what the backend holds (the daytona backend deletes its sandbox); the workspace calls it at session end. */
  dispose?(): Promise<void>;
}

/** Thrown by a backend that cannot serve requests (e.g. not configured); tools report its message. */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
}
