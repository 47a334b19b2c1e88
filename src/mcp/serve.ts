import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type Tool as McpTool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { approvalReason, type ApprovalRules } from '../agent/approval.js';
import type { Workspace } from '../agent/workspace.js';
import { canChange, effectsOf, readCallEffects, type ToolEffects } from '../tools/core/effects.js';
import type { Tool } from '../tools/core/types.js';

/**
 * `quarry mcp` (docs/guide/mcp.md "quarry mcp"): quarry's own tools served to any MCP client. Every call goes
 * through the same registry path as an agent run (validation, the read-only layers, sanitising,
 * the 64 KiB cap), so a client gets exactly the guarantees quarry's own model gets.
 *
 * What is not served:
 * - `delegate` (it needs quarry's own model), `ask_user` (the client's model asks its own user) and tools of MCP servers configured in quarry's
 *   config (they are not quarry's to re-serve).
 * - Without `--yes`, tools whose every call the profile would ask about (quarry cannot ask its
 *   own question over MCP): approval mode `all`, the tools listed under `granular`, and under
 *   `dangerous` the tools that can never be a read (write, edit, unrestricted bash). A tool that
 *   is served but whose particular call would be asked about (export_query under `dangerous`) is
 *   refused with the same message as `quarry tool`.
 */

export const SERVER_NAME = 'quarry';

export interface ServeOptions {
  /** `--yes`: every call is approved here; the client's own approval applies. */
  yes: boolean;
  version: string;
}

/** Why a tool is not served, or null when it is. Reads the approval policy and the tool's declared effects only. */
export function notServedReason(tool: Tool, rules: ApprovalRules, yes: boolean): string | null {
  const declared = effectsOf(tool);
  if (declared.delegates) return `${tool.name} runs quarry's own model and is not served over MCP`;
  if (declared.asksPerson) return `${tool.name} is how quarry's own model asks its user; an MCP client asks its own`;
  if (declared.external) return 'tools of MCP servers configured in quarry are not re-served';
  if (yes) return null;
  const { mode, tools } = rules.approval;
  if (mode === 'all') return `profile "${rules.name}" asks before every call (start quarry mcp with --yes to serve it)`;
  if (mode === 'granular' && tools.includes(tool.name))
    return `profile "${rules.name}" asks before every ${tool.name} call (start quarry mcp with --yes to serve it)`;
  if (mode === 'dangerous' && !canBeRead(tool))
    return `${tool.name} can change things and profile "${rules.name}" asks before such calls (start quarry mcp with --yes to serve it)`;
  return null;
}

/** Whether some call of the tool changes nothing (so `dangerous` approval lets it through). */
function canBeRead(tool: Tool): boolean {
  return !canChange(effectsOf(tool)) || tool.readOnly || tool.callIsReadOnly !== undefined;
}

/**
 * What a served tool can do as served: without --yes under `dangerous` approval, every call that
 * would change something is refused, so only the reading calls' effects remain.
 */
export function servedEffects(tool: Tool, rules: ApprovalRules, yes: boolean): ToolEffects {
  const declared = effectsOf(tool);
  return !yes && rules.approval.mode === 'dangerous' ? readCallEffects(declared) : declared;
}

/**
 * MCP's behaviour hints, true for the tool as served (from its declared effects): read-only where no
 * served call changes anything; destructive where a call can overwrite, delete or change a database;
 * open world where it reaches the network or can send data out (the configured databases are not an
 * open world).
 */
export function toolAnnotations(tool: Tool, served: ToolEffects): ToolAnnotations {
  const readOnly = !canChange(served);
  return {
    title: tool.name,
    readOnlyHint: readOnly,
    destructiveHint: served.destructive || served.changesDatabase,
    idempotentHint: readOnly,
    openWorldHint: served.reachesNetwork || served.sendsOut,
  };
}

export function servedTools(workspace: Workspace, yes: boolean): Tool[] {
  return workspace.registry.list().filter((tool) => notServedReason(tool, workspace.profile, yes) === null);
}

function instructions(workspace: Workspace, served: readonly Tool[], yes: boolean): string {
  const profile = workspace.profile;
  return [
    `quarry's tools under profile "${profile.name}" (shell ${profile.shell}, file_write ${profile.file_write}, database ${profile.database}); working ` +
      `directory ${workspace.workingDir}.`,
    `Served tools: ${served.map((tool) => tool.name).join(', ') || '(none)'}.`,
    profile.database === 'readonly'
      ? 'Database tools run one read-only statement at a time; writes are refused by a statement check and by the engine.'
      : 'Database tools may change data (database: mutations).',
    yes
      ? "Started with --yes: every call is approved by quarry; your client's own approval applies."
      : 'Calls the profile would ask approval for are refused (quarry cannot ask over MCP); start quarry mcp with --yes to serve them and rely on your ' +
        "client's approval.",
    "Each configured database's table list is a resource (quarry://databases/ALIAS/tables).",
  ].join('\n');
}

