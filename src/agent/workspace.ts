import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Backend } from '../backends/types.js';
import { UsageError } from '../cli/errors.js';
import { loadProfile } from '../profiles/load.js';
import type { Profile } from '../profiles/schema.js';
import type { ToolRegistry } from '../tools/registry.js';
import { buildToolRegistry, createBackend } from './toolset.js';

/**
 * What a run needs before it can call tools: the profile, the working directory, the backend
 * and the registry of tools the profile offers. Built once, by `quarry tool` and by agent runs
 * alike, so both see exactly the same tools and rules.
 */
export interface Workspace {
  profile: Profile;
  workingDir: string;
  backend: Backend;
  registry: ToolRegistry;
  /** Releases what the tools opened (connections, sandboxes). */
  close(): Promise<void>;
}

export interface WorkspaceOptions {
  profile?: string;
  workingDir?: string;
  cwd?: string;
}

export function resolveWorkingDir(requested: string | undefined, cwd: string): string {
  const dir = resolve(cwd, requested ?? '.');
  if (!existsSync(dir)) throw new UsageError(`working directory does not exist: ${dir}`);
  if (!statSync(dir).isDirectory()) throw new UsageError(`working directory is not a directory: ${dir}`);
  return dir;
}

export async function openWorkspace(options: WorkspaceOptions): Promise<Workspace> {
  const cwd = options.cwd ?? process.cwd();
  const profile = loadProfile(options.profile, cwd);
  const workingDir = resolveWorkingDir(options.workingDir, cwd);
  const backend = createBackend(profile);
  const registry = buildToolRegistry(profile);
  return {
    profile,
    workingDir,
    backend,
    registry,
    close: async () => undefined,
  };
}
