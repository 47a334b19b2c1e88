import { secretLocationOf, secretLocations, secretRefusal, treeHoldsSecrets } from '../../security/secret-files.js';
import { basename, dirname } from 'node:path';
import type { Backend, FileStat } from '../../backends/types.js';
import { displayPath, resolveToolPath } from './paths.js';
import { ToolError, type ToolContext } from './types.js';

const MAX_SUGGESTIONS = 5;

function editDistance(a: string, b: string): number {
  const previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = previous[0]!;
    previous[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = previous[j]!;
      previous[j] = Math.min(above + 1, previous[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return previous[b.length]!;
}

function stem(name: string): string {
  const dot = name.lastIndexOf('.');
  return (dot > 0 ? name.slice(0, dot) : name).toLowerCase();
}

/** How alike two file names are; lower is closer, null when not alike at all. */
function closeness(wanted: string, candidate: string): number | null {
  const a = wanted.toLowerCase();
  const b = candidate.toLowerCase();
  if (a === b) return 0;
  if (stem(wanted) === stem(candidate)) return 1;
  const distance = editDistance(a, b);
  if (distance <= Math.max(2, Math.floor(a.length / 4))) return 1 + distance;
  if (a.length >= 3 && (b.includes(stem(wanted)) || a.includes(stem(candidate)))) return 10;
  return null;
}

/**
 * For a path that does not exist: names in the same directory that look like what was meant
 * (another case, another extension, a typo). Empty when the directory cannot be read.
 */
export async function similarNames(backend: Backend, missingPath: string): Promise<string[]> {
  const wanted = basename(missingPath);
  let entries;
  try {
    entries = await backend.listDir(dirname(missingPath));
  } catch {
    return [];
  }
  return entries
    .map((entry) => ({ name: entry.type === 'directory' ? `${entry.name}/` : entry.name, score: closeness(wanted, entry.name) }))
    .filter((entry): entry is { name: string; score: number } => entry.score !== null)
    .sort((x, y) => x.score - y.score || x.name.localeCompare(y.name))
    .slice(0, MAX_SUGGESTIONS)
    .map((entry) => entry.name);
}

/** "no such file" message with suggestions, shared by the file tools. */
export async function describeMissingPath(backend: Backend, absolutePath: string, shownPath: string): Promise<string> {
  const parent = dirname(absolutePath);
  const parentStat = await backend.stat(parent);
  if (!parentStat) return `no such file or directory: ${shownPath} (its directory ${parent} does not exist either)`;
  const suggestions = await similarNames(backend, absolutePath);
  const hint = suggestions.length > 0 ? `; similar names in ${parent}: ${suggestions.join(', ')}` : `; use list on ${parent} to see what is there`;
  return `no such file or directory: ${shownPath}${hint}`;
}

export interface ExistingPath {
  /** Absolute path. */
  path: string;
  /** As shown to the model (relative to the working directory when inside it). */
  shown: string;
  /** stat, following symlinks. */
  stat: FileStat;
}

/** Resolves a tool's path argument and stats it; a missing path is a ToolError with suggestions. */
export async function resolveExistingPath(context: ToolContext, rawPath: string, options: { readsTree?: boolean } = {}): Promise<ExistingPath> {
  const { backend, workingDir } = context;
  const path = await resolveToolPath(backend, workingDir, rawPath);
  const shown = displayPath(workingDir, path);
  const stat = await backend.stat(path);
  if (!stat) throw new ToolError(await describeMissingPath(backend, path, shown), 'not_found');
  if (backend.name === 'local') await refuseSecrets(path, await backend.realpath(path).catch(() => path), shown, options.readsTree === true);
  return { path, shown, stat };
}

/** Credential files (src/security/secret-files.ts) are never read for the model, by their path or through a link. */
export async function refuseSecrets(path: string, real: string, shown: string, readsTree: boolean): Promise<void> {
  const locations = secretLocations();
  for (const candidate of new Set([path, real])) {
    const inside = secretLocationOf(candidate, locations);
    if (inside) throw new ToolError(secretRefusal(shown, inside), 'refused');
    const below = readsTree ? treeHoldsSecrets(candidate, locations) : null;
    if (below)
      throw new ToolError(
        `refused: searching ${shown} would read ${below.path}, which holds credentials quarry never shows to the model; search the directories below it instead`,
        'refused',
      );
  }
}
