import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The test tiers (vitest.config.ts turns them into vitest projects):
 *
 * - `unit`: nothing started but the code under test (and the child processes it starts itself,
 *   such as bash under bubblewrap): no database server, no browser, no built CLI, no sshd or
 *   ClickHouse. `npm run test:unit` runs it.
 * - `integration`: files that run the built CLI (dist/), drive it on a pseudo-terminal, start
 *   sshd or a browser.
 * - `database`: files that need the PostgreSQL and MariaDB servers (and ClickHouse where
 *   installed) that test/support/database-servers.global.ts starts; only this project has that
 *   globalSetup, so a run without such files starts no server.
 *
 * Each file is classified by what it uses, so a new or moved file lands in the right tier without
 * a list to keep: the helpers it imports from test/support (by name where a module also exports
 * harmless things, such as REPO_ROOT beside runQuarry), what its text names (the servers'
 * QUARRY_TEST_*_URL variables, dist/, a browser), and the same for the test-local helper modules it
 * imports, followed through. A file the classifier misses fails loudly: in the unit tier
 * test/support/unit-tier.setup.ts makes starting a server, the built CLI or a browser throw.
 */
export type Tier = 'unit' | 'integration' | 'database';

export const TIERS: readonly Tier[] = ['unit', 'integration', 'database'];

const RANK: Record<Tier, number> = { unit: 0, integration: 1, database: 2 };

/** Helper modules that start something: importing any of `names` ('*': anything) puts a file in `tier`. */
const STARTERS: Record<string, { tier: Tier; names: readonly string[] | '*' }> = {
  'test/support/cli.ts': { tier: 'integration', names: ['runQuarry', 'CLI_PATH'] },
  'test/support/agent-cli.ts': { tier: 'integration', names: ['runCli', 'spawnCli', 'CLI_PATH'] },
  'test/support/pty.ts': { tier: 'integration', names: '*' },
  'test/support/sshd.ts': { tier: 'integration', names: '*' },
  'test/support/servers.ts': { tier: 'database', names: '*' },
  'test/support/clickhouse.ts': { tier: 'database', names: '*' },
  'test/support/database-servers.global.ts': { tier: 'database', names: '*' },
  // Its other exports (makeRunner, configsFor, requireEnv, ...) serve SQLite and DuckDB tests too.
  'test/tools/database/helpers.ts': { tier: 'database', names: ['freshPostgresDatabase'] },
  // The classifier itself names everything it looks for.
  'test/support/tiers.ts': { tier: 'unit', names: [] },
};

/** What a file's own text can say about its needs. */
const TEXT_RULES: readonly { tier: Tier; pattern: RegExp; why: string }[] = [
  { tier: 'database', pattern: /QUARRY_TEST_(?:PG|MYSQL|MARIADB|CLICKHOUSE)_\w*URL/, why: 'reads a test database server URL' },
  { tier: 'integration', pattern: /\bdist\/|ROOT,\s*['"]dist['"]|\bCLI_PATH\b/, why: 'uses the build (dist/)' },
  { tier: 'integration', pattern: /\bscripts\/|ROOT,\s*['"]scripts['"]/, why: 'runs a repository script (they load the build)' },
  { tier: 'integration', pattern: /playwright|chromium/i, why: 'drives a browser' },
  { tier: 'integration', pattern: /demo\.mjs|['"]npm['"]/, why: 'runs npm or the demo script (the built CLI)' },
];

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(?<type>type\s+)?(?<clause>[^'";]*?)\s*from\s*['"](?<from>\.{1,2}\/[^'"]+)['"]|(?:^|\n)\s*import\s*['"](?<bare>\.{1,2}\/[^'"]+)['"]|import\(\s*['"](?<dynamic>\.{1,2}\/[^'"]+)['"]\s*\)/g;

export interface Classification {
  tier: Tier;
  /** Why the file is not `unit` (empty for unit files): the first reason found at the highest tier. */
  reason: string;
}

function resolveImport(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base, `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

function importedNames(clause: string): string[] | '*' {
  const braces = /\{([^}]*)\}/.exec(clause);
  const names = braces
    ? braces[1]!
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== '' && !part.startsWith('type '))
        .map((part) => part.split(/\s+as\s+/)[0]!.trim())
    : [];
  // A default or namespace import (import x from, import * as x from) may reach anything.
  const outside = clause
    .replace(/\{[^}]*\}/, '')
    .replace(/,/g, '')
    .trim();
  return outside !== '' ? '*' : names;
}

/** Classifies one test (or helper) file; `root` is the repository root. */
export function classifyFile(file: string, root: string, seen: Map<string, Classification> = new Map()): Classification {
  const known = seen.get(file);
  if (known) return known;
  let result: Classification = { tier: 'unit', reason: '' };
  seen.set(file, result);
  const raise = (tier: Tier, reason: string) => {
    if (RANK[tier] > RANK[result.tier]) result = { tier, reason };
  };
  const text = readFileSync(file, 'utf8');
  const name = relative(root, file);
  // Comments often name what a file does not do ("the build parses ... ahead of time").
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  for (const rule of TEXT_RULES) if (rule.pattern.test(code)) raise(rule.tier, `${name} ${rule.why}`);
  for (const match of text.matchAll(IMPORT)) {
    const groups = match.groups!;
    if (groups.type) continue; // import type: gone at run time
    const specifier = groups.from ?? groups.bare ?? groups.dynamic!;
    const target = resolveImport(file, specifier);
    if (!target) continue;
    const targetName = relative(root, target).split('\\').join('/');
    if (targetName.startsWith('src/')) continue; // the code under test
    const starter = STARTERS[targetName];
    if (starter) {
      const names = groups.from ? importedNames(groups.clause ?? '') : '*';
      const hit = names === '*' || starter.names === '*' ? true : names.some((imported) => starter.names.includes(imported));
      if (hit) raise(starter.tier, `${name} imports ${names === '*' ? 'all of' : names.join(', ')} from ${targetName}`);
      continue;
    }
    if (targetName.startsWith('test/')) {
      const inner = classifyFile(target, root, seen);
      if (inner.tier !== 'unit') raise(inner.tier, inner.reason);
    }
  }
  seen.set(file, result);
  return result;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'node_modules' || entry === '__snapshots__' ? [] : testFiles(path);
    return entry.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every test file under test/ (vitest's include pattern test/**\/*.test.ts), by tier, as paths relative to `root`. */
export function classifyTestFiles(root: string): Record<Tier, string[]> {
  const byTier: Record<Tier, string[]> = { unit: [], integration: [], database: [] };
  const seen = new Map<string, Classification>();
  for (const file of testFiles(join(root, 'test')).sort()) {
    byTier[classifyFile(file, root, seen).tier].push(relative(root, file).split('\\').join('/'));
  }
  return byTier;
}
