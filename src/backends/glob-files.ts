import { readdir } from 'node:fs';
import type { FileSystemAdapter } from 'tinyglobby';
import { escapeName, unescapeName } from './names.js';
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

/**
 * The local disk for tinyglobby with names as the tools show them (escapeName): fdir lists
 * directories as bytes, so names that are not UTF-8 are matched, shown and descended into
 * instead of becoming U+FFFD. `cwd` is the root as given, `cwdOnDisk` what fs opens for it.
 */
export function localNameAdapter(cwd: string, cwdOnDisk: string | Buffer): FileSystemAdapter {
  const root = typeof cwdOnDisk === 'string' ? Buffer.from(cwdOnDisk, 'utf8') : cwdOnDisk;
  const onDisk = (path: string): Buffer => {
    const below =
      path === cwd || path === '.' || path === '' ? '' : path.startsWith(`${cwd}/`) ? path.slice(cwd.length + 1) : path.startsWith('/') ? null : path;
    if (below === null) return unescapeName(path);
    return below === '' ? root : Buffer.concat([root, Buffer.from('/'), unescapeName(below.replace(/\/$/, ''))]);
  };
  const adapted = (path: string, _options: unknown, callback: (error: NodeJS.ErrnoException | null, entries: unknown[]) => void) => {
    readdir(onDisk(path), { withFileTypes: true, encoding: 'buffer' }, (error, entries) => {
      if (error) return callback(error, []);
      callback(
        null,
        entries.map((entry) => ({
          name: escapeName(entry.name as unknown as Buffer),
          isFile: () => entry.isFile(),
          isDirectory: () => entry.isDirectory(),
          isSymbolicLink: () => entry.isSymbolicLink(),
        })),
      );
    });
  };
  // fdir calls readdir(path, {withFileTypes: true}, callback) only; Node's overloaded type cannot be implemented directly.
  return { readdir: adapted as unknown as FileSystemAdapter['readdir'] };
}
