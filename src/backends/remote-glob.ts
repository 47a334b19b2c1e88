import { join, resolve } from 'node:path';
import type { FileSystemAdapter } from 'tinyglobby';
import { globFiles } from './glob-files.js';
import type { GlobOptions, GlobResult } from './types.js';

/**
 * Globbing for a remote backend with the same matcher as the local one (tinyglobby): the tree
 * is listed with one `find` in the sandbox (skipped directories pruned there), and tinyglobby
 * walks that listing through its file-system adapter instead of the local disk.
 */

type ListedType = 'file' | 'directory' | 'symlink' | 'other';
/** Directory (absolute) → its entries. */
export type Listing = Map<string, Array<{ name: string; type: ListedType }>>;

/** argv for the sandbox: every entry under root as "TYPE RELATIVE-PATH\0", skipped directories pruned. */
export function listingArgv(root: string, skipDirs: readonly string[]): string[] {
  const names = skipDirs.flatMap((dir, index) => (index === 0 ? ['-name', dir] : ['-o', '-name', dir]));
  const prune = names.length > 0 ? ['(', '-type', 'd', '(', ...names, ')', '-prune', ')', '-o'] : [];
  return ['find', root, '-mindepth', '1', ...prune, '-printf', '%y %P\\0'];
}

const TYPES: Record<string, ListedType> = { f: 'file', d: 'directory', l: 'symlink' };

export function parseListing(root: string, output: Buffer): Listing {
  const listing: Listing = new Map([[root, []]]);
  for (const record of output.toString('utf8').split('\0')) {
    if (record.length < 3) continue;
    const type = TYPES[record[0]!] ?? 'other';
    const relative = record.slice(2);
    const slash = relative.lastIndexOf('/');
    const parent = slash === -1 ? root : join(root, relative.slice(0, slash));
    const name = slash === -1 ? relative : relative.slice(slash + 1);
    const entries = listing.get(parent) ?? [];
    entries.push({ name, type });
    listing.set(parent, entries);
    if (type === 'directory' && !listing.has(join(root, relative))) listing.set(join(root, relative), []);
  }
  return listing;
}

/** The slice of Node's Dirent that fdir (tinyglobby's walker) looks at. */
function direntOf(entry: { name: string; type: ListedType }) {
  return {
    name: entry.name,
    isFile: () => entry.type === 'file',
    isDirectory: () => entry.type === 'directory',
    isSymbolicLink: () => entry.type === 'symlink',
  };
}

function listingAdapter(listing: Listing, cwd: string): FileSystemAdapter {
  const readdir = (path: string, _options: unknown, callback: (error: NodeJS.ErrnoException | null, entries: unknown[]) => void) => {
    const entries = listing.get(resolve(cwd, path));
    queueMicrotask(() => callback(null, (entries ?? []).map(direntOf)));
  };
  // fdir calls readdir(path, {withFileTypes: true}, callback) only; Node's overloaded type cannot be implemented directly.
  return { readdir: readdir as unknown as FileSystemAdapter['readdir'] };
}

export function globOverListing(pattern: string, options: GlobOptions, listing: Listing): Promise<GlobResult> {
  return globFiles(pattern, options, listingAdapter(listing, options.cwd));
}
