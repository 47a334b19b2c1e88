import type { Argv } from 'yargs';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../errors.js';
import type { RefreshResult, RefreshedStep } from '../report/refresh.js';
import type { SessionData } from '../report/html.js';
import { withDatabaseOptions } from './options.js';
import type { RunCommandOptions } from './run.js';

/**
 * `quarry refresh SESSION` and `quarry report SESSION --refresh` (docs/guide/sessions.md "Refreshing a session"):
 * the session's reads run again with no model, under exactly the profile it ran under (a changed
 * or other profile is refused, as for --resume) and against the same databases (each alias must
 * still point where it did). Statements run read-only whatever the profile's database mode.
 */

/** Exit code of `quarry refresh --fail-on-change` when something changed beyond the tolerance. */
export const EXIT_CHANGED = 3;

export interface RefreshFlags {
  db: string[];
  databases?: string | undefined;
  config?: string | undefined;
  tolerance: number;
}

export function withRefreshOptions<T>(argv: Argv<T>) {
  return withDatabaseOptions(argv)
    .option('config', { type: 'string', describe: "Config file with databases (default: the session's, else $QUARRY_HOME/config.yaml)" })
    .option('tolerance', { type: 'number', default: 0, describe: 'Percent a value or row count may move without counting as a change' });
}

function toleranceOf(value: unknown): number {
  const tolerance = Number(value ?? 0);
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new UsageError(`--tolerance must be a percentage of 0 or more, got ${String(value)}`);
  return tolerance;
}

/** Loads the session, checks its profile and databases, re-runs its reads. */
export async function refreshCommand(requested: string, flags: RefreshFlags): Promise<{ session: SessionData; result: RefreshResult }> {
  const tolerance = toleranceOf(flags.tolerance);
  // Loaded here, not at start-up (as for quarry tool).
  const [{ Session }, { resolveProfile }, { checkDatabaseTargets, planRun, profileDifferences }, { loadSessionDir }, { refreshSession }, { openWorkspace }] =
    await Promise.all([
      import('../agent/session.js'),
      import('../profiles/load.js'),
      import('./resume.js'),
      import('../report/html.js'),
      import('../report/refresh.js'),
      import('../agent/workspace.js'),
    ]);
  const session = Session.open(requested);
  const meta = session.info;
  const data = loadSessionDir(session.dir);
  if (!data) throw new UsageError(`session ${session.id} has no readable meta.json`);
  if (!meta.profile_content || !meta.profile_ref) {
    throw new UsageError(`session ${session.id} was saved without its profile's settings, so quarry cannot refresh it under the profile it ran under`);
  }
  if (!meta.databases) {
    throw new UsageError(`session ${session.id} was saved without its databases' identities, so quarry cannot make sure a refresh reads the same databases`);
  }
  const cwd = process.cwd();
  const { profile } = resolveProfile(meta.profile_ref, cwd);
  const { source: _source, ...content } = profile;
  const differences = profileDifferences(meta.profile_content, content);
  if (differences.length > 0) {
    throw new UsageError(
      `session ${session.id} ran under profile ${meta.profile} from ${meta.profile_source ?? meta.profile_ref}, which has changed since ` +
        `(${differences.join('; ')}); a refresh runs only under the profile the session ran under: restore it`,
    );
  }
  const plan = planRun(
    {
      profile: meta.profile_ref,
      profileGiven: true,
      db: flags.db,
      databases: flags.databases,
      configFile: flags.config,
      vars: [],
    } as Partial<RunCommandOptions> as RunCommandOptions,
    session,
    cwd,
  );
  // Reads only: the statements also run in the engines' read-only transactions (database: readonly).
  const workspace = await openWorkspace({
    profile: { ...profile, database: 'readonly' },
    workingDir: meta.working_dir,
    ...(plan.configFile ? { configFile: plan.configFile } : {}),
    databases: plan.databases,
    mcp: false,
  });
  try {
    checkDatabaseTargets(session.id, meta.databases.targets, workspace);
    const controller = new AbortController();
    const onSigint = () => controller.abort();
    process.once('SIGINT', onSigint);
    try {
      const result = await refreshSession(data, workspace, { tolerancePercent: tolerance, signal: controller.signal });
      return { session: data, result };
    } finally {
      process.off('SIGINT', onSigint);
    }
  } finally {
    await workspace.close();
  }
}

