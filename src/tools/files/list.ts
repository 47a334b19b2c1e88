import { READ_ONLY_EFFECTS } from '../core/effects.js';
import { basename, join } from 'node:path';
import type { Backend, DirEntry, FileStat } from '../../backends/types.js';
import { countOf, formatCount } from '../core/long-lines.js';
import { resolveExistingPath } from '../core/existing-path.js';
import { formatBytes, SKIPPED_DIRECTORIES } from '../core/paths.js';
import { success } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';

/** Entries shown by one list call, all levels together. */
export const LIST_MAX_ENTRIES = 200;
export const LIST_DEFAULT_MAX_DEPTH = 3;
export const LIST_MAX_DEPTH_LIMIT = 10;

const TYPE_CHAR: Record<FileStat['type'], string> = { file: '-', directory: 'd', symlink: 'l', other: '?' };

/** `drwxr-xr-x`, as ls -l writes it (setuid, setgid and sticky bits included). */
export function modeString(stat: Pick<FileStat, 'type' | 'mode'>): string {
  const bit = (mask: number, char: string) => (stat.mode & mask ? char : '-');
  const special = (execMask: number, specialMask: number, set: string) => {
    const exec = stat.mode & execMask;
    if (!(stat.mode & specialMask)) return exec ? 'x' : '-';
    return exec ? set : set.toUpperCase();
  };
  return (
    TYPE_CHAR[stat.type] +
    bit(0o400, 'r') +
    bit(0o200, 'w') +
    special(0o100, 0o4000, 's') +
    bit(0o040, 'r') +
    bit(0o020, 'w') +
    special(0o010, 0o2000, 's') +
    bit(0o004, 'r') +
    bit(0o002, 'w') +
    special(0o001, 0o1000, 't')
  );
}

function row(entry: DirEntry, indent: number, mark = ''): string {
  const size = entry.type === 'directory' ? '-' : formatBytes(entry.size);
  const mtime = new Date(entry.mtimeMs).toISOString().slice(0, 16).replace('T', ' ');
  const name = entry.type === 'directory' ? `${entry.name}/` : entry.name;
  return `${modeString(entry)} ${size.padStart(9)}  ${mtime}  ${'  '.repeat(indent)}${name}${mark}`;
}

interface Listing {
  shown: DirEntry[];
  notShown: number;
  hidden: number;
}

const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The first `budget` names in sorted order, in memory bounded by the budget: names are kept in a
 * buffer that is sorted and cut back to the budget whenever it doubles.
 */
class FirstNames {
  private names: string[] = [];
  constructor(private readonly budget: number) {}
  add(name: string): void {
    this.names.push(name);
    if (this.names.length >= Math.max(2 * this.budget, 64)) this.names = this.sorted();
  }
  sorted(): string[] {
    return this.names.sort(byName).slice(0, this.budget);
  }
}

/** One directory's entries, sorted, hidden ones left out unless asked, at most `budget` of them. */
async function listEntries(backend: Backend, path: string, showHidden: boolean, budget: number): Promise<Listing> {
  if (!backend.listNames || !backend.statEntries) {
    const all = (await backend.listDir(path)).sort((a, b) => byName(a.name, b.name));
    const visible = showHidden ? all : all.filter((entry) => !entry.name.startsWith('.'));
    return { shown: visible.slice(0, budget), notShown: Math.max(visible.length - budget, 0), hidden: all.length - visible.length };
  }
  // Streamed: only the shown entries are stat-ed, so memory and time follow what is shown.
  const first = new FirstNames(budget);
  let visible = 0;
  let hidden = 0;
  for await (const name of backend.listNames(path)) {
    if (!showHidden && name.startsWith('.')) {
      hidden++;
      continue;
    }
    visible++;
    first.add(name);
  }
  const shown = await backend.statEntries(path, first.sorted());
  // An entry removed between the listing and its stat is no longer there: it is not counted.
  return { shown, notShown: Math.max(visible - budget, 0), hidden };
}

interface TreeNode {
  entry: DirEntry;
  children: TreeNode[];
  mark: string;
}

interface TreeTotals {
  shown: number;
  notShown: number;
  hidden: number;
  /** Directories whose contents were never listed because the entry budget ran out. */
  unlisted: number;
  atMaxDepth: number;
  skipped: number;
}

/**
 * Breadth first, so that the budget goes to the upper levels before the deep ones; rendered
 * depth first as a tree. Skipped directories and symlinks are shown but not descended into.
 */
async function buildTree(backend: Backend, root: string, args: ListArgs, maxDepth: number): Promise<{ nodes: TreeNode[]; totals: TreeTotals }> {
  const showHidden = args.show_hidden ?? false;
  const totals: TreeTotals = { shown: 0, notShown: 0, hidden: 0, unlisted: 0, atMaxDepth: 0, skipped: 0 };
  const take = (listing: Listing): TreeNode[] => {
    totals.shown += listing.shown.length;
    totals.notShown += listing.notShown;
    totals.hidden += listing.hidden;
    return listing.shown.map((entry) => ({ entry, children: [], mark: '' }));
  };
  const nodes = take(await listEntries(backend, root, showHidden, LIST_MAX_ENTRIES));
  const queue = nodes.map((node) => ({ node, path: join(root, node.entry.name), depth: 1 }));
  for (let next = queue.shift(); next; next = queue.shift()) {
    const { node, path, depth } = next;
    if (node.entry.type !== 'directory') continue;
    if ((SKIPPED_DIRECTORIES as readonly string[]).includes(node.entry.name)) {
      node.mark = ' [not expanded: skipped directory]';
      totals.skipped++;
    } else if (depth >= maxDepth) {
      node.mark = ' …';
      totals.atMaxDepth++;
    } else if (totals.shown >= LIST_MAX_ENTRIES) {
      node.mark = ' …';
      totals.unlisted++;
    } else {
      try {
        node.children = take(await listEntries(backend, path, showHidden, LIST_MAX_ENTRIES - totals.shown));
      } catch (error) {
        node.mark = ` [unreadable: ${(error as NodeJS.ErrnoException).code ?? 'error'}]`;
      }
      queue.push(...node.children.map((child) => ({ node: child, path: join(path, child.entry.name), depth: depth + 1 })));
    }
  }
  return { nodes, totals };
}

