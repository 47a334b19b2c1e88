import type { Argv } from 'yargs';

/** Options every command that opens a workspace understands. */
export function withCommonOptions<T>(argv: Argv<T>) {
  return argv
    .option('profile', {
      alias: 'p',
      type: 'string',
      describe: 'Profile name or YAML path (env QUARRY_PROFILE)',
      default: process.env.QUARRY_PROFILE || 'readonly',
      defaultDescription: 'readonly',
    })
    .option('working-dir', { alias: 'w', type: 'string', describe: 'Directory every relative path resolves against (default: the current directory)' })
    .option('config', { type: 'string', describe: 'Config file with databases and mcp_servers (default: $QUARRY_HOME/config.yaml)' })
    .option('knowledge', { type: 'string', describe: "The team's knowledge folder (default: .quarry/knowledge/ when it exists; config.yaml knowledge:)" });
}

/** `--db [ALIAS=]TARGET` (repeatable) and `--databases FILE` (docs/guide/running.md and docs/guide/databases.md). */
/** The --db flag's help, shared by every command that takes it (the run command declares its own --db). */
export const DB_OPTION_DESCRIPTION =
  'A database: [ALIAS=]TARGET (postgres://, mysql://, oracle://, vertica://, sqlite:PATH, a SQLite file, a .duckdb file, a CSV/Parquet/JSON file or ' +
  'duckdb:GLOB); repeatable';

export function withDatabaseOptions<T>(argv: Argv<T>) {
  return argv
    .option('db', {
      type: 'string',
      describe: DB_OPTION_DESCRIPTION,
      coerce: (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat()),
    })
    .option('databases', { type: 'string', describe: 'YAML file of databases (env QUARRY_DB_CONFIG)' });
}

/** What openWorkspace needs from the database options. */
export function databaseOptions(argv: { db?: string[] | undefined; databases?: string | undefined }): { dbFlags: string[]; databasesFile?: string } {
  return { dbFlags: argv.db ?? [], ...(argv.databases ? { databasesFile: argv.databases } : {}) };
}
