import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';

/**
 * src/ reads as layers (docs/development/architecture.md): imports go down the layers, and no module
 * imports, directly or through others, a module that imports it back. Static imports, re-exports and import() all count; type-only
 * imports do not (they vanish when compiled).
 */
const SRC = join(REPO_ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return (path.endsWith('.ts') || path.endsWith('.cts')) && !path.endsWith('.d.ts') ? [path] : [];
  });
}

const IMPORT = /(?:^import\s+(?!type\b)[^'"]*?from\s+|^export\s+(?!type\b)[^'"]*?from\s+|import\()['"](\.[^'"]+)['"]/gm;

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    graph.set(
      file,
      [...text.matchAll(IMPORT)].map((match) => resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts').replace(/\.cjs$/, '.cts'))),
    );
  }
  return graph;
}

/**
 * The layers of docs/development/architecture.md, top to bottom: a module may import from its own layer
 * and the ones below it, never from one above.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['cli.cts', 'cli/'],
  ['mcp/'],
  ['eval/', 'report/'],
  ['agent/'],
  ['model/'],
  ['profiles/'],
  ['tools/'],
  // The tool framework: no tool's folder below it.
  ['tools/core/'],
  // Security primitives (secret variables and files, /proc scrubbing, path containment): used by tools, report and cli.
  ['security/'],
  ['backends/'],
  ['config/'],
  ['errors.ts', 'node-crypto.ts'],
];

function layerOf(file: string): number {
  // A folder inside another row's folder (tools/core/ inside tools/) is a layer of its own: it decides first.
  const nested = LAYERS.findIndex((prefixes) => prefixes.some((prefix) => /\/.+\/$/.test(prefix) && relative(SRC, file).startsWith(prefix)));
  if (nested >= 0) return nested;
  const path = relative(SRC, file);
  const layer = LAYERS.findIndex((prefixes) => prefixes.some((prefix) => (prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix)));
  if (layer < 0) throw new Error(`src/${path} is in no layer of docs/development/architecture.md`);
  return layer;
}

/** Imports that go up the layers: "FROM -> TO". */
function upwardImports(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    for (const target of imports) {
      if (graph.has(target) && layerOf(target) < layerOf(file)) found.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  return found.sort();
}

/**
 * What a tool's folder shares with the other tools: a module in src/tools/A/ imports from
 * src/tools/B/ only these modules of B (src/tools/core/ is the framework, open to all). The chart
 * tool and the knowledge check run their SQL through run-query.ts, never through the database tool.
 */
const SHARED_WITH_OTHER_TOOLS: Readonly<Record<string, readonly string[]>> = {
  database: ['run-query.ts', 'csv.ts', 'values.ts', 'types.ts'],
};

/** The tool folder a module is in (src/tools/NAME/...), or null (the framework, or outside src/tools/). */
function toolFolder(file: string): { name: string; module: string } | null {
  const match = /^tools\/([^/]+)\/(.+)$/.exec(relative(SRC, file).split(sep).join('/'));
  return match && match[1] !== 'core' ? { name: match[1]!, module: match[2]! } : null;
}

/** Imports from one tool's folder into another's that the other does not share: "FROM -> TO". */
function crossToolImports(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    const from = toolFolder(file);
    if (!from) continue;
    for (const target of imports) {
      const to = toolFolder(target);
      if (!to || to.name === from.name || SHARED_WITH_OTHER_TOOLS[to.name]?.includes(to.module)) continue;
      found.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  return found.sort();
}

/** Strongly connected components of more than one module (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(relative(SRC, member));
    } while (member !== node);
    if (component.length > 1) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('the import graph of src/', () => {
  it('has no cycles', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(100);
    expect(cycles(graph)).toEqual([]);
  });

  it('goes down the layers of docs/development/architecture.md, never up', () => {
    const graph = importGraph();
    for (const file of graph.keys()) layerOf(file);
    expect(upwardImports(graph)).toEqual([]);
  });

  it("keeps the tools apart: one tool's folder imports another's only through what that folder shares", () => {
    expect(crossToolImports(importGraph())).toEqual([]);
  });

  it('finds a tool importing another tool (the check itself)', () => {
    const chart = join(SRC, 'tools', 'chart', 'data.ts');
    const databaseTool = join(SRC, 'tools', 'database', 'tool.ts');
    const runQuery = join(SRC, 'tools', 'database', 'run-query.ts');
    const core = join(SRC, 'tools', 'core', 'types.ts');
    expect(
      crossToolImports(
        new Map([
          [chart, [databaseTool, runQuery, core]],
          [databaseTool, [runQuery, core]],
        ]),
      ),
    ).toEqual(['tools/chart/data.ts -> tools/database/tool.ts']);
  });

  it('finds an upward import when there is one (the check itself)', () => {
    const agent = join(SRC, 'agent', 'loop.ts');
    const cli = join(SRC, 'cli', 'errors.ts');
    expect(
      upwardImports(
        new Map([
          [agent, [cli]],
          [cli, []],
        ]),
      ),
    ).toEqual(['agent/loop.ts -> cli/errors.ts']);
    const core = join(SRC, 'tools', 'core', 'registry.ts');
    const tool = join(SRC, 'tools', 'files', 'read.ts');
    expect(
      upwardImports(
        new Map([
          [core, [tool]],
          [tool, [core]],
        ]),
      ),
    ).toEqual(['tools/core/registry.ts -> tools/files/read.ts']);
  });

  it('finds a cycle when there is one (the check itself)', () => {
    const a = join(SRC, 'a.ts');
    const b = join(SRC, 'b.ts');
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts']]);
  });
});
