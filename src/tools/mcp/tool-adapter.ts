import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import { formatBytes } from '../core/paths.js';
import { mcpToolName } from './names.js';
import { effects, type ToolEffects } from '../core/effects.js';
import { failure, success, ToolError, type Tool, type ToolParameters } from '../core/types.js';

/** What a server's tools/list gives for one tool (the fields quarry uses). */
export interface McpToolInfo {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean | undefined; openWorldHint?: boolean | undefined; title?: string | undefined } | undefined;
}

const schemaChecker = new Ajv({ strict: false });

/**
 * The server's input schema as quarry's registry will validate it: always an object schema;
 * `$schema` dropped (servers often declare draft 2020-12, which the validator does not load);
 * a schema the validator cannot compile is replaced by "any object", with the original shown
 * to the model in the description instead.
 */
export function normaliseInputSchema(raw: Record<string, unknown>): { parameters: ToolParameters; unchecked: boolean } {
  const { $schema: _ignored, ...rest } = raw;
  const properties =
    typeof rest.properties === 'object' && rest.properties !== null && !Array.isArray(rest.properties)
      ? (rest.properties as Record<string, Record<string, unknown>>)
      : {};
  const parameters: ToolParameters = { ...rest, type: 'object', properties };
  try {
    schemaChecker.compile(parameters);
    return { parameters, unchecked: false };
  } catch {
    return { parameters: { type: 'object', properties: {}, additionalProperties: true }, unchecked: true };
  }
}

function base64Bytes(data: string): number {
  const clean = data.replace(/\s+/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}

type ContentBlock = { type: string; [key: string]: unknown };

/** Text passes through; images, audio and resources become one-line placeholders (docs/guide/mcp.md "MCP servers"). */
export function contentToText(content: readonly ContentBlock[]): string {
  return content
    .map((block) => {
      switch (block.type) {
        case 'text':
          return String(block.text ?? '');
        case 'image':
        case 'audio':
          return `[${block.type}: ${String(block.mimeType ?? 'unknown type')}, ${formatBytes(base64Bytes(String(block.data ?? '')))}]`;
        case 'resource': {
          const resource = (block.resource ?? {}) as { uri?: string; mimeType?: string; text?: string; blob?: string };
          const size = resource.text !== undefined ? Buffer.byteLength(resource.text) : base64Bytes(resource.blob ?? '');
          return `[resource: ${resource.uri ?? 'no uri'}, ${resource.mimeType ?? 'unknown type'}, ${formatBytes(size)}]`;
        }
        case 'resource_link':
          return `[resource link: ${String(block.uri ?? '')}${block.name ? ` (${String(block.name)})` : ''}]`;
        default:
          return `[${block.type} content]`;
      }
    })
    .join('\n');
}

/** Wraps one MCP tool as a quarry Tool that calls the server, with the server's call timeout. */
/**
 * What an MCP tool can do, as far as quarry can tell: whatever the server says (it may change things
 * there, so approval treats it as a change), and it is an outward tool (it can carry what it is given
 * to the server and beyond) unless the server marks it read-only and closed-world, or the user vouches
 * for the server (`allow_outward: true`).
 */
export function mcpToolEffects(info: McpToolInfo, allowOutward: boolean): ToolEffects {
  // The arguments of any call reach the server, and its annotations are its own claim (data, like its
  // descriptions): only the user's allow_outward vouches for where they go (docs/security.md).
  return effects({ reads: true, external: true, reachesNetwork: info.annotations?.openWorldHint !== false, sendsOut: !allowOutward });
}

export function adaptMcpTool(serverName: string, client: Client, info: McpToolInfo, toolTimeoutMs: number, allowOutward = false): Tool {
  const { parameters, unchecked } = normaliseInputSchema(info.inputSchema);
  const readOnlyNote = info.annotations?.readOnlyHint
    ? ' The server marks it read-only (quarry still asks for approval where the profile asks before MCP tools).'
    : '';
  const name = mcpToolName(serverName, info.name);
  const serverText = info.description ?? info.title ?? info.annotations?.title ?? '';
  // The server's name for the tool stands unmarked in quarry's prefix: only name characters, bounded.
  const shownName = info.name.replace(/[^\w.-]/g, '_').slice(0, 64);
  // The server's words (its description, the schema shown when unchecked) are data from the server
  // (README "Security model"): the model gets them marked (src/agent/marking.ts).
  const describe = (mark: (text: string) => string) =>
    `[MCP server "${serverName}", tool "${shownName}"] ${serverText ? mark(serverText) : ''}`.trim() +
    ` Stopped after ${toolTimeoutMs / 1000} s.${readOnlyNote}${unchecked ? ` Arguments are passed unchecked; the server's schema: ${mark(JSON.stringify(info.inputSchema))}` : ''}`;
  return {
    name,
    description: describe((text) => text),
    foreign: { source: `MCP server "${serverName}" (its description of tool "${shownName}")`, describe },
    parameters,
    // Whatever the server's readOnlyHint says: hints come from the server, approval is the user's.
    readOnly: false,
    effects: mcpToolEffects(info, allowOutward),
    async run(args, context) {
      let result: Awaited<ReturnType<Client['callTool']>>;
      try {
        result = await client.callTool({ name: info.name, arguments: args }, undefined, { timeout: toolTimeoutMs, signal: context.signal });
      } catch (error) {
        if (context.signal.aborted) throw new ToolError(`${name}: cancelled`, 'cancelled');
        const message = (error as Error)?.message ?? String(error);
        if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
          throw new ToolError(
            `${name}: the MCP server "${serverName}" did not answer within ${toolTimeoutMs / 1000} s (tool_timeout_secs); the call was cancelled`,
            'timeout',
          );
        }
        throw new ToolError(`${name}: MCP call failed: ${message}`, 'mcp_call_failed');
      }
      const content = Array.isArray(result.content) ? (result.content as ContentBlock[]) : [];
      let text = contentToText(content);
      if (text === '' && result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent, null, 2);
      const metadata = { server: serverName, tool: info.name, contentTypes: content.map((block) => block.type) };
      if (result.isError) return failure(text || `${name}: the server reported an error without a message`, { ...metadata, error: 'mcp_tool_error' });
      return success(text, metadata);
    },
  };
}
