import type { Argv } from 'yargs';
import { toolAvailability } from '../agent/toolset.js';
import { loadProfile } from '../profiles/load.js';
import { EXIT_OK } from './errors.js';
import { withCommonOptions } from './options.js';

/** `quarry tools`: the tools a profile exposes, with their schemas. */
export function registerToolsCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'tools',
    'List the tools a profile exposes, with their argument schemas',
    (y) =>
      withCommonOptions(y)
        .option('format', { choices: ['text', 'json'] as const, default: 'text' as const })
        .option('all', { type: 'boolean', default: false, describe: 'Also list tools the profile does not offer, and why' }),
    (argv) => {
      const profile = loadProfile(argv.profile);
      const entries = toolAvailability(profile).filter((entry) => argv.all || entry.unavailableReason === null);
      if (argv.format === 'json') {
        const out = entries.map(({ tool, unavailableReason }) => ({
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          readOnly: tool.readOnly,
          available: unavailableReason === null,
          ...(unavailableReason ? { unavailableReason } : {}),
        }));
        process.stdout.write(`${JSON.stringify({ profile: profile.name, tools: out }, null, 2)}\n`);
      } else {
        const lines = [`Tools under profile "${profile.name}":`, ''];
        for (const { tool, unavailableReason } of entries) {
          lines.push(`${tool.name}${tool.readOnly ? ' (read-only)' : ''}${unavailableReason ? `  [not offered: ${unavailableReason}]` : ''}`);
          lines.push(...tool.description.split('\n').map((line) => `  ${line}`));
          lines.push(`  arguments: ${JSON.stringify(tool.parameters.properties)}`);
          if (tool.parameters.required?.length) lines.push(`  required: ${tool.parameters.required.join(', ')}`);
          lines.push('');
        }
        process.stdout.write(`${lines.join('\n')}`);
      }
      setExit(EXIT_OK);
    },
  );
}
