import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, symlinkSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { SandboxFactory, SandboxSpec, SandboxSurface } from '../../src/backends/daytona-sdk.js';
import { shellQuote } from '../../src/backends/shell-quote.js';
import { makeTempDir } from './context.js';

/**
 * A stand-in for a Daytona sandbox that does the real work on this machine: commands run as
 * real `sh -c` processes and files are real files, so the daytona backend is exercised end to
 * end. Its file system is its own, as a real sandbox's is: commands run under bubblewrap with a
 * private root directory of this machine as `/`, where only the system directories (/usr, /etc,
 * ...) and the PATH's directories are this machine's (read-only). A path that exists here does
 * not exist there unless it is one of those: tests put files in the sandbox through
 * `hostPath(path)`, the place on this machine where the sandbox's `path` lives. $HOME is
 * /home/daytona and $TMPDIR /tmp, both in the private root. Like the real toolbox, stdout and
 * stderr come back merged in one text result, and a request timeout kills the command.
 *
 * Where bubblewrap cannot run, the sandbox shares this machine's file system (the paths the
 * tests use are the same either way) and `separate` is false, so tests that need the two apart
 * can say why they are skipped.
 */

/** This machine's directories the sandbox sees at the same paths, read-only. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];
const SANDBOX_HOME = '/home/daytona';
const SANDBOX_TEMP = '/tmp';

function bubblewrap(): string | null {
  for (const candidate of ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap']) {
    if (!existsSync(candidate)) continue;
    const probe = spawnSync(candidate, ['--ro-bind', '/', '/', '--dev', '/dev', '--', 'true'], { stdio: 'ignore' });
    if (probe.status === 0) return candidate;
  }
  return null;
}

const BWRAP = bubblewrap();
/** Whether the fake sandboxes' files are apart from this machine's here (bubblewrap runs). */
export const SANDBOX_FILES_SEPARATE = BWRAP !== null;

export class FakeSandbox implements SandboxSurface {
  readonly id: string;
  deleted = false;
  /** Every command line run, for tests that count round trips. */
  readonly commands: string[] = [];
  /** The sandbox's $HOME and $TMPDIR (sandbox paths). */
  readonly home: string;
  readonly temp: string;

  constructor(
    private readonly disk: SandboxDisk,
    readonly spec: SandboxSpec,
    index: number,
  ) {
    this.id = `fake-sandbox-${index}`;
    this.home = disk.home;
    this.temp = disk.temp;
  }

  private alive(): void {
    if (this.deleted) throw new Error(`sandbox ${this.id} was deleted`);
  }

  readonly process = {
    executeCommand: (command: string, cwd?: string, env?: Record<string, string>, timeout?: number): Promise<{ exitCode: number; result: string }> => {
      this.alive();
      this.commands.push(command);
      return this.disk.run(command, { cwd: cwd ?? this.home, env: env ?? {}, timeout });
    },
  };

