import { nodeCrypto } from '../../node-crypto.js';

/** Names of MCP tools as quarry shows them; light to import (the CLI checks the prefix at start-up). */
export const MCP_TOOL_PREFIX = 'mcp__';
/** Providers accept function names of at most 64 characters (OpenAI: ^[a-zA-Z0-9_-]{1,64}$). */
export const MAX_TOOL_NAME_LENGTH = 64;

function nameSafe(text: string): string {
  return text.replace(/[^A-Za-z0-9]/g, '_');
}

/** `mcp__SERVER__TOOL`, non-alphanumerics replaced by `_`; an over-long name is cut and given a short hash. */
export function mcpToolName(server: string, tool: string): string {
  const full = `${MCP_TOOL_PREFIX}${nameSafe(server)}__${nameSafe(tool)}`;
  if (full.length <= MAX_TOOL_NAME_LENGTH) return full;
  const hash = nodeCrypto().createHash('sha256').update(`${server}\0${tool}`).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_TOOL_NAME_LENGTH - hash.length - 1)}_${hash}`;
}
