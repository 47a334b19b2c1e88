import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { editToolOptions, writeToolOptions } from '../../../src/agent/toolset.js';
import { LocalBackend } from '../../../src/backends/local.js';
import { loadProfile } from '../../../src/profiles/load.js';
import type { FileWriteMode, Profile } from '../../../src/profiles/schema.js';
import { createEditTool } from '../../../src/tools/edit/tool.js';
import { ToolRegistry, type ToolCallResult } from '../../../src/tools/core/registry.js';
import type { ToolContext } from '../../../src/tools/core/types.js';
import { createWriteTool } from '../../../src/tools/files/write.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/** A local backend whose home and temporary directories are test folders. */
export class SandboxBackend extends LocalBackend {
  constructor(
    private readonly home: string,
    private readonly temp: string,
  ) {
    super();
  }
  override async homeDir(): Promise<string> {
    return this.home;
  }
  override async tempDir(): Promise<string> {
    return this.temp;
  }
}

/**
 * A world for one test: root/work (working directory), root/home (HOME), root/tmp (temporary
 * directory) and root/outside, which is none of them.
 */
export interface World {
  root: string;
  work: string;
  home: string;
  tmp: string;
  outside: string;
  backend: SandboxBackend;
}

export function makeWorld(): World {
  const root = makeTempDir('quarry-write-');
  const [work, home, tmp, outside] = ['work', 'home', 'tmp', 'outside'].map((name) => join(root, name)) as [string, string, string, string];
  for (const dir of [work, home, tmp, outside]) mkdirSync(dir);
  return { root, work, home, tmp, outside, backend: new SandboxBackend(home, tmp) };
}

export function profileWith(fileWrite: FileWriteMode, writeRoots: string[] = []): Profile {
  return { ...loadProfile('developer'), name: `test-${fileWrite}`, file_write: fileWrite, write_roots: writeRoots };
}

export interface Harness {
  context: ToolContext;
  call(name: 'write' | 'edit', args: Record<string, unknown>): Promise<ToolCallResult>;
}

/**
 * The real registry with write and edit, both built for the mode (also where the toolset would not
 * offer them, to show they fail closed); `session` gives the context a read ledger (agent sessions).
 */
export function harness(world: World, options: { mode: FileWriteMode; session: boolean; writeRoots?: string[] }): Harness {
  const profile = profileWith(options.mode, options.writeRoots);
  const registry = new ToolRegistry();
  registry.register(createWriteTool(writeToolOptions(profile)));
  registry.register(createEditTool(editToolOptions(profile)));
  const context = makeToolContext({
    workingDir: world.work,
    backend: world.backend,
    session: options.session,
  });
  return { context, call: (name, args) => registry.run(name, args, context) };
}

/** What the read tool does for the ledger: remember the file as it is now. */
export async function markRead(context: ToolContext, path: string): Promise<void> {
  const stat = await context.backend.stat(path);
  if (!stat) throw new Error(`markRead: ${path} does not exist`);
  context.fileReads!.record(path, stat);
}

/** Every entry under a directory (recursively, relative), to show no temporary file was left. */
export function entriesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

const NOBODY = 65534;

/**
 * Runs `fn` without root's power to ignore permissions, so a read-only directory really is one:
 * as root the effective uid is dropped to nobody for the duration (tests run in forked workers,
 * one file per process); as an ordinary user permissions apply already. Directories on the way
 * to `root` are made traversable for nobody.
 */
export async function withoutRootPrivileges<T>(root: string, fn: () => Promise<T>): Promise<T> {
  if (process.getuid?.() !== 0 || !process.seteuid) return fn();
  chmodSync(root, 0o755);
  process.seteuid(NOBODY);
  try {
    return await fn();
  } finally {
    process.seteuid(0);
  }
}
