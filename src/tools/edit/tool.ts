import { refuseQuarryHome } from '../core/write-policy.js';
import { describeClosestRegion, numberedLines } from './closest.js';
import { lineNumberAt, lineStarts, locateEdit, type MatchStage } from './match.js';
import { applyReplacements, toLf, toTextFile, type TextFile, type ViewReplacement } from './text.js';
import { checkReadBeforeWrite, countLines, findExistingFile, plural, recordWritten, writeFileClearly } from '../core/file-write-support.js';
import { formatBytes, resolveToolPath, shownPath } from '../core/paths.js';
import { effects } from '../core/effects.js';
import { success, ToolError, type Tool, type ToolResult } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';
import type { FileWriteMode } from '../core/write-policy.js';

/**
 * `edit {path, old_string, new_string, replace_all?}` (docs/guide/tools.md "Writes"): replaces text in an existing
 * text file, keeping its line endings, BOM and indentation style. The match must be unique
 * unless replace_all: an ambiguous edit is refused, never applied to a guessed occurrence.
 */

/** Larger files are refused: an edit reads and rewrites the whole file in memory. */
export const MAX_EDIT_FILE_BYTES = 10 * 1024 * 1024;
/** Match lines listed (in the output and metadata) when old_string is ambiguous or replaced many times. */
const MAX_LISTED_MATCHES = 20;
/** Lines of the result shown after a single replacement. */
const MAX_RESULT_LINES = 12;

const STAGE_LABEL: Record<MatchStage, string> = {
  exact: 'exact match',
  whitespace: 'whitespace-normalised match',
  indentation: 'indentation-flexible match, re-indented to the file',
};

const DESCRIPTION =
  `Replace text in an existing text file. old_string must match exactly one place unless replace_all is true; give enough surrounding ` +
  `lines to make it unique. Copy old_string from the file's current content, without read's line-number prefixes.
Matching is tried in three stages: exact; then whole lines ignoring trailing whitespace and repeated spaces or tabs inside lines; then whole lines ignoring ` +
  `indentation (new_string is then re-indented with the file's own indentation, keeping its relative indentation). When nothing matches, the closest region ` +
  `of the file is shown with line numbers.
Line endings (CRLF), a UTF-8 BOM and tabs are kept. Read the file first in this session (read or grep); if it changed on disk since, read it again. Files ` +
  `over ${formatBytes(MAX_EDIT_FILE_BYTES)}, binary files and files that are not UTF-8 are refused. To create a file, use write.`;

function decodeText(bytes: Buffer, shown: string): string {
  if (bytes.includes(0)) throw new ToolError(`${shown} looks binary (it contains NUL bytes); edit changes text files only`, 'binary');
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ToolError(
      `${shown} is not valid UTF-8 text (perhaps Latin-1 or UTF-16); edit refuses it because rewriting would change bytes it did not mean to`,
      'unsupported_format',
    );
  }
}

function ambiguityMessage(shown: string, stage: MatchStage, lines: readonly number[]): string {
  const listed = lines.slice(0, MAX_LISTED_MATCHES).join(', ') + (lines.length > MAX_LISTED_MATCHES ? `, … (${lines.length - MAX_LISTED_MATCHES} more)` : '');
  return (
    `old_string matches ${lines.length} places in ${shown} (${STAGE_LABEL[stage]}), starting at lines ${listed}; nothing was changed. Add surrounding ` +
    `lines to old_string so that it matches exactly one place, or set replace_all: true to replace every one.`
  );
}

function notFoundMessage(shown: string, file: TextFile, oldText: string): string {
  const oldLines = (oldText.endsWith('\n') ? oldText.slice(0, -1) : oldText).split('\n');
  const parts = [`old_string was not found in ${shown} (no exact, whitespace-normalised or indentation-flexible match); nothing was changed.`];
  if (oldLines.filter((line) => line.trim() !== '').every((line) => /^\s*\d+(\t|: |\| )/.test(line))) {
    parts.push('old_string seems to start its lines with line numbers from read: leave them out.');
  }
  const fileLines = file.view.split('\n');
  if (file.view.endsWith('\n')) fileLines.pop(); // the final newline ends the last line; it starts none
  parts.push(describeClosestRegion(fileLines, oldLines));
  return parts.join('\n');
}

/** Where each replacement landed in the new text (1-based first and last line). */
function landedLines(replacements: readonly ViewReplacement[], newView: string): Array<{ first: number; last: number }> {
  const starts = lineStarts(newView);
  let shift = 0;
  return replacements.map(({ start, end, text }) => {
    const newStart = start + shift;
    shift += text.length - (end - start);
    const newEnd = Math.max(newStart, newStart + text.length - (text.endsWith('\n') ? 1 : 0));
    return { first: lineNumberAt(starts, newStart), last: lineNumberAt(starts, newEnd) };
  });
}

