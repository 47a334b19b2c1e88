import type { FileSystemAdapter } from 'tinyglobby';
import type { GlobOptions, GlobResult } from './types.js';

/**
 * The one glob matcher of every backend (tinyglobby, loaded lazily), so that a pattern means
 * the same locally and in a sandbox. A remote backend passes `fs`: a view of a listing it made.
 */
export async function globFiles(pattern: string, options: GlobOptions, fs?: FileSystemAdapter): Promise<GlobResult> {
  const { glob } = await import('tinyglobby');
  const paths = await glob(pattern, {
    cwd: options.cwd,
    dot: options.includeHidden,
    onlyFiles: true,
    followSymbolicLinks: false,
    ignore: options.skipDirs.map((dir) => `**/${dir}/**`),
    expandDirectories: false,
    ...(fs ? { fs } : {}),
  });
  paths.sort();
  return { paths: paths.slice(0, options.limit), truncated: paths.length > options.limit, total: paths.length };
}
