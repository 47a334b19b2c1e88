import { checkReadBeforeWrite, countLines, findExistingFile, plural, recordWritten, writeFileClearly } from '../core/file-write-support.js';
import { formatBytes, resolveToolPath, shownPath } from '../core/paths.js';
import { effects } from '../core/effects.js';
import { success, ToolError, type Tool, type ToolContext, type ToolResult } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';
import { checkCreateOnlyTarget, refuseQuarryHome, type FileWriteMode } from '../core/write-policy.js';

/**
 * `write {path, content}` (docs/guide/tools.md "Writes"): writes a whole file atomically (temporary file, then
 * rename), creating parent directories. In create-only profiles it only creates new files, in
 * permitted places (docs/guide/tools.md "Writes"); in full profiles it may also replace a file this session has read.
 */

const DESCRIPTION =
  `Write a text file (UTF-8), creating parent directories. The write is atomic: the file is either the old one or the new one, never ` +
  `half-written. Empty content is allowed.
- Profiles with file_write "create-only" only create NEW files, inside the working directory, the temporary directory or the profile's write_roots; they ` +
  `never overwrite, never write through a symlink and never touch sensitive locations (shell start-up files, ~/.ssh, ~/.config, /etc, ...).
- Profiles with file_write "full" may also replace an existing file: read it first (read or grep) in this session; if it changed on disk since, read it ` +
  `again. To change part of a file, prefer edit.
Symlinks are followed in full mode (the link stays, its target is written). Relative paths resolve against the working directory.`;

/** What the toolset builds write with, from the profile (src/agent/toolset.ts). */
export interface WriteToolOptions {
  /** file_write: create-only only creates new files in permitted places; full may also replace a file read first; off refuses. */
  mode: FileWriteMode;
  /** Extra directories where create-only writes may go (write_roots). */
  writeRoots: readonly string[];
  /** The profile's name, for the refusal under off. */
  profileName: string;
}

async function createOnly(
  context: ToolContext,
  writeRoots: readonly string[],
  requested: string,
  data: Buffer,
): Promise<{ path: string; created: boolean; previousBytes?: number }> {
  const target = await checkCreateOnlyTarget(context.backend, requested, {
    workingDir: context.workingDir,
    writeRoots,
  });
  // Exclusive: a file that appears between the check and the write is never replaced.
  await writeFileClearly(context, target, shownPath(context.workingDir, requested), data, true);
  return { path: target, created: true };
}

async function createOrReplace(context: ToolContext, requested: string, data: Buffer): Promise<{ path: string; created: boolean; previousBytes?: number }> {
  const shown = shownPath(context.workingDir, requested);
  const existing = await findExistingFile(context, requested, shown);
  if (!existing) {
    await writeFileClearly(context, requested, shown, data, true);
    return { path: requested, created: true };
  }
  checkReadBeforeWrite(context, existing);
  await writeFileClearly(context, existing.real, shown, data, false);
  return { path: existing.real, created: false, previousBytes: existing.stat.size };
}

const WRITE_PARAMETERS = toolParameters(
  {
    path: { type: 'string', description: 'File to write, relative to the working directory or absolute.' },
    content: { type: 'string', description: 'The complete new content of the file.' },
  },
  ['path', 'content'],
);
export type WriteArgs = ArgsOf<typeof WRITE_PARAMETERS>;

export function createWriteTool(options: WriteToolOptions): Tool {
  const { mode, writeRoots, profileName } = options;
  return defineTool({
    name: 'write',
    description: DESCRIPTION,
    parameters: WRITE_PARAMETERS,
    readOnly: false,
    effects: effects({ writesFiles: mode !== 'off', destructive: mode === 'full' }),
    async run(args, context): Promise<ToolResult> {
      if (mode !== 'create-only' && mode !== 'full') {
        throw new ToolError(`write is not allowed: file_write is ${mode} in profile ${profileName}`, 'refused');
      }
      if (/[\\/]$/.test(args.path)) {
        throw new ToolError(`${args.path} ends with a slash, so it names a directory; give the path of a file`, 'is_directory');
      }
      const requested = await resolveToolPath(context.backend, context.workingDir, args.path);
      const data = Buffer.from(args.content, 'utf8');
      if (mode === 'full') await refuseQuarryHome(context.backend, requested);
      const outcome = mode === 'create-only' ? await createOnly(context, writeRoots, requested, data) : await createOrReplace(context, requested, data);
      await recordWritten(context, [requested, outcome.path]);

      const shown = shownPath(context.workingDir, requested);
      const size = `${plural(countLines(args.content), 'line')}, ${formatBytes(data.length)}`;
      const was = outcome.previousBytes === undefined ? '' : `; was ${formatBytes(outcome.previousBytes)}`;
      return success(`${outcome.created ? 'created' : 'overwrote'} ${shown} (${size}${was})`, {
        path: outcome.path,
        bytes: data.length,
        created: outcome.created,
      });
    },
  });
}