const TABLES_URI = /^quarry:\/\/databases\/([^/]+)\/tables$/;

/** Builds an MCP server (not yet connected to a transport) over an open workspace. */
export function createQuarryMcpServer(workspace: Workspace, options: ServeOptions): Server {
  const served = servedTools(workspace, options.yes);
  const byName = new Map(served.map((tool) => [tool.name, tool]));
  const server = new Server(
    { name: SERVER_NAME, version: options.version },
    { capabilities: { tools: {}, resources: {} }, instructions: instructions(workspace, served, options.yes) },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: served.map(
      (tool): McpTool => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.parameters as McpTool['inputSchema'],
        annotations: toolAnnotations(tool, servedEffects(tool, workspace.profile, options.yes)),
      }),
    ),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const name = request.params.name;
    const tool = byName.get(name);
    if (!tool) {
      const known = workspace.registry.get(name);
      const why = known ? notServedReason(known, workspace.profile, options.yes) : null;
      return errorResult(why ? `tool "${name}" is not served: ${why}` : `unknown tool "${name}"; served tools: ${[...byName.keys()].join(', ')}`);
    }
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (!options.yes) {
      const needsApproval = approvalReason(workspace.profile, tool, args);
      if (needsApproval)
        return errorResult(`refused: ${needsApproval}; nothing was run. Start quarry mcp with --yes to let your client approve such calls.`, {
          error: 'approval_required',
        });
    }
    const progressToken = request.params._meta?.progressToken;
    const result = await workspace.registry.run(name, args, {
      workingDir: workspace.workingDir,
      backend: workspace.backend,
      signal: extra.signal,
      ...(progressToken !== undefined
        ? {
            onProgress: (progress: { rows: number; bytes: number }) => {
              void extra
                .sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, progress: progress.rows, message: `${progress.rows} rows, ${(progress.bytes / 1e6).toFixed(1)} MB written` },
                })
                .catch(() => undefined);
            },
          }
        : {}),
    });
    return {
      content: [{ type: 'text', text: result.output }],
      ...(result.ok ? {} : { isError: true }),
      structuredContent: undefined,
      _meta: { quarry: { ok: result.ok, metadata: jsonSafe(result.metadata) } },
    } as CallToolResult;
  });

  const databaseTools = served.filter(listsTables);
  const databaseAliases = (): Array<{ alias: string; tool: Tool }> =>
    databaseTools.flatMap((tool) => {
      const aliases = ((tool.parameters.properties.database as { enum?: string[] } | undefined)?.enum ?? []) as string[];
      return aliases.map((alias) => ({ alias, tool }));
    });

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: databaseAliases().map(({ alias, tool }) => ({
      uri: `quarry://databases/${encodeURIComponent(alias)}/tables`,
      name: `${alias} tables`,
      description: `Tables and views of the ${tool.name} database "${alias}" (the list_tables operation)`,
      mimeType: 'text/plain',
    })),
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const match = TABLES_URI.exec(request.params.uri);
    const alias = match ? decodeURIComponent(match[1]!) : undefined;
    const entry = databaseAliases().find((candidate) => candidate.alias === alias);
    if (!entry) throw new McpError(ErrorCode.InvalidParams, `unknown resource ${request.params.uri}; resources are quarry://databases/ALIAS/tables`);
    const result = await workspace.registry.run(
      entry.tool.name,
      { database: entry.alias, operation: 'list_tables' },
      {
        workingDir: workspace.workingDir,
        backend: workspace.backend,
        signal: extra.signal,
      },
    );
    if (!result.ok) throw new McpError(ErrorCode.InternalError, result.output);
    return { contents: [{ uri: request.params.uri, mimeType: 'text/plain', text: result.output }] };
  });

  return server;
}

/** A database tool: one with a list_tables operation over configured aliases. */
function listsTables(tool: Tool): boolean {
  const operation = tool.parameters.properties.operation as { enum?: unknown[] } | undefined;
  return operation?.enum?.includes('list_tables') === true;
}

function errorResult(text: string, metadata: Record<string, unknown> = {}): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: { quarry: { ok: false, metadata } } };
}

/** Tool metadata as plain JSON (drops functions and undefined; bigints become strings). */
function jsonSafe(value: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item))) as Record<string, unknown>;
}
