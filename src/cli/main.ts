import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import yargs from 'yargs';
import { packageRoot } from '../config/home.js';
import { exitCodeForError, EXIT_USAGE, UsageError } from '../errors.js';
import { registerDbCommand } from './db.js';
import { registerEvalCommand } from './eval.js';
import { registerKnowledgeCommand } from './knowledge.js';
import { registerMcpCommand } from './mcp.js';
import { registerProfilesCommand } from './profiles.js';
import { registerRefreshCommand } from './refresh.js';
import { registerReportCommand } from './report.js';
import { registerRunCommand } from './run.js';
import { registerSessionsCommands } from './sessions.js';
import { registerToolCommand } from './tool.js';
import { registerToolsCommand } from './tools.js';
import { hideProcessSecrets } from '../security/process-secrets.js';

/**
 * Errors a user can act on are printed as one line; anything else still never shows a stack
 * trace unless --verbose. With `--format json` (or stream-json) stdout also gets one error
 * object, `{"status":"error","error":MESSAGE,"exit_code":N}` (stream-json: with
 * `"type":"result"`), so a JSON consumer is never left with empty output.
 */
export function reportError(error: unknown, verbose: boolean, args: readonly string[] = []): number {
  // The one place an error becomes an exit code: every kind of UsageError (configuration, profile) is 2.
  const exitCode = exitCodeForError(error);
  const isUsage = exitCode === EXIT_USAGE;
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`quarry: ${message}\n`);
  if (verbose && error instanceof Error && error.stack && !isUsage) process.stderr.write(`${error.stack}\n`);
  const format = requestedFormat(args);
  if (format === 'json' || format === 'stream-json') {
    process.stdout.write(
      `${JSON.stringify({ ...(format === 'stream-json' ? { type: 'result' } : {}), status: 'error', error: message, exit_code: exitCode })}\n`,
    );
  }
  return exitCode;
}

/** The `--format` value as written on the command line (also when parsing itself failed). */
function requestedFormat(args: readonly string[]): string | undefined {
  let format: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') break;
    if (arg === '--format') format = args[i + 1];
    else if (arg.startsWith('--format=')) format = arg.slice('--format='.length);
  }
  return format;
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/**
 * yargs renders a command's whole help text right after starting its handler, in case the
 * handler asks for help later. quarry's handlers never do (failures print one line, see .fail),
 * and the rendering took about 20 ms of every run. yargs has no option for it, so the method is
 * replaced on yargs' usage object (an internal of yargs 18; if it is missing, nothing changes).
 */
function skipHelpCaching(parser: unknown): void {
  const internals = parser as { getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: () => void } } };
  const usage = internals.getInternalMethods?.().getUsageInstance?.();
  if (usage && typeof usage.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => undefined;
}

export async function main(args: string[]): Promise<number> {
  // Before anything else: other processes of the same user must not read keys and passwords in /proc (src/security/process-secrets.ts).
  hideProcessSecrets();
  let exitCode = 0;
  const setExit = (code: number) => {
    exitCode = code;
  };
  const verbose = args.includes('--verbose');
  const parser = yargs(args)
    .scriptName('quarry')
    // quarry's own text is English; yargs' words (Options:, [default]) would otherwise follow LANG.
    .locale('en')
    .usage('$0 [PROMPT..]\n\nA command-line LLM agent for data work. See README.md for every command, flag and profile.')
    .option('verbose', { type: 'boolean', describe: 'Print more detail (stack traces of internal errors)' })
    .option('color', { type: 'boolean', default: true, describe: 'Colours on a TTY (--no-color turns them off)' })
    .version('version', 'Print the version', packageVersion())
    .alias('version', 'V')
    .strict()
    .recommendCommands()
    .help()
    .alias('help', 'h')
    .wrap(Math.min(110, process.stdout.columns || 100))
    .exitProcess(false)
    .fail((message, error) => {
      throw error ?? new UsageError(`${message} (see quarry --help)`);
    });

  skipHelpCaching(parser);
  registerToolCommand(parser, setExit);
  registerToolsCommand(parser, setExit);
  registerProfilesCommand(parser, setExit);
  registerDbCommand(parser, setExit);
  registerSessionsCommands(parser, setExit);
  registerReportCommand(parser, setExit);
  registerRefreshCommand(parser, setExit);
  registerMcpCommand(parser, setExit);
  registerEvalCommand(parser, setExit);
  registerKnowledgeCommand(parser, setExit);
  registerRunCommand(parser, setExit, args);

  try {
    await parser.parseAsync();
  } catch (error) {
    return reportError(error, verbose, args);
  }
  return exitCode;
}
