import { createDaytonaBackend } from '../backends/daytona.js';
import type { SandboxFactory } from '../backends/daytona-sdk.js';
import { LocalBackend } from '../backends/local.js';
import type { Backend } from '../backends/types.js';
import { parseProfile, type Profile } from '../profiles/schema.js';
import { createAskUserTool } from '../tools/ask-user/tool.js';
import { createBashTool, type BashToolOptions } from '../tools/bash/tool.js';
import { createChartTool } from '../tools/chart/tool.js';
import { createDatabaseTools, type DatabaseToolOptions } from '../tools/database/tool.js';
import type { DatabaseConfig } from '../tools/database/types.js';
import { delegateTool } from '../tools/delegate/tool.js';
import { createEditTool, type EditToolOptions } from '../tools/edit/tool.js';
import { globTool } from '../tools/files/glob.js';
import { grepTool } from '../tools/grep/tool.js';
import { listTool } from '../tools/files/list.js';
import { readTool } from '../tools/files/read.js';
import { readExcelTool } from '../tools/excel/tool.js';
import type { Knowledge } from '../tools/knowledge/folder.js';
import { createKnowledgeTool } from '../tools/knowledge/tool.js';
import { effectsOf, unionEffects } from '../tools/core/effects.js';
import { ToolRegistry } from '../tools/core/registry.js';
import type { Tool } from '../tools/core/types.js';
import { createWriteTool, type WriteToolOptions } from '../tools/files/write.js';

/**
 * The one place that knows every tool and the one place that reads the profile for them: which
 * tools a profile gets, and what each is built with (its modes, limits and write roots, decided
 * here once; calls carry only what a call needs). The registry below stays generic. A tool is
 * left out when the profile's modes forbid it or its `tools` allow-list does not name it.
 */

export function bashToolOptions(profile: Profile): BashToolOptions {
  return {
    restricted: profile.shell === 'restricted',
    network: profile.shell_network,
    timeouts: { defaultSeconds: profile.shell_timeout },
    osSandbox: true,
    remote: profile.backend !== 'local',
  };
}

export function writeToolOptions(profile: Profile): WriteToolOptions {
  return { mode: profile.file_write, writeRoots: profile.write_roots, profileName: profile.name };
}

export function editToolOptions(profile: Profile): EditToolOptions {
  return { mode: profile.file_write, profileName: profile.name };
}

/**
 * Export files (export_query, profile's output_path, chart) are written on this machine
 * (docs/guide/daytona.md): on the workspace's backend when it is the local one, else on the local disk.
 */
function localFiles(backend: Backend | undefined): Backend {
  return backend?.name === 'local' ? backend : new LocalBackend();
}

export function databaseToolOptions(profile: Profile, backend?: Backend): DatabaseToolOptions {
  return {
    readOnly: profile.database !== 'mutations',
    queryGuard: profile.query_guard,
    profileBudgetSeconds: profile.profile_budget_seconds,
    writeRoots: profile.write_roots,
    exportFiles: localFiles(backend),
  };
}

export interface ToolAvailability {
  tool: Tool;
  /** null when available; otherwise why this profile does not offer it. */
  unavailableReason: string | null;
}

function reasonUnavailable(tool: Tool, profile: Profile): string | null {
  if (tool.name === 'write' && profile.file_write === 'off') return 'file_write is off in this profile';
  if (tool.name === 'edit' && profile.file_write !== 'full') return `edit needs file_write: full (this profile has ${profile.file_write})`;
  if (!profileAllowsTool(profile, tool.name)) return "the profile's tools list does not include it";
  return null;
}

/**
 * The profile's `tools` allow-list: exact names, or a prefix ending in `*` (e.g. `mcp__files__*`
 * for every tool of one MCP server, `mcp__*` for all of them). No list: every tool.
 */
export function profileAllowsTool(profile: Profile, name: string): boolean {
  if (!profile.tools) return true;
  return profile.tools.some((entry) => entry === name || (entry.endsWith('*') && name.startsWith(entry.slice(0, -1))));
}

/** The defaults of a profile that sets nothing (as strict as readonly), for schemas without a profile (the build's validators). */
const DEFAULT_PROFILE = parseProfile(null, 'defaults', 'defaults');

/** Every built-in tool, built for `profile` (also those the profile does not offer, for `quarry tools --all`). */
export function allBuiltinTools(profile: Profile = DEFAULT_PROFILE): Tool[] {
  return [
    readTool,
    readExcelTool,
    grepTool,
    globTool,
    listTool,
    createBashTool(bashToolOptions(profile)),
    createWriteTool(writeToolOptions(profile)),
    createEditTool(editToolOptions(profile)),
    delegateTool,
    createAskUserTool({ budget: profile.ask_user_budget }),
  ];
}

export function toolAvailability(profile: Profile): ToolAvailability[] {
  return allBuiltinTools(profile).map((tool) => ({ tool, unavailableReason: reasonUnavailable(tool, profile) }));
}

export interface ToolRegistryOptions {
  /** Configured databases: each engine with at least one gets its database tool. */
  databases?: readonly DatabaseConfig[];
  /** Tools of the MCP servers started for this session (src/tools/mcp/servers.ts). */
  mcpTools?: readonly Tool[];
  /** The workspace's backend: export files go to it when it is the local one (else to the local disk). */
  backend?: Backend;
  /** The knowledge folder in use: the knowledge tool searches it. */
  knowledge?: Knowledge;
}

export function buildToolRegistry(profile: Profile, options: ToolRegistryOptions = {}): ToolRegistry {
  const registry = new ToolRegistry();
  for (const { tool, unavailableReason } of toolAvailability(profile)) {
    if (unavailableReason === null) registry.register(tool);
  }
  const database = databaseToolOptions(profile, options.backend);
  for (const tool of createDatabaseTools(options.databases ?? [], database)) {
    if (profileAllowsTool(profile, tool.name)) registry.register(tool);
  }
  // chart draws from any configured database or from a CSV file, so every profile gets it.
  if (profileAllowsTool(profile, 'chart'))
    registry.register(createChartTool(options.databases ?? [], { writeRoots: database.writeRoots, exportFiles: database.exportFiles }));
  if (options.knowledge && profileAllowsTool(profile, 'knowledge')) registry.register(createKnowledgeTool(options.knowledge));
  for (const tool of options.mcpTools ?? []) {
    if (profileAllowsTool(profile, tool.name)) registry.register(tool);
  }
  return withDelegateEffects(registry);
}

/** delegate can do whatever its child can, and the child has every other tool: its effects are theirs. */
function withDelegateEffects(registry: ToolRegistry): ToolRegistry {
  const delegate = registry.get(delegateTool.name);
  if (!delegate) return registry;
  const others = registry.without(delegateTool.name);
  const declared = { ...unionEffects(others.list().map(effectsOf)), reads: true, delegates: true };
  const result = new ToolRegistry();
  for (const tool of registry.list()) result.register(tool === delegate ? { ...delegate, effects: declared } : tool);
  return result;
}

/** The profile's backend; a sandbox checks `workingDir` when it starts (src/backends/daytona.ts). */
export function createBackend(profile: Profile, options: { workingDir: string; env?: NodeJS.ProcessEnv; createSandbox?: SandboxFactory }): Backend {
  if (profile.backend === 'local') return new LocalBackend();
  return createDaytonaBackend(options.env ?? process.env, options.createSandbox, { workingDir: options.workingDir });
}
