import { existsSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { resolveSessionId, sessionsDir } from '../agent/session.js';
import { EXIT_OK, UsageError } from '../errors.js';
import { refreshExitCode, withRefreshOptions } from './refresh.js';

/**
 * `quarry report SESSION [-o FILE.html] [--force]` (docs/guide/charts-and-reports.md "quarry report"): the session as one
 * self-contained HTML page. Without -o it is written as report.html in the session's own
 * directory (rewritten each time); -o never replaces an existing file unless --force.
 */

export function registerReportCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'report <session>',
    'Write a session as one self-contained HTML page ("latest" works)',
    (y) =>
      withRefreshOptions(y)
        .positional('session', { type: 'string', demandOption: true, describe: 'Session id, a unique prefix, or "latest"' })
        .option('output', { alias: 'o', type: 'string', describe: 'The HTML file to write (default: report.html in the session directory)' })
        .option('force', { type: 'boolean', default: false, describe: 'Replace an existing -o file' })
        .option('refresh', {
          type: 'boolean',
          default: false,
          describe: "Re-run the session's queries, exports and charts without the model and show the new results beside the old (default file: refresh.html)",
        }),
    async (argv) => {
      if (argv.refresh) {
        const { refreshCommand } = await import('./refresh.js');
        const flags = { db: (argv.db as string[] | undefined) ?? [], databases: argv.databases, config: argv.config, tolerance: argv.tolerance };
        const { session, result } = await refreshCommand(argv.session as string, flags);
        const { renderRefreshReport } = await import('../report/refresh-html.js');
        const path = writeReportFile(join(session.dir, 'refresh.html'), argv.output, argv.force, () => renderRefreshReport(session, result));
        process.stdout.write(`${path}\n`);
        // A step that now fails: exit 1, as quarry refresh.
        setExit(refreshExitCode(result, false));
        return;
      }
      const path = await writeSessionReport(argv.session as string, argv.output, argv.force);
      process.stdout.write(`${path}\n`);
      setExit(EXIT_OK);
    },
  );
}

/** Writes the report (atomically) and returns its path. */
export async function writeSessionReport(requested: string, output: string | undefined, force: boolean): Promise<string> {
  const id = resolveSessionId(requested);
  const { loadSessionDir, renderReport } = await import('../report/html.js');
  const session = loadSessionDir(join(sessionsDir(), id));
  if (!session) throw new UsageError(`session ${id} has no readable meta.json`);
  return writeReportFile(join(session.dir, 'report.html'), output, force, () => renderReport(session));
}

/** Writes the page atomically to -o (never over a file unless --force) or to the default path; returns the path. */
function writeReportFile(defaultPath: string, output: string | undefined, force: boolean, render: () => string): string {
  const target = output ? resolve(process.cwd(), output) : defaultPath;
  if (output && existsSync(target) && !force) throw new UsageError(`-o ${output}: the file exists; choose a new name or pass --force to replace it`);
  if (!existsSync(dirname(target))) throw new UsageError(`-o ${output}: the directory ${dirname(target)} does not exist`);
  if (!statSync(dirname(target)).isDirectory()) throw new UsageError(`-o ${output}: ${dirname(target)} is not a directory`);
  if (existsSync(target) && statSync(target).isDirectory()) throw new UsageError(`-o ${output}: it is a directory; name the HTML file to write`);
  const temp = `${target}.quarry-${process.pid}.tmp`;
  try {
    writeFileSync(temp, render());
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  return target;
}
