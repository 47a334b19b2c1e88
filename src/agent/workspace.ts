import { resolve } from 'node:path';
import type { SandboxFactory } from '../backends/daytona-sdk.js';
import type { Backend } from '../backends/types.js';
import { readConfigFile } from '../config/config-file.js';
import { loadDatabaseConfigs } from '../config/databases.js';
import { configFileLocation } from '../config/home.js';
import { mcpServersOf } from '../config/mcp-servers.js';
import { UsageError } from '../errors.js';
import { loadProfile } from '../profiles/load.js';
import type { Profile } from '../profiles/schema.js';
import { closeAllDatabaseConnections } from '../tools/database/connections.js';
import type { DatabaseConfig } from '../tools/database/types.js';
import type { ToolRegistry } from '../tools/core/registry.js';
import { type Knowledge, knowledgeDir } from '../tools/knowledge/folder.js';
import { loadKnowledgeCached } from '../tools/knowledge/cache.js';
import { trustFolder } from '../security/trusted-folders.js';
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
  /** The configured databases (their tools are in the registry; passwords included, never shown). */
  databases: readonly DatabaseConfig[];
  /** The team's knowledge folder, when one is in use (docs/guide/knowledge.md). */
  knowledge?: Knowledge;
  /** Releases what the tools opened (connections, sandboxes). */
  close(): Promise<void>;
}

export interface WorkspaceOptions {
  /** A name or path to load, or a profile already loaded (a resumed session's). */
  profile?: string | Profile;
  workingDir?: string;
  cwd?: string;
  /** `--config FILE`; default `$QUARRY_HOME/config.yaml` (databases and MCP servers; src/config/home.ts). */
  configFile?: string;
  /** Start the configured MCP servers (default true; `quarry tool` skips them unless it runs an MCP tool). */
  mcp?: boolean;
  /** `--db` values and `--databases FILE`; SQLITE_DB, POSTGRES_* ... and config.yaml's `databases:` are read as well. */
  databases?: { dbFlags?: readonly string[]; databasesFile?: string };
  /** Where daytona profiles get their sandbox (default: the SDK, configured by process.env; tests give a fake). */
  daytona?: { env: NodeJS.ProcessEnv; createSandbox: SandboxFactory };
  /** `--knowledge DIR`; else config.yaml's `knowledge:`, else `.quarry/knowledge/` under the working directory when it exists. */
  knowledge?: string;
}

/**
 * The working directory is checked on the backend that uses it: on this machine here; a
 * sandbox's when it starts, at the first tool call (DaytonaBackend), since it has its own files.
 */
async function checkWorkingDir(backend: Backend, dir: string): Promise<void> {
  if (backend.name !== 'local') return;
  const found = await backend.stat(dir).catch(() => null);
  if (!found) throw new UsageError(`working directory does not exist: ${dir}`);
  if (found.type !== 'directory') throw new UsageError(`working directory is not a directory: ${dir}`);
}

export async function openWorkspace(options: WorkspaceOptions): Promise<Workspace> {
  const cwd = options.cwd ?? process.cwd();
  const profile = typeof options.profile === 'object' ? options.profile : loadProfile(options.profile, cwd);
  const workingDir = resolve(cwd, options.workingDir ?? '.');
  const backend = createBackend(profile, { workingDir, ...options.daytona });
  await checkWorkingDir(backend, workingDir);
  // config.yaml is read once, for its databases and its MCP servers.
  const config = readConfigFile(configFileLocation(options.configFile, process.env, cwd));
  const databases = loadDatabaseConfigs({ ...options.databases, config, env: process.env, cwd });
  const knowledgeFolder = knowledgeDir({ flag: options.knowledge, configured: { value: config.settings.knowledge, file: config.file }, workingDir, cwd });
  // No tool writes in it, wherever it is (src/security/trusted-folders.ts).
  if (knowledgeFolder) trustFolder(knowledgeFolder);
  const knowledge = knowledgeFolder ? loadKnowledgeCached(knowledgeFolder) : undefined;
  const mcpConfigs = options.mcp === false ? [] : mcpServersOf(config, process.env);
  // Loaded only when servers are configured: the MCP SDK costs about 0.25 s to import.
  const mcp = mcpConfigs.length > 0 ? await (await import('../tools/mcp/servers.js')).startMcpServers(mcpConfigs) : undefined;
  let registry: ToolRegistry;
  try {
    registry = buildToolRegistry(profile, { databases, mcpTools: mcp?.tools ?? [], backend, ...(knowledge ? { knowledge } : {}) });
  } catch (error) {
    await mcp?.close();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    profile,
    workingDir,
    backend,
    registry,
    databases,
    ...(knowledge ? { knowledge } : {}),
    // Stops MCP servers, closes database connections and deletes a sandbox; safe to call twice.
    close: () => (closing ??= Promise.all([mcp?.close(), backend.dispose?.(), closeAllDatabaseConnections()]).then(() => undefined)),
  };
}
