import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Argv } from 'yargs';
import { packageRoot } from '../config/home.js';
import { UsageError } from '../errors.js';
import { isLoopbackHost, parseHttpBind, serveHttp } from '../mcp/http.js';
import { serveStdio } from '../mcp/stdio.js';
import { databaseOptions, withCommonOptions, withDatabaseOptions } from './options.js';

/**
 * `quarry mcp`: serves the profile's tools over MCP, on stdio (default) or Streamable HTTP
 * (README "quarry mcp"). Heavy modules (the MCP SDK, the workspace) load only when the command
 * runs, so other commands' start-up is unchanged.
 */

export function registerMcpCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'mcp',
    "Serve this profile's tools to MCP clients (stdio, or --http)",
    (y) =>
      withDatabaseOptions(withCommonOptions(y))
        .option('http', { type: 'string', describe: 'Serve Streamable HTTP on [HOST:]PORT instead of stdio (host default 127.0.0.1)' })
        .option('token', { type: 'string', describe: 'Bearer token HTTP clients must send (env QUARRY_MCP_TOKEN); required off loopback' })
        .option('allow-origin', {
          type: 'string',
          describe: 'An extra browser Origin allowed over HTTP (repeatable); loopback origins are always allowed',
          coerce: (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat()),
        })
        .option('yes', {
          alias: 'y',
          type: 'boolean',
          default: false,
          describe: "Serve tools the profile would ask approval for; the client's approval applies",
        })
        .epilog(
          'quarry cannot ask for approval over MCP: without --yes, tools and calls the profile would ask about are not served ' +
            "(they are refused with the reason); with --yes they are, and the MCP client's own approval applies. " +
            'delegate is never served. See README "quarry mcp" for client configuration.',
        ),
    async (argv) => {
      setExit(
        await runMcpCommand({
          profile: argv.profile,
          workingDir: argv['working-dir'],
          configFile: argv.config,
          knowledge: argv.knowledge,
          databases: databaseOptions(argv),
          http: argv.http,
          token: argv.token ?? process.env.QUARRY_MCP_TOKEN,
          allowOrigins: argv['allow-origin'] ?? [],
          yes: argv.yes,
        }),
      );
    },
  );
}

export interface McpCommandOptions {
  profile: string;
  workingDir: string | undefined;
  configFile: string | undefined;
  knowledge?: string | undefined;
  databases: { dbFlags: string[]; databasesFile?: string };
  http: string | undefined;
  token: string | undefined;
  allowOrigins: string[];
  yes: boolean;
}

function version(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The flags, checked before anything is opened; then the workspace, served by src/mcp/stdio.ts or src/mcp/http.ts. */
export async function runMcpCommand(options: McpCommandOptions): Promise<number> {
  // Flags are checked before anything is opened.
  const bind = options.http !== undefined ? parseHttpBind(options.http) : undefined;
  const token = options.token?.trim() || undefined;
  if (bind && !isLoopbackHost(bind.host) && !token) {
    throw new UsageError(
      `quarry mcp --http ${bind.host}:${bind.port} binds a non-loopback address: set a bearer token with --token or QUARRY_MCP_TOKEN (anyone who can reach ` +
        `the port could otherwise use these tools)`,
    );
  }
  const { openWorkspace } = await import('../agent/workspace.js');
  const workspace = await openWorkspace({
    profile: options.profile,
    ...(options.workingDir ? { workingDir: options.workingDir } : {}),
    ...(options.configFile ? { configFile: options.configFile } : {}),
    ...(options.knowledge ? { knowledge: options.knowledge } : {}),
    databases: options.databases,
    // Tools of quarry's own MCP servers are never re-served, so they are not started.
    mcp: false,
  });
  const { createQuarryMcpServer, servedTools } = await import('../mcp/serve.js');
  const serveOptions = { yes: options.yes, version: version() };
  const served = servedTools(workspace, options.yes).map((tool) => tool.name);
  try {
    if (!bind) return await serveStdio(createQuarryMcpServer(workspace, serveOptions), served, workspace.profile.name);
    return await serveHttp(bind, token, options.allowOrigins, () => createQuarryMcpServer(workspace, serveOptions), served, workspace.profile.name);
  } finally {
    await workspace.close();
  }
}
