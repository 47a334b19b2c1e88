import { READ_ONLY_EFFECTS } from '../core/effects.js';
import { isAbsolute, resolve } from 'node:path';
import { countOf, formatCount } from '../core/long-lines.js';
import { resolveExistingPath } from '../core/existing-path.js';
import { displayPath, SKIPPED_DIRECTORIES } from '../core/paths.js';
import { success, ToolError } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';

export const GLOB_DEFAULT_MAX_RESULTS = 100;
export const GLOB_MAX_RESULTS_LIMIT = 1000;

const GLOB_PARAMETERS = toolParameters(
  {
    pattern: { type: 'string', minLength: 1, description: 'Glob relative to path, e.g. "**/*.sql".' },
    path: { type: 'string', description: 'Directory to search from; default: the working directory.' },
    max_results: {
      type: 'integer',
      minimum: 1,
      maximum: GLOB_MAX_RESULTS_LIMIT,
      default: GLOB_DEFAULT_MAX_RESULTS,
      description: `Most paths to return. Default ${GLOB_DEFAULT_MAX_RESULTS}.`,
    },
  },
  ['pattern'],
);
export type GlobArgs = ArgsOf<typeof GLOB_PARAMETERS>;

export const globTool = defineTool({
  name: 'glob',
  description:
    'Find files by name with a glob pattern, relative to path (default: the working directory): "*.csv" matches ' +
    'only at the top, "**/*.csv" at any depth, "src/**/*.{ts,tsx}" under src. Hidden files included; never descends ' +
    `into ${SKIPPED_DIRECTORIES.join(', ')}. Lists files only, sorted by path; at most max_results (default ` +
    `${GLOB_DEFAULT_MAX_RESULTS}, at most ${GLOB_MAX_RESULTS_LIMIT}), saying how many matched when cut.`,
  parameters: GLOB_PARAMETERS,
  readOnly: true,
  effects: READ_ONLY_EFFECTS,
  async run(args, context) {
    const { backend, workingDir } = context;
    if (isAbsolute(args.pattern) || args.pattern.startsWith('~')) {
      throw new ToolError(
        `pattern "${args.pattern}" is absolute: give the directory in path and a relative pattern (e.g. path "/var/log", pattern "**/*.log")`,
        'bad_pattern',
      );
    }
    if (args.pattern.split('/').includes('..')) {
      throw new ToolError(`pattern "${args.pattern}" goes up with "..": give the directory to search in path instead`, 'bad_pattern');
    }
    const { path: root, shown: shownRoot, stat } = await resolveExistingPath(context, args.path ?? '.');
    if (stat.type !== 'directory')
      throw new ToolError(`${shownRoot} is not a directory; glob searches under a directory (use read for a file)`, 'not_a_directory');

    const limit = args.max_results ?? GLOB_DEFAULT_MAX_RESULTS;
    const found = await backend.glob(args.pattern, { cwd: root, skipDirs: SKIPPED_DIRECTORIES, includeHidden: true, limit });
    const metadata = { count: found.paths.length, truncated: found.truncated, total: found.total ?? null };
    if (found.paths.length === 0) return success(`no files match ${JSON.stringify(args.pattern)} under ${shownRoot}`, metadata);
    const lines = found.paths.map((path) => displayPath(workingDir, resolve(root, path)));
    if (found.truncated) {
      const of = found.total !== undefined ? `of ${formatCount(found.total)} ` : '';
      lines.push(
        `[showing the first ${formatCount(found.paths.length)} ${of}matching files; narrow the pattern or path, or raise max_results (at most ` +
          `${GLOB_MAX_RESULTS_LIMIT})]`,
      );
    } else {
      lines.push(`[${countOf(found.paths.length, 'matching file')}]`);
    }
    return success(lines.join('\n'), { ...metadata, moreHint: 'narrow the pattern or path, or lower max_results' });
  },
});