function renderTree(nodes: TreeNode[], indent = 0, out: string[] = []): string[] {
  for (const node of nodes) {
    out.push(row(node.entry, indent, node.mark));
    renderTree(node.children, indent + 1, out);
  }
  return out;
}

function footer(totals: Pick<TreeTotals, 'shown' | 'notShown' | 'hidden'> & Partial<TreeTotals>, maxDepth: number): string {
  const notes = [countOf(totals.shown, 'entry', 'entries') + ' shown (times UTC)'];
  if (totals.notShown > 0 || totals.unlisted) {
    const unlisted = totals.unlisted ? `, and the contents of ${countOf(totals.unlisted, 'directory', 'directories')} marked … were not listed` : '';
    notes.push(
      `limit of ${LIST_MAX_ENTRIES} entries reached: ${formatCount(totals.notShown)} more not shown${unlisted}; list a subdirectory or use glob to find ` +
        `specific files`,
    );
  }
  if (totals.atMaxDepth)
    notes.push(
      `${countOf(totals.atMaxDepth, 'directory', 'directories')} at depth ${maxDepth} not expanded (marked …): list them or raise max_depth (at most ` +
        `${LIST_MAX_DEPTH_LIMIT})`,
    );
  if (totals.hidden > 0) notes.push(`${countOf(totals.hidden, 'hidden entry', 'hidden entries')} not shown: set show_hidden=true to include them`);
  return `[${notes.join('; ')}]`;
}

function emptyDirectory(shown: string, hidden: number) {
  const apart = hidden ? ` apart from ${countOf(hidden, 'hidden entry', 'hidden entries')} (show_hidden=true to see them)` : '';
  return success(`${shown} is empty${apart}`, { entries: 0, hidden });
}

const LIST_PARAMETERS = toolParameters(
  {
    path: { type: 'string', description: 'Directory (or file) to list; "." for the working directory.' },
    show_hidden: { type: 'boolean', description: 'Include entries whose name starts with ".". Default false.' },
    recursive: { type: 'boolean', description: 'Show a tree of subdirectories. Default false.' },
    max_depth: {
      type: 'integer',
      minimum: 1,
      maximum: LIST_MAX_DEPTH_LIMIT,
      default: LIST_DEFAULT_MAX_DEPTH,
      description: `Levels shown with recursive. Default ${LIST_DEFAULT_MAX_DEPTH}.`,
    },
  },
  ['path'],
);
export type ListArgs = ArgsOf<typeof LIST_PARAMETERS>;

export const listTool = defineTool({
  name: 'list',
  description:
    'List a directory like ls -l: mode, size, modification time (UTC) and name (directories end with "/"). ' +
    `With recursive=true, a tree down to max_depth levels (default ${LIST_DEFAULT_MAX_DEPTH}, at most ${LIST_MAX_DEPTH_LIMIT}); ` +
    `${SKIPPED_DIRECTORIES.join(', ')} are shown but not expanded. At most ${LIST_MAX_ENTRIES} entries in total, upper levels first, ` +
    'with a count of what was left out. Hidden entries (names starting with ".") only with show_hidden=true.',
  parameters: LIST_PARAMETERS,
  readOnly: true,
  effects: READ_ONLY_EFFECTS,
  async run(args, context) {
    const { backend } = context;
    const { path, shown, stat } = await resolveExistingPath(context, args.path);
    if (stat.type !== 'directory') {
      const own = (await backend.lstat(path)) ?? stat;
      return success(row({ ...own, name: basename(path) }, 0), { entries: 1 });
    }
    const maxDepth = args.max_depth ?? LIST_DEFAULT_MAX_DEPTH;
    if (args.recursive) {
      const { nodes, totals } = await buildTree(backend, path, args, maxDepth);
      if (totals.shown === 0) return emptyDirectory(shown, totals.hidden);
      const metadata = { entries: totals.shown, notShown: totals.notShown, hidden: totals.hidden, truncated: totals.notShown > 0 || totals.unlisted > 0 };
      return success([...renderTree(nodes), footer(totals, maxDepth)].join('\n'), metadata);
    }
    const listing = await listEntries(backend, path, args.show_hidden ?? false, LIST_MAX_ENTRIES);
    if (listing.shown.length === 0) return emptyDirectory(shown, listing.hidden);
    const rows = listing.shown.map((entry) => row(entry, 0));
    const totals = { shown: listing.shown.length, notShown: listing.notShown, hidden: listing.hidden };
    return success([...rows, footer(totals, maxDepth)].join('\n'), {
      entries: totals.shown,
      notShown: totals.notShown,
      hidden: totals.hidden,
      truncated: totals.notShown > 0,
    });
  },
});
