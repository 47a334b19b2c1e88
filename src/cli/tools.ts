import type { Argv } from 'yargs';
import type { Tool } from '../tools/core/types.js';
import { EXIT_OK } from '../errors.js';
import { databaseOptions, withCommonOptions, withDatabaseOptions } from './options.js';

interface ListedTool {
  tool: Tool;
  unavailableReason: string | null;
}

/**
 * `quarry tools`: the tools a session with this profile would get, with their schemas:
 * the built-in ones, one per configured database engine, and those of the configured MCP
 * servers (so the servers are started to list them).
 */
export function registerToolsCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'tools',
    'List the tools a profile exposes (with the configured databases and MCP servers), with their argument schemas',
    (y) =>
      withDatabaseOptions(withCommonOptions(y))
        .option('format', { choices: ['text', 'json'] as const, default: 'text' as const })
        .option('all', { type: 'boolean', default: false, describe: 'Also list tools the profile does not offer, and why' }),
    async (argv) => {
      // Loaded here, not at start-up: `quarry --help` and other commands do not need the tools.
      const [{ toolAvailability }, { openWorkspace }] = await Promise.all([import('../agent/toolset.js'), import('../agent/workspace.js')]);
      const workspace = await openWorkspace({
        profile: argv.profile,
        ...(argv['working-dir'] ? { workingDir: argv['working-dir'] } : {}),
        ...(argv.config ? { configFile: argv.config } : {}),
        ...(argv.knowledge ? { knowledge: argv.knowledge } : {}),
        databases: databaseOptions(argv),
      });
      try {
        const offered: ListedTool[] = workspace.registry.list().map((tool) => ({ tool, unavailableReason: null }));
        const notOffered = argv.all ? toolAvailability(workspace.profile).filter((entry) => entry.unavailableReason !== null) : [];
        printTools(workspace.profile.name, [...offered, ...notOffered], argv.format);
      } finally {
        await workspace.close();
      }
      setExit(EXIT_OK);
    },
  );
}

function printTools(profileName: string, entries: ListedTool[], format: 'text' | 'json'): void {
  if (format === 'json') {
    const tools = entries.map(({ tool, unavailableReason }) => ({
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      readOnly: tool.readOnly,
      available: unavailableReason === null,
      ...(unavailableReason ? { unavailableReason } : {}),
    }));
    process.stdout.write(`${JSON.stringify({ profile: profileName, tools }, null, 2)}\n`);
    return;
  }
  const lines = [`Tools under profile "${profileName}":`, ''];
  for (const { tool, unavailableReason } of entries) {
    lines.push(`${tool.name}${tool.readOnly ? ' (read-only)' : ''}${unavailableReason ? `  [not offered: ${unavailableReason}]` : ''}`);
    lines.push(...tool.description.split('\n').map((line) => `  ${line}`));
    lines.push(`  arguments: ${JSON.stringify(tool.parameters.properties)}`);
    if (tool.parameters.required?.length) lines.push(`  required: ${tool.parameters.required.join(', ')}`);
    lines.push('');
  }
  process.stdout.write(lines.join('\n'));
}
