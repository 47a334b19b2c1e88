import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { UsageError } from '../errors.js';
import { DB_OPTION_DESCRIPTION, withCommonOptions } from './options.js';

/**
 * `quarry [PROMPT..]`: a one-shot run when a prompt is given (as arguments or on stdin), the
 * REPL when not and stdin is a terminal. Flag parsing lives here; the run itself is in
 * run-session.ts, loaded only when a run starts.
 */

export interface RunCommandOptions {
  prompt: string[];
  profile: string;
  profileGiven: boolean;
  workingDir: string | undefined;
  configFile: string | undefined;
  knowledge?: string | undefined;
  model: string | undefined;
  baseUrl: string | undefined;
  db: string[];
  databases: string | undefined;
  systemPrompt: string | undefined;
  vars: string[];
  varsFile: string | undefined;
  yes: boolean;
  /** --allow-outward: outward calls after untrusted content are approved (docs/security.md). */
  allowOutward: boolean;
  resume: string | undefined;
  format: 'text' | 'json' | 'stream-json';
  output: string | undefined;
  maxTurns: number;
  contextWindow: number | undefined;
  reasoningEffort: string | undefined;
  color: boolean;
  verbose: boolean;
}

function strings(value: unknown): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map(String);
}

function positiveInteger(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0) throw new UsageError(`${flag} must be a positive whole number, got "${String(value)}"`);
  return number;
}

export function registerRunCommand(parser: Argv, setExit: (code: number) => void, rawArgs: readonly string[]): void {
  parser.command(
    '$0 [prompt..]',
    'Ask a question (one-shot), or start the interactive REPL when no prompt is given',
    (y) =>
      withCommonOptions(y)
        .positional('prompt', { type: 'string', array: true, describe: 'The question; read from stdin when piped' })
        .option('model', {
          alias: 'm',
          type: 'string',
          describe: 'PROVIDER/MODEL: openai/NAME, anthropic/NAME, ollama/NAME, NAME with --base-url, or script:FILE (env QUARRY_MODEL)',
        })
        .option('base-url', { type: 'string', describe: 'An OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (env OPENAI_BASE_URL)' })
        .option('db', { type: 'string', describe: DB_OPTION_DESCRIPTION })
        .option('databases', { type: 'string', describe: 'YAML file of databases (env QUARRY_DB_CONFIG)' })
        .option('system-prompt', { type: 'string', describe: 'A prompt template (Markdown with YAML front matter), a path or a name in $QUARRY_HOME/prompts/' })
        .option('var', { type: 'string', describe: 'Template variable NAME=VALUE; repeatable' })
        .option('vars-file', { type: 'string', describe: 'YAML or JSON file of template variables' })
        .option('yes', { alias: 'y', type: 'boolean', default: false, describe: 'Approve every tool call the profile would ask about' })
        .option('allow-outward', {
          type: 'boolean',
          default: false,
          describe: 'Also approve calls that can send data out after untrusted content is in the conversation (--yes does not)',
        })
        .option('resume', { type: 'string', describe: 'Continue a session: its ID or "latest"' })
        .option('format', {
          choices: ['text', 'json', 'stream-json'] as const,
          default: 'text' as const,
          describe: 'text: streamed answer; json: one result object; stream-json: every event as a JSON line',
        })
        .option('output', { alias: 'o', type: 'string', describe: 'Also write the final answer to this file' })
        // Strings, checked by positiveInteger: yargs' number type turns "abc" into NaN before any check.
        .option('max-turns', { type: 'string', default: '50', describe: 'Stop after this many model turns' })
        .option('context-window', { type: 'string', describe: "The model's context window in tokens (compaction starts at 80%); known models need none" })
        .option('reasoning-effort', { type: 'string', describe: 'Passed to models that support it (e.g. low, medium, high)' }),
    async (argv) => {
      const given = (...flags: string[]) => rawArgs.some((arg) => flags.some((flag) => arg === flag || arg.startsWith(`${flag}=`)));
      const options: RunCommandOptions = {
        prompt: strings(argv.prompt),
        profile: argv.profile,
        // Only the flag: QUARRY_PROFILE is a default for new sessions, it never changes a resumed one's profile.
        profileGiven: given('--profile', '-p'),
        workingDir: argv['working-dir'],
        configFile: argv.config,
        knowledge: argv.knowledge,
        model: argv.model,
        baseUrl: argv['base-url'],
        db: strings(argv.db),
        databases: argv.databases,
        systemPrompt: argv['system-prompt'],
        vars: strings(argv.var),
        varsFile: argv['vars-file'],
        yes: argv.yes,
        allowOutward: argv['allow-outward'],
        resume: argv.resume,
        format: argv.format,
        output: argv.output,
        maxTurns: positiveInteger(argv['max-turns'], '--max-turns') ?? 50,
        contextWindow: positiveInteger(argv['context-window'], '--context-window'),
        reasoningEffort: argv['reasoning-effort'],
        color: argv.color !== false && !process.env.NO_COLOR,
        verbose: Boolean(argv.verbose),
      };
      // Before the model is ever called: a run must not spend its turns and then fail to save.
      if (options.output) checkOutputPath(options.output);
      const { runAgentCommand } = await import('./run-session.js');
      setExit(await runAgentCommand(options));
    },
  );
}

/**
 * `-o FILE` is checked when the run starts: its folder must exist and be writable, and FILE must
 * not be a folder. The answer itself is written only when the run completes.
 */
export function checkOutputPath(path: string): void {
  const absolute = resolve(path);
  let isDirectory = false;
  try {
    isDirectory = statSync(absolute).isDirectory();
  } catch {
    // Does not exist yet: its folder is checked below.
  }
  if (isDirectory) throw new UsageError(`--output ${path}: is a folder; give the path of a file`);
  try {
    const folder = statSync(dirname(absolute));
    if (!folder.isDirectory()) throw new UsageError(`--output ${path}: ${dirname(absolute)} is not a folder`);
    accessSync(dirname(absolute), constants.W_OK);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      `--output ${path}: ${
        code === 'ENOENT'
          ? `the folder ${dirname(absolute)} does not ` + `exist`
          : code === 'EACCES'
            ? `the folder ${dirname(absolute)} is not writable`
            : (error as Error).message
      }; nothing was run`,
    );
  }
}
