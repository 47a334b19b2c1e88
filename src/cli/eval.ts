import { readFileSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { readConfigFile } from '../config/config-file.js';
import { configFileLocation, packageRoot, quarryHome } from '../config/home.js';
import { EXIT_CANCELLED, EXIT_OK, UsageError } from '../errors.js';
import { knowledgeDir, loadKnowledge } from '../tools/knowledge/folder.js';
import { trustFolder } from '../security/trusted-folders.js';
import { databaseOptions, withDatabaseOptions } from './options.js';

/**
 * `quarry eval SUITE …` and `quarry eval compare A B` (docs/guide/eval.md). The runner and
 * report live in src/eval/; this file parses flags, shows progress and prints the report.
 */

export const DEFAULT_EVAL_CONCURRENCY = 4;
export const DEFAULT_EVAL_TIMEOUT_S = 300;
export const DEFAULT_EVAL_MAX_TURNS = 30;

function positiveInteger(name: string, value: unknown): number {
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(number) || number < 1) throw new UsageError(`--${name} expects a whole number ≥ 1, got "${String(value)}"`);
  return number;
}

export function registerEvalCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'eval <suite> [runs..]',
    'Run a text-to-SQL suite (BIRD, Spider or quarry YAML) and report execution accuracy; `eval compare A B` diffs two runs',
    (y) =>
      withDatabaseOptions(y)
        .positional('suite', { type: 'string', describe: 'Suite file (.json BIRD/Spider, .yaml quarry), or "compare"', demandOption: true })
        .positional('runs', { type: 'string', array: true, describe: 'With compare: two eval output directories' })
        .option('db-dir', { type: 'string', describe: 'BIRD/Spider databases: DIR/<db_id>/<db_id>.sqlite' })
        .option('model', { alias: 'm', type: 'string', describe: 'PROVIDER/MODEL (env QUARRY_MODEL); script:FILE for a scripted model' })
        .option('base-url', { type: 'string', describe: 'An OpenAI-compatible endpoint (env OPENAI_BASE_URL)' })
        .option('profile', { alias: 'p', type: 'string', default: 'readonly', describe: 'Profile of the agent runs' })
        .option('config', { type: 'string', describe: 'Config file (default: $QUARRY_HOME/config.yaml)' })
        .option('system-prompt', { type: 'string', describe: 'System prompt template (the eval instructions are appended)' })
        .option('knowledge', { type: 'string', describe: "The team's knowledge folder every run uses (its hash goes into report.json)" })
        .option('concurrency', { type: 'number', default: DEFAULT_EVAL_CONCURRENCY, describe: 'Agent runs at once' })
        .option('limit', { type: 'number', describe: 'Only the first N questions' })
        .option('only', { type: 'string', describe: 'Only these question ids (comma-separated)' })
        .option('timeout', { type: 'number', default: DEFAULT_EVAL_TIMEOUT_S, describe: 'Seconds per agent run' })
        .option('max-turns', { type: 'number', default: DEFAULT_EVAL_MAX_TURNS, describe: 'Model turns per agent run' })
        .option('vote', { type: 'number', default: 1, describe: 'K attempts per question, majority of equal results wins' })
        .option('compare', { choices: ['set', 'multiset', 'ordered'] as const, describe: "Override the suite's scoring rule" })
        .option('out', { type: 'string', describe: 'Output directory (default $QUARRY_HOME/evals/SUITE-TIME)' })
        .option('resume', { type: 'boolean', default: false, describe: 'Continue the run in --out, skipping finished questions' })
        .option('format', { choices: ['text', 'json'] as const, default: 'text' as const, describe: 'json: print the report as JSON' }),
    async (argv) => {
      if (argv.suite === 'compare') {
        setExit(await compareCommand(argv.runs ?? [], argv.format));
        return;
      }
      if ((argv.runs ?? []).length > 0) throw new UsageError(`quarry eval takes one suite file, got extra arguments: ${(argv.runs ?? []).join(' ')}`);
      setExit(
        await evalCommand({
          suite: argv.suite as string,
          dbDir: argv['db-dir'],
          model: argv.model,
          baseUrl: argv['base-url'],
          profile: argv.profile,
          configFile: argv.config,
          systemPrompt: argv['system-prompt'],
          knowledge: argv.knowledge,
          databases: databaseOptions(argv),
          concurrency: positiveInteger('concurrency', argv.concurrency),
          limit: argv.limit === undefined ? undefined : positiveInteger('limit', argv.limit),
          only: argv.only,
          timeoutS: positiveInteger('timeout', argv.timeout),
          maxTurns: positiveInteger('max-turns', argv['max-turns']),
          vote: positiveInteger('vote', argv.vote),
          compare: argv.compare,
          out: argv.out,
          resume: argv.resume,
          format: argv.format,
        }),
      );
    },
  );
}

interface EvalCommandOptions {
  suite: string;
  dbDir: string | undefined;
  model: string | undefined;
  baseUrl: string | undefined;
  profile: string;
  configFile: string | undefined;
  systemPrompt: string | undefined;
  knowledge?: string | undefined;
  databases: { dbFlags: string[]; databasesFile?: string };
  concurrency: number;
  limit: number | undefined;
  only: string | undefined;
  timeoutS: number;
  maxTurns: number;
  vote: number;
  compare: 'set' | 'multiset' | 'ordered' | undefined;
  out: string | undefined;
  resume: boolean;
  format: 'text' | 'json';
}

