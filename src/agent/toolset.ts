import { createDaytonaBackend } from '../backends/daytona.js';
import { LocalBackend } from '../backends/local.js';
import type { Backend } from '../backends/types.js';
import type { Profile } from '../profiles/schema.js';
import { bashTool } from '../tools/bash/tool.js';
import { createChartTool } from '../tools/chart/tool.js';
import { createDatabaseTools } from '../tools/database/tool.js';
import type { DatabaseConfig } from '../tools/database/types.js';
import { delegateTool } from '../tools/delegate/tool.js';
import { editTool } from '../tools/edit/tool.js';
import { globTool } from '../tools/files/glob.js';
import { grepTool } from '../tools/grep/tool.js';
import { listTool } from '../tools/files/list.js';
import { readTool } from '../tools/files/read.js';
import { readExcelTool } from '../tools/excel/tool.js';
import { ToolRegistry } from '../tools/registry.js';
import type { Tool } from '../tools/types.js';
import { writeTool } from '../tools/files/write.js';

/**
 * The one place that knows every tool: which of them a profile gets. The registry below stays
 * generic. A tool is left out when the profile's modes forbid it or its `tools` allow-list
 * does not name it.
 */

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

export function allBuiltinTools(): Tool[] {
  return [readTool, readExcelTool, grepTool, globTool, listTool, bashTool, writeTool, editTool, delegateTool] as Tool[];
}

export function toolAvailability(profile: Profile): ToolAvailability[] {
  return allBuiltinTools().map((tool) => ({ tool, unavailableReason: reasonUnavailable(tool, profile) }));
}

export interface ToolRegistryOptions {
  /** Configured databases: each engine with at least one gets its database tool. */
  databases?: readonly DatabaseConfig[];
  /** Tools of the MCP servers started for this session (src/tools/mcp/servers.ts). */
  mcpTools?: readonly Tool[];
}

export function buildToolRegistry(profile: Profile, options: ToolRegistryOptions = {}): ToolRegistry {
  const registry = new ToolRegistry();
  for (const { tool, unavailableReason } of toolAvailability(profile)) {
    if (unavailableReason === null) registry.register(tool);
  }
  for (const tool of createDatabaseTools(options.databases ?? [], profile)) {
    if (profileAllowsTool(profile, tool.name)) registry.register(tool as Tool);
  }
  // chart draws from any configured database or from a CSV file, so every profile gets it.
  if (profileAllowsTool(profile, 'chart')) registry.register(createChartTool(options.databases ?? []) as Tool);
  for (const tool of options.mcpTools ?? []) {
    if (profileAllowsTool(profile, tool.name)) registry.register(tool);
  }
  return registry;
}

export function createBackend(profile: Profile): Backend {
  return profile.backend === 'daytona' ? createDaytonaBackend() : new LocalBackend();
}
