import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { classifyTestFiles, type Tier } from './test/support/tiers.js';

/**
 * Three projects, one per test tier (test/support/tiers.ts classifies each file by what it uses):
 * `npm run test:unit` runs `unit` alone; `npm test` runs all three. Only `database` has the
 * globalSetup that starts PostgreSQL and MariaDB (and ClickHouse), and vitest runs a project's
 * globalSetup only when the run holds one of its files, so `npx vitest run FILE` starts the
 * servers only for a file that needs them.
 */
const ROOT = fileURLToPath(new URL('.', import.meta.url));
const tiers = classifyTestFiles(ROOT);

// Each project first gets a per-run TMPDIR, removed after the last project's teardown (first, so
// it is torn down last: the servers' data directories live in it).
const TEMP_DIR = 'test/support/temp-dir.global.ts';

function project(name: Tier, extra: { setupFiles?: string[]; globalSetup?: string[] } = {}): TestProjectInlineConfiguration {
  return {
    // TypeScript in .cts files too (src/tools/database/drivers/sqlite-spawn.cts, which ES modules import).
    oxc: { include: /\.(m?ts|cts|[jt]sx)$/ },
    test: {
      name,
      // An empty include would fall back to vitest's default pattern.
      include: tiers[name].length > 0 ? tiers[name] : ['test/no-such-file.test.ts'],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: 'forks',
      setupFiles: extra.setupFiles ?? [],
      globalSetup: [TEMP_DIR, ...(extra.globalSetup ?? [])],
    },
  };
}

export default defineConfig({
  test: {
    projects: [
      project('unit', { setupFiles: ['test/support/unit-tier.setup.ts'] }),
      project('integration'),
      project('database', { globalSetup: ['test/support/database-servers.global.ts'] }),
    ],
  },
});
