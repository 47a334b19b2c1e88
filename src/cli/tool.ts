import type { Argv } from 'yargs';
import { DATABASE_TOOL_NAMES } from '../profiles/schema.js';
import { MCP_TOOL_PREFIX } from '../tools/mcp/names.js';
import { EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, UsageError } from '../errors.js';
import { databaseOptions, withCommonOptions, withDatabaseOptions } from './options.js';

/**
 * `quarry tool NAME --args JSON`: one tool call, run exactly as the agent would run it (same
 * registry, profile, validation, limits and approval rules). The user is acting directly, so
 * the read-before-write guard (which protects against the model) does not apply.
 */
export function registerToolCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'tool <name>',
    'Run one tool call directly, as the agent would',
    (y) =>
      withDatabaseOptions(withCommonOptions(y))
        .positional('name', { type: 'string', describe: 'Tool name (see quarry tools)', demandOption: true })
        .option('args', { type: 'string', default: '{}', describe: 'Arguments as a JSON object' })
        .option('format', {
          choices: ['text', 'json'] as const,
          default: 'text' as const,
          describe: 'text: the output; json: one {"ok","output","metadata"} object',
        })
        .option('yes', { alias: 'y', type: 'boolean', default: false, describe: 'Approve the call if the profile asks for approval' }),
    async (argv) => {
      setExit(
        await runToolCommand({
          name: argv.name as string,
          argsJson: argv.args,
          format: argv.format,
          yes: argv.yes,
          profile: argv.profile,
          workingDir: argv['working-dir'],
          configFile: argv.config,
          knowledge: argv.knowledge,
          databases: databaseOptions(argv),
        }),
      );
    },
  );
}

/** How to add a database of each engine, for the message when its tool is asked for but none is configured. */
const DATABASE_HINTS: Record<(typeof DATABASE_TOOL_NAMES)[number], string> = {
  sqlite: 'FILE.db (or sqlite:PATH, or env SQLITE_DB=FILE.db)',
  postgres: 'postgres://USER@HOST:5432/DB (or env POSTGRES_HOST, POSTGRES_DB, ...)',
  mysql: 'mysql://USER@HOST:3306/DB (or env MYSQL_HOST, MYSQL_DATABASE, ...)',
  oracle: 'oracle://USER@HOST:1521/SERVICE (or env ORACLE_DSN, ...)',
  vertica: 'vertica://USER@HOST:5433/DB (or env VERTICA_HOST, VERTICA_DATABASE, ...)',
  duckdb: 'FILE.duckdb (or a data file: sales.csv, events.parquet, logs.json)',
  clickhouse: 'clickhouse://USER@HOST:8123/DB (or env CLICKHOUSE_HOST, CLICKHOUSE_DATABASE, ...)',
};

interface ToolCommandOptions {
  name: string;
  argsJson: string;
  format: 'text' | 'json';
  yes: boolean;
  profile: string;
  workingDir: string | undefined;
  configFile?: string | undefined;
  knowledge?: string | undefined;
  databases?: { dbFlags: string[]; databasesFile?: string };
}

function parseArgsJson(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--args is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError('--args must be a JSON object, e.g. --args \'{"path": "README.md"}\'');
  }
  return parsed as Record<string, unknown>;
}

function print(format: 'text' | 'json', ok: boolean, output: string, metadata: Record<string, unknown>): void {
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify({ ok, output, metadata })}\n`);
    return;
  }
  const stream = ok ? process.stdout : process.stderr;
  stream.write(output.endsWith('\n') || output === '' ? output : `${output}\n`);
}

export async function runToolCommand(options: ToolCommandOptions): Promise<number> {
  const args = parseArgsJson(options.argsJson);
  // Loaded here, not at start-up: `quarry --help` and other commands do not need the tools.
  const [{ approvalReason }, { profileAllowsTool, toolAvailability }, { openWorkspace }] = await Promise.all([
    import('../agent/approval.js'),
    import('../agent/toolset.js'),
    import('../agent/workspace.js'),
  ]);
  const workspace = await openWorkspace({
    profile: options.profile,
    ...(options.workingDir ? { workingDir: options.workingDir } : {}),
    ...(options.configFile ? { configFile: options.configFile } : {}),
    ...(options.knowledge ? { knowledge: options.knowledge } : {}),
    ...(options.databases ? { databases: options.databases } : {}),
    // MCP servers take time to start: only when this call is for one of their tools.
    mcp: options.name.startsWith(MCP_TOOL_PREFIX),
  });
  try {
    const tool = workspace.registry.get(options.name);
    if (!tool && (DATABASE_TOOL_NAMES as readonly string[]).includes(options.name) && profileAllowsTool(workspace.profile, options.name)) {
      throw new UsageError(
        `no ${options.name} database is configured, so there is no ${options.name} tool; add one with --db ${DATABASE_HINTS[options.name as (typeof DATABASE_TOOL_NAMES)[number]]}, a --databases ` +
          `FILE or databases: in config.yaml (quarry db list shows what is configured)`,
      );
    }
    if (!tool && options.name === 'knowledge' && !workspace.knowledge) {
      throw new UsageError(
        `no knowledge folder, so there is no knowledge tool: create .quarry/knowledge/ in ${workspace.workingDir}, pass --knowledge DIR, or set knowledge: in config.yaml`,
      );
    }
    if (!tool) {
      const known = toolAvailability(workspace.profile).find((entry) => entry.tool.name === options.name);
      const why = known?.unavailableReason
        ? `tool "${options.name}" is not available under profile "${workspace.profile.name}": ${known.unavailableReason}`
        : `unknown tool "${options.name}"; tools under profile "${workspace.profile.name}": ${workspace.registry.names().join(', ')}`;
      throw new UsageError(why);
    }
    const needsApproval = approvalReason(workspace.profile, tool, args);
    if (needsApproval && !options.yes) {
      print(options.format, false, `refused: ${needsApproval}; nothing was run. Pass --yes to approve this call.`, { error: 'approval_required' });
      return EXIT_FAILED;
    }
    const controller = new AbortController();
    const onSigint = () => controller.abort();
    process.once('SIGINT', onSigint);
    const result = await workspace.registry.run(options.name, args, {
      workingDir: workspace.workingDir,
      backend: workspace.backend,
      signal: controller.signal,
    });
    process.off('SIGINT', onSigint);
    if (result.metadata.error === 'invalid_arguments') throw new UsageError(result.output);
    print(options.format, result.ok, result.output, result.metadata);
    // Ctrl+C: 130, as for a run (docs/guide/running.md "Exit codes").
    if (controller.signal.aborted && !result.ok) return EXIT_CANCELLED;
    return result.ok ? EXIT_OK : EXIT_FAILED;
  } finally {
    await workspace.close();
  }
}
