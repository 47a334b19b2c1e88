import { existsSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { resolveSessionId, sessionsDir } from '../agent/session.js';
import { EXIT_OK, UsageError } from '../errors.js';

/**
 * `quarry report SESSION [-o FILE.html] [--force]` (README "quarry report"): the session as one
 * self-contained HTML page. Without -o it is written as report.html in the session's own
 * directory (rewritten each time); -o never replaces an existing file unless --force.
 */

export function registerReportCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'report <session>',
    'Write a session as one self-contained HTML page ("latest" works)',
    (y) =>
      y
        .positional('session', { type: 'string', demandOption: true, describe: 'Session id, a unique prefix, or "latest"' })
        .option('output', { alias: 'o', type: 'string', describe: 'The HTML file to write (default: report.html in the session directory)' })
        .option('force', { type: 'boolean', default: false, describe: 'Replace an existing -o file' }),
    async (argv) => {
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
  const { redactSecrets } = await import('../report/secrets.js');
  const session = loadSessionDir(join(sessionsDir(), id));
  if (!session) throw new UsageError(`session ${id} has no readable meta.json`);
  const target = output ? resolve(process.cwd(), output) : join(session.dir, 'report.html');
  if (output && existsSync(target) && !force) throw new UsageError(`-o ${output}: the file exists; choose a new name or pass --force to replace it`);
  if (!existsSync(dirname(target))) throw new UsageError(`-o ${output}: the directory ${dirname(target)} does not exist`);
  if (!statSync(dirname(target)).isDirectory()) throw new UsageError(`-o ${output}: ${dirname(target)} is not a directory`);
  if (existsSync(target) && statSync(target).isDirectory()) throw new UsageError(`-o ${output}: it is a directory; name the HTML file to write`);
  const temp = `${target}.quarry-${process.pid}.tmp`;
  try {
    writeFileSync(temp, redactSecrets(renderReport(session)));
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  return target;
}