function stepLine(step: RefreshedStep): string {
  const where = `${step.tool}${step.operation === 'chart' ? '' : ` ${step.operation}`}${step.database ? ` (${step.database})` : ''}`;
  const head = `step ${step.index} (question ${step.question}) ${where}: ${step.status}`;
  if (step.status === 'failed' || step.status === 'skipped') return `${head}: ${step.message ?? ''}`;
  const parts: string[] = [];
  const rows = (side: { rows?: number; more?: boolean } | undefined) => (side?.rows === undefined ? '?' : `${side.rows}${side.more ? '+' : ''}`);
  if (step.before.rows !== undefined || step.after?.rows !== undefined)
    parts.push(`rows ${rows(step.before)}${rows(step.before) === rows(step.after) ? '' : ` → ${rows(step.after)}`}`);
  if (step.columns) parts.push(`columns ${step.columns.old.join(', ')} → ${step.columns.new.join(', ')}`);
  for (const value of step.values.slice(0, 20)) {
    const change = `${value.delta >= 0 ? '+' : ''}${Number(value.delta.toPrecision(12))}${value.percent === null ? '' : `, ${value.percent >= 0 ? '+' : ''}${value.percent.toFixed(1)}%`}`;
    parts.push(`${value.row ? `${value.row}: ` : ''}${value.column} ${value.old} → ${value.new} (${change})`);
  }
  for (const row of step.appeared.slice(0, 10)) parts.push(`appeared: ${row.join(' | ')}`);
  for (const row of step.disappeared.slice(0, 10)) parts.push(`disappeared: ${row.join(' | ')}`);
  const more = step.values.length - 20 + Math.max(0, step.appeared.length - 10) + Math.max(0, step.disappeared.length - 10);
  if (more > 0) parts.push(`… ${more} more changes (quarry refresh --format json lists them all)`);
  if (step.after?.path) parts.push(`written: ${step.after.path}`);
  if (step.status === 'changed' && !step.beyondTolerance) parts.push('within the tolerance');
  return `${head}${parts.length ? `\n  ${parts.join('\n  ')}` : ''}`;
}

export function refreshText(result: RefreshResult): string {
  const lines = [
    `Refreshed session ${result.sessionId} without the model (0 tokens): ${result.steps.length} step${result.steps.length === 1 ? '' : 's'} re-run in ` +
      `${(result.durationMs / 1000).toFixed(1)} s (the original runs took ${(result.originalDurationMs / 1000).toFixed(1)} s)` +
      `${result.notRerun ? `; ${result.notRerun} other step${result.notRerun === 1 ? '' : 's'} not re-run (only query, export_query and chart are)` : ''}.`,
    ...result.steps.map(stepLine),
  ];
  for (const answer of result.answers) {
    if (answer.figures.length === 0) continue;
    lines.push(`answer ${answer.question}: ${answer.figures.map((figure) => `${figure.old} → ${figure.new}`).join(', ')}`);
  }
  return `${lines.join('\n')}\n`;
}

export function refreshJson(result: RefreshResult): string {
  const { failed, changed } = result;
  return `${JSON.stringify({
    session: result.sessionId,
    status: failed ? 'failed' : changed ? 'changed' : 'unchanged',
    tokens: 0,
    tolerance_percent: result.tolerancePercent,
    duration_ms: result.durationMs,
    original_duration_ms: result.originalDurationMs,
    not_rerun: result.notRerun,
    steps: result.steps.map(({ before, after, ...step }) => ({
      ...step,
      before: { rows: before.rows, more: before.more, path: before.path },
      ...(after ? { after: { rows: after.rows, more: after.more, path: after.path, files: after.files } } : {}),
    })),
    answers: result.answers.map((answer) => ({ question: answer.question, changed_figures: answer.figures.map(({ old, new: next }) => ({ old, new: next })) })),
  })}\n`;
}

/** 1 when a step failed; 3 when something changed beyond the tolerance and --fail-on-change; else 0. */
export function refreshExitCode(result: RefreshResult, failOnChange: boolean): number {
  const { failed, changed } = result;
  if (failed) return EXIT_FAILED;
  return changed && failOnChange ? EXIT_CHANGED : EXIT_OK;
}

export function registerRefreshCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'refresh <session>',
    'Re-run a session\'s queries, exports and charts without the model and print what changed ("latest" works)',
    (y) =>
      withRefreshOptions(y)
        .positional('session', { type: 'string', demandOption: true, describe: 'Session id, a unique prefix, or "latest"' })
        .option('format', { choices: ['text', 'json'] as const, default: 'text' as const, describe: 'text, or one JSON object' })
        .option('fail-on-change', { type: 'boolean', default: false, describe: 'Exit 3 when something changed beyond the tolerance' }),
    async (argv) => {
      const { result } = await refreshCommand(argv.session as string, {
        db: (argv.db as string[] | undefined) ?? [],
        databases: argv.databases,
        config: argv.config,
        tolerance: argv.tolerance,
      });
      process.stdout.write(argv.format === 'json' ? refreshJson(result) : refreshText(result));
      setExit(refreshExitCode(result, argv['fail-on-change']));
    },
  );
}
