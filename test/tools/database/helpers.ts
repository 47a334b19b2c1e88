import pg from 'pg';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { loadDatabaseConfigs } from '../../../src/config/databases.js';
import { closeAllDatabaseConnections } from '../../../src/tools/database/connections.js';
import type { DatabaseConfig } from '../../../src/tools/database/types.js';
import type { ToolCallResult } from '../../../src/tools/core/registry.js';
import { makeToolContext } from '../../support/context.js';

afterAll(async () => {
  await closeAllDatabaseConnections();
});

export function configsFor(dbFlags: string[], cwd: string): DatabaseConfig[] {
  return loadDatabaseConfigs({ dbFlags, env: {}, cwd });
}

/** Runs one database tool call through the real registry, as `quarry tool` and the agent do. */
export function makeRunner(databases: DatabaseConfig[], workingDir: string, profileName = 'readonly') {
  const profile = loadProfile(profileName);
  const registry = buildToolRegistry(profile, { databases });
  return {
    registry,
    run: (
      tool: string,
      args: Record<string, unknown>,
      signal?: AbortSignal,
      onProgress?: (progress: { rows: number; bytes: number }) => void,
    ): Promise<ToolCallResult> =>
      registry.run(tool, args, { ...makeToolContext({ workingDir, ...(signal ? { signal } : {}) }), ...(onProgress ? { onProgress } : {}) }),
  };
}

/** The cells of a tool's table output, row by row, without the header row. */
export function tableCells(output: string): string[][] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('│ '))
    .slice(1)
    .map((line) =>
      line
        .split('│')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** A fingerprint of a directory: every file's name and bytes (SQLite effects, export leftovers). */
export function directoryFingerprint(dir: string): string {
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    hash.update(name);
    hash.update(readFileSync(join(dir, name)));
  }
  return hash.digest('hex');
}

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value)
    throw new Error(`${name} is not set: the database servers were not started (run the database tests through vitest with the repo's vitest.config.ts)`);
  return value;
}

/**
 * A PostgreSQL database of the test's own on the suite's server, recreated empty and owned by the
 * test user, so that what a test creates (say 20,000 tables) never shows in other files' listings.
 * Returns an open admin client on it and the test user's URL for it.
 */
export async function freshPostgresDatabase(name: string): Promise<{ admin: pg.Client; url: string }> {
  const adminUrl = requireEnv('QUARRY_TEST_PG_ADMIN_URL');
  const setup = new pg.Client({ connectionString: adminUrl });
  await setup.connect();
  try {
    await setup.query(`DROP DATABASE IF EXISTS ${name}`);
    await setup.query(`CREATE DATABASE ${name} OWNER quarry_test`);
  } finally {
    await setup.end();
  }
  const onDatabase = (base: string) => {
    const url = new URL(base);
    url.pathname = `/${name}`;
    return url.toString();
  };
  const admin = new pg.Client({ connectionString: onDatabase(adminUrl) });
  await admin.connect();
  return { admin, url: onDatabase(requireEnv('QUARRY_TEST_PG_URL')) };
}