function version(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

function defaultOutDir(suite: string): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return join(quarryHome(), 'evals', `${basename(suite, extname(suite))}-${stamp}`);
}

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`;
}

async function evalCommand(options: EvalCommandOptions): Promise<number> {
  const cwd = process.cwd();
  const [{ loadSuite }, { chooseModel }, { ModelError }] = await Promise.all([
    import('../eval/suite.js'),
    import('../model/resolve.js'),
    import('../model/types.js'),
  ]);
  const suite = loadSuite(options.suite, cwd);
  let choice;
  try {
    choice = chooseModel({ model: options.model, baseUrl: options.baseUrl });
  } catch (error) {
    if (error instanceof ModelError) throw new UsageError(error.message);
    throw error;
  }
  if (options.resume && !options.out) throw new UsageError('--resume needs --out DIR: the output directory of the run to continue');
  // config.yaml is read by each question's workspace; read here first, so a missing --config or a
  // mistake in the file stops the command before anything is written, as for every other command.
  const config = readConfigFile(configFileLocation(options.configFile, process.env, cwd));
  // The folder is read here too: a mistake in it stops the command before anything runs, and its hash is recorded.
  const knowledgeFolder = knowledgeDir({ flag: options.knowledge, configured: { value: config.settings.knowledge, file: config.file }, workingDir: cwd, cwd });
  if (knowledgeFolder) trustFolder(knowledgeFolder);
  const knowledge = knowledgeFolder ? { dir: knowledgeFolder, sha256: loadKnowledge(knowledgeFolder).hash } : undefined;
  let selection = suite.questions;
  if (options.only) {
    const ids = options.only
      .split(',')
      .map((id) => id.trim())
      .filter(Boolean);
    const unknown = ids.filter((id) => !suite.questions.some((question) => question.id === id));
    if (unknown.length) throw new UsageError(`--only: no question with id ${unknown.join(', ')} in ${suite.path}`);
    selection = selection.filter((question) => ids.includes(question.id));
  }
  if (options.limit !== undefined) selection = selection.slice(0, options.limit);
  const outDir = resolve(cwd, options.out ?? defaultOutDir(options.suite));

  const { runEval } = await import('../eval/runner.js');
  const { buildReport, reportMarkdown, writeReport } = await import('../eval/report.js');
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT_CANCELLED);
    process.stderr.write('\nquarry eval: stopping (finished questions are kept; Ctrl+C again to quit at once)\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  const tty = Boolean(process.stderr.isTTY);
  let outcome;
  try {
    outcome = await runEval(
      {
        suite,
        choice,
        profile: options.profile,
        databases: options.databases,
        concurrency: options.concurrency,
        timeoutMs: options.timeoutS * 1000,
        vote: options.vote,
        maxTurns: options.maxTurns,
        outDir,
        resume: options.resume,
        cwd,
        signal: controller.signal,
        version: version(),
        ...(options.dbDir ? { dbDir: options.dbDir } : {}),
        ...(options.configFile ? { configFile: options.configFile } : {}),
        ...(options.systemPrompt ? { systemPromptFile: options.systemPrompt } : {}),
        ...(knowledge ? { knowledge } : {}),
        ...(options.compare ? { compare: options.compare } : {}),
        onProgress: (progress) => {
          const accuracy = progress.scored ? `${((progress.correct / progress.scored) * 100).toFixed(1)}%` : '-';
          const left = progress.total - progress.done;
          const eta = progress.finishedHere ? duration((progress.elapsedMs / progress.finishedHere) * left) : '?';
          if (tty) {
            const width = 24;
            const filled = Math.round((progress.done / Math.max(1, progress.total)) * width);
            process.stderr.write(
              `\r\x1b[K[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${progress.done}/${progress.total}  accuracy ${accuracy}  ETA ${left ? eta : '0s'}`,
            );
          } else if (progress.last) {
            const last = progress.last;
            const verdict = last.gold_error ? 'unscored (gold failed)' : (options.vote > 1 ? last.voted?.correct : last.correct) ? 'correct' : 'wrong';
            process.stderr.write(
              `[${progress.done}/${progress.total}] ${last.id} ${verdict} (${(last.duration_ms / 1000).toFixed(1)} s); accuracy ${accuracy}, ETA ` +
                `${left ? eta : '0s'}\n`,
            );
          }
        },
      },
      selection,
    );
  } finally {
    process.off('SIGINT', onSigint);
    if (tty) process.stderr.write('\n');
  }
  const report = buildReport(outcome.config, outcome.results, outcome.unfinished, outcome.cancelled);
  const files = writeReport(outDir, report);
  if (options.format === 'json')
    process.stdout.write(`${JSON.stringify({ ...report, files: { ...files, results: join(outDir, 'results.jsonl') } }, null, 2)}\n`);
  else {
    process.stdout.write(reportMarkdown(report));
    process.stdout.write(`\nreport: ${files.markdown}\nresults: ${join(outDir, 'results.jsonl')}\n`);
    if (outcome.cancelled) process.stdout.write(`resume with: quarry eval ${options.suite} --out ${outDir} --resume\n`);
  }
  return outcome.cancelled ? EXIT_CANCELLED : EXIT_OK;
}

async function compareCommand(runs: readonly string[], format: 'text' | 'json'): Promise<number> {
  if (runs.length !== 2) throw new UsageError('quarry eval compare needs two eval output directories: quarry eval compare A B');
  const { compareRuns, compareText } = await import('../eval/report.js');
  const [a, b] = runs.map((run) => resolve(process.cwd(), run)) as [string, string];
  const summary = compareRuns(a, b);
  process.stdout.write(format === 'json' ? `${JSON.stringify({ a, b, ...summary }, null, 2)}\n` : compareText(a, b, summary));
  return EXIT_OK;
}