  readonly fs = {
    uploadFile: async (file: Buffer, remotePath: string): Promise<void> => {
      this.alive();
      await writeFile(await this.disk.resolveForWrite(remotePath), file);
    },
    downloadFile: async (remotePath: string): Promise<Buffer> => {
      this.alive();
      return readFile(await this.disk.resolve(remotePath));
    },
    downloadFileStream: async (remotePath: string, options?: { signal?: AbortSignal }): Promise<Readable> => {
      this.alive();
      // Opened first, so a missing file fails the request as the real API does.
      const handle = await open(await this.disk.resolve(remotePath), 'r');
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

/** The sandboxes' file system: a private root on this machine, seen as `/` by their commands. */
class SandboxDisk {
  readonly home: string;
  readonly temp: string;
  /** This machine's directories seen at the same path inside (read-only). */
  private readonly shared: string[];
  private readonly flags: string[];

  constructor(
    readonly root: string,
    private readonly path: string,
  ) {
    if (BWRAP) {
      this.home = SANDBOX_HOME;
      this.temp = SANDBOX_TEMP;
      const onPath = path
        .split(':')
        .filter((dir) => dir.startsWith('/') && existsSync(dir) && !SYSTEM_DIRS.some((system) => dir === system || dir.startsWith(`${system}/`)));
      this.shared = [...SYSTEM_DIRS.filter((dir) => existsSync(dir)), ...new Set(onPath)];
      this.flags = ['--bind', root, '/', '--dev', '/dev', '--ro-bind', '/proc', '/proc', '--die-with-parent'];
      for (const dir of this.shared) {
        // Merged-/usr systems link /bin to usr/bin: the same link inside (made once: the root is kept).
        if (lstatSync(dir).isSymbolicLink()) symlinkSync(readlinkSync(dir), join(root, dir));
        else this.flags.push('--ro-bind', dir, dir);
      }
    } else {
      this.home = join(root, 'home');
      this.temp = join(root, 'tmp');
      this.shared = ['/'];
      this.flags = [];
    }
    mkdirSync(this.hostPath(this.home), { recursive: true });
    mkdirSync(this.hostPath(this.temp), { recursive: true });
  }

  get separate(): boolean {
    return SANDBOX_FILES_SEPARATE;
  }

  /** Where a sandbox path lives on this machine (symbolic links in it are not followed). */
  hostPath(path: string): string {
    if (!this.separate || this.shared.some((dir) => path === dir || path.startsWith(`${dir}/`))) return path;
    return join(this.root, path);
  }

  /** A new empty directory in the sandbox (its sandbox path). */
  makeDir(prefix: string): string {
    return this.hostToSandbox(mkdtempSync(join(this.hostPath(this.temp), prefix)));
  }

  /** Copies a directory of this machine into the sandbox at the same path, times included; returns the path. */
  mirror(dir: string): string {
    if (!this.separate) return dir;
    mkdirSync(this.hostPath(dir), { recursive: true });
    execFileSync('cp', ['-a', `${dir}/.`, this.hostPath(dir)]);
    return dir;
  }

  private hostToSandbox(hostPath: string): string {
    return this.separate ? hostPath.slice(this.root.length) : hostPath;
  }

  /** The argument vector that runs `sh -c command` inside. */
  private argv(command: string, cwd: string): string[] {
    return BWRAP ? [BWRAP, ...this.flags, '--chdir', cwd, '--', 'sh', '-c', command] : ['sh', '-c', command];
  }

  run(command: string, options: { cwd: string; env: Record<string, string>; timeout?: number | undefined }): Promise<{ exitCode: number; result: string }> {
    const [program, ...args] = this.argv(command, options.cwd);
    return new Promise((resolve, reject) => {
      const child = spawn(program!, args, {
        cwd: this.separate ? '/' : options.cwd,
        env: { PATH: this.path, HOME: this.home, TMPDIR: this.temp, LANG: 'C.UTF-8', ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
      const timer = options.timeout ? setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), options.timeout * 1000) : undefined;
      child.on('error', reject);
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        resolve({ exitCode: code ?? (signal ? 128 + 9 : 1), result: Buffer.concat(chunks).toString('utf8') });
      });
    });
  }

  /** Where an existing sandbox file is on this machine, its links followed inside the sandbox. */
  async resolve(path: string): Promise<string> {
    if (!this.separate) return path;
    const found = await this.run(`realpath -e -- ${shellQuote(path)}`, { cwd: '/', env: {} });
    if (found.exitCode !== 0) throw Object.assign(new Error(`no such file in the sandbox: ${path}`), { code: 'ENOENT' });
    return this.hostPath(found.result.replace(/\n$/, ''));
  }

  /** Where a sandbox file about to be created goes on this machine (its directory must exist). */
  async resolveForWrite(path: string): Promise<string> {
    if (!this.separate) return path;
    return join(await this.resolve(dirname(path)), basename(path));
  }
}

export interface FakeDaytona {
  factory: SandboxFactory;
  /** Every sandbox created, in order. */
  sandboxes: FakeSandbox[];
  /** The environment a backend needs so that its spec parses. */
  env: NodeJS.ProcessEnv;
  /** Whether the sandboxes' files are apart from this machine's (bubblewrap runs here). */
  separate: boolean;
  /** Where a sandbox path lives on this machine, for putting files in and checking them. */
  hostPath(path: string): string;
  /** A new empty directory in the sandbox (its sandbox path; on this machine at hostPath of it). */
  makeDir(prefix?: string): string;
  /** Copies a directory of this machine into the sandbox at the same path (for side-by-side runs); returns the path. */
  mirror(dir: string): string;
}

/**
 * `path`: the sandbox's PATH (default this machine's), e.g. to give it a ripgrep. The sandboxes
 * of one fake share one file system, as if made from one volume.
 */
export function fakeDaytona(extraEnv: NodeJS.ProcessEnv = {}, options: { path?: string } = {}): FakeDaytona {
  const sandboxes: FakeSandbox[] = [];
  const disk = new SandboxDisk(makeTempDir('quarry-fake-sandbox-'), options.path ?? process.env.PATH ?? '/usr/bin:/bin');
  const factory: SandboxFactory = async (spec) => {
    const sandbox = new FakeSandbox(disk, spec, sandboxes.length + 1);
    sandboxes.push(sandbox);
    return sandbox;
  };
  return {
    factory,
    sandboxes,
    env: { DAYTONA_API_KEY: 'test-key', ...extraEnv },
    separate: disk.separate,
    hostPath: (path) => disk.hostPath(path),
    makeDir: (prefix = 'quarry-sandbox-dir-') => disk.makeDir(prefix),
    mirror: (dir) => disk.mirror(dir),
  };
}
