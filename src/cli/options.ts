import type { Argv } from 'yargs';

/** Options every command that opens a workspace understands. */
export function withCommonOptions<T>(argv: Argv<T>) {
  return argv
    .option('profile', { alias: 'p', type: 'string', describe: 'Profile name or YAML path (env QUARRY_PROFILE)', default: process.env.QUARRY_PROFILE || 'readonly', defaultDescription: 'readonly' })
    .option('working-dir', { alias: 'w', type: 'string', describe: 'Directory every relative path resolves against (default: the current directory)' })
    .option('config', { type: 'string', describe: 'Config file with mcp_servers (default: $QUARRY_HOME/config.yaml)' });
}