/** What the toolset builds edit with (src/agent/toolset.ts, which offers edit only under file_write: full). */
export interface EditToolOptions {
  /** The profile's file_write: anything but full refuses every call (fails closed). */
  mode: FileWriteMode;
  /** The profile's name, for that refusal. */
  profileName: string;
}

const EDIT_PARAMETERS = toolParameters(
  {
    path: { type: 'string', description: 'File to change, relative to the working directory or absolute.' },
    old_string: { type: 'string', description: 'The text to replace, copied from the file (not empty).' },
    new_string: { type: 'string', description: 'The replacement (may be empty to delete old_string).' },
    replace_all: { type: 'boolean', description: 'Replace every occurrence instead of requiring exactly one (default false).' },
  },
  ['path', 'old_string', 'new_string'],
);
export type EditArgs = ArgsOf<typeof EDIT_PARAMETERS>;

export function createEditTool(options: EditToolOptions): Tool {
  const { mode, profileName } = options;
  return defineTool({
    name: 'edit',
    description: DESCRIPTION,
    parameters: EDIT_PARAMETERS,
    readOnly: false,
    effects: effects({ reads: true, writesFiles: mode === 'full', destructive: mode === 'full' }),
    async run(args, context): Promise<ToolResult> {
      if (mode !== 'full') {
        throw new ToolError(`edit is not allowed: it needs file_write: full, and profile ${profileName} has ${mode}`, 'refused');
      }
      const oldText = toLf(args.old_string);
      const newText = toLf(args.new_string);
      if (oldText === '')
        throw new ToolError(
          'old_string is empty; give the text to replace (to create a file use write; to insert, include a neighbouring line in both old_string and ' +
            'new_string)',
          'bad_value',
        );
      if (oldText === newText) throw new ToolError('old_string and new_string are identical; nothing to change', 'bad_value');

      const requested = await resolveToolPath(context.backend, context.workingDir, args.path);
      await refuseQuarryHome(context.backend, requested);
      const shown = shownPath(context.workingDir, requested);
      const target = await findExistingFile(context, requested, shown);
      if (!target) throw new ToolError(`${shown} does not exist; edit changes existing files (use write to create one)`, 'not_found');
      if (target.stat.size > MAX_EDIT_FILE_BYTES) {
        throw new ToolError(
          `${shown} is ${formatBytes(target.stat.size)}, over edit's limit of ${formatBytes(MAX_EDIT_FILE_BYTES)}; change it with a shell command (e.g. ` +
            `sed) instead`,
          'too_large',
        );
      }
      checkReadBeforeWrite(context, target);

      const file = toTextFile(decodeText(await context.backend.readFile(target.real), shown));
      const outcome = locateEdit(file.view, oldText, newText, args.replace_all === true);
      if (outcome.kind === 'ambiguous')
        throw new ToolError(ambiguityMessage(shown, outcome.stage, outcome.lines), 'ambiguous', {
          stage: outcome.stage,
          matches: outcome.lines.length,
          lines: outcome.lines.slice(0, MAX_LISTED_MATCHES),
        });
      if (outcome.kind === 'not_found') throw new ToolError(notFoundMessage(shown, file, oldText), 'not_found');

      const { content, view } = applyReplacements(file, outcome.replacements);
      const data = Buffer.from(content, 'utf8');
      await writeFileClearly(context, target.real, shown, data, false);
      await recordWritten(context, [target.requested, target.real]);

      const before = outcome.replacements.reduce((sum, r) => sum + countLines(file.view.slice(r.start, r.end)), 0);
      const after = outcome.replacements.reduce((sum, r) => sum + countLines(r.text), 0);
      const landed = landedLines(outcome.replacements, view);
      const count = outcome.replacements.length;
      const at =
        landed
          .slice(0, MAX_LISTED_MATCHES)
          .map((l) => l.first)
          .join(', ') + (count > MAX_LISTED_MATCHES ? ', …' : '');
      const lines = [
        `edited ${shown}: ${plural(count, 'replacement')} (${STAGE_LABEL[outcome.stage]}) at line${count === 1 ? '' : 's'} ${at}; ${plural(before, 'line')} ` +
          `replaced by ${after}`,
      ];
      if (count === 1) {
        const { first, last } = landed[0]!;
        const shownLast = Math.min(last, first + MAX_RESULT_LINES - 1);
        lines.push(`Lines ${first}-${shownLast} now read:`, numberedLines(view.split('\n').slice(first - 1, shownLast), first));
        if (shownLast < last) lines.push(`… (${last - shownLast} more changed lines)`);
      }
      return success(lines.join('\n'), {
        path: target.real,
        stage: outcome.stage,
        replacements: count,
        lines: landed.slice(0, MAX_LISTED_MATCHES).map((l) => l.first),
        linesBefore: before,
        linesAfter: after,
        bytes: data.length,
      });
    },
  });
}
