import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A per-run TMPDIR removed at the end (first, so it is torn down last), then real
    // PostgreSQL and MariaDB for the database tests (started once, stopped at the end).
    globalSetup: ['test/support/temp-dir.global.ts', 'test/support/database-servers.global.ts'],
  },
});
