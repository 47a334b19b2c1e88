import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { isInside } from './paths.js';

/**
 * Folders whose text later sessions trust as the user's own: the knowledge folder given with
 * `--knowledge DIR` or `knowledge:` in config.yaml, wherever it is (a project's `.quarry/knowledge/`
 * is covered by the rule on `.quarry` directories). A model steered by data it read must not launder
 * that data into them, so no tool writes inside one (src/tools/core/write-policy.ts; docs/security.md).
 * The user's own commands (`quarry knowledge add`, `/verify`) write there without the tools.
 */
const trusted = new Set<string>();

/** Marks `dir` (as given and as resolved through links) as a folder no tool writes in, for this process. */
export function trustFolder(dir: string): void {
  const absolute = resolve(dir);
  trusted.add(absolute);
  try {
    trusted.add(realpathSync(absolute));
  } catch {
    // A folder that does not exist yet is kept as written.
  }
}

/** Why a write to `path` is refused when it lies in a trusted folder, or null. */
export function trustedFolderReason(path: string): string | null {
  for (const dir of trusted) {
    if (isInside(dir, path)) return `${dir} is the knowledge folder (later sessions read it as the team's own text; edit it yourself)`;
  }
  return null;
}
