import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot } from '../../config/home.js';
import { ToolError } from './types.js';

/**
 * Packages quarry loads only on first use and installs as optional dependencies
 * (docs/guide/install.md): a missing one is one line naming the package and the command that installs it.
 * Node looks for a package in every node_modules folder above quarry's own, so `npm install -g
 * PACKAGE` into the prefix quarry was installed to makes it loadable.
 */
export const OPTIONAL_PACKAGES: Record<string, string> = {
  pg: 'PostgreSQL',
  'pg-cursor': 'PostgreSQL',
  mysql2: 'MySQL and MariaDB',
  oracledb: 'Oracle',
  'vertica-nodejs': 'Vertica',
  ssh2: 'SSH tunnels',
  '@clickhouse/client': 'ClickHouse',
  '@duckdb/node-api': 'DuckDB and data files',
  vega: 'charts',
  'vega-lite': 'charts',
  '@resvg/resvg-js': 'charts',
};

/** The version range package.json asks for (empty when it cannot be read). */
function wantedRange(name: string): string {
  try {
    const manifest = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    return manifest.optionalDependencies?.[name] ?? manifest.dependencies?.[name] ?? '';
  } catch {
    return '';
  }
}

/** The one-line message for a missing optional package. */
export function missingPackageMessage(name: string): string {
  const range = wantedRange(name);
  const spec = range ? `${name}@${range.replace(/^[\^~]/, '^')}` : name;
  const purpose = OPTIONAL_PACKAGES[name] ?? 'this feature';
  return `${purpose} need${purpose.endsWith('s') ? '' : 's'} the optional package ${name}, which is not installed; install it with: npm install -g ${spec} (or npm install ${spec} beside a local quarry)`;
}

/** Which of the packages a failed import did not find (Node: "Cannot find module 'pg'", "Cannot find package 'vega'"). */
function missingOne(error: unknown, names: readonly string[]): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  const message = error instanceof Error ? error.message : '';
  return names.find((name) => message.includes(`'${name}'`) || message.includes(`'${name}/`));
}

/** Imports what needs optional packages; one of them missing becomes the one-line ToolError above. */
export async function importOptional<T>(names: readonly string[], load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = missingOne(error, names);
    if (missing) throw new ToolError(missingPackageMessage(missing), 'missing_package');
    throw error;
  }
}

/** Whether each optional package can be loaded from here, with its version (`quarry db check`). */
export function optionalPackageVersions(): { name: string; purpose: string; version: string | null }[] {
  return Object.entries(OPTIONAL_PACKAGES).map(([name, purpose]) => {
    // Node's own lookup: node_modules/NAME in quarry's folder and every folder above it.
    let version: string | null = null;
    for (let dir = packageRoot(); version === null; dir = dirname(dir)) {
      const manifest = join(dir, 'node_modules', name, 'package.json');
      if (existsSync(manifest)) {
        try {
          version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version ?? '?';
        } catch {
          version = '?';
        }
      }
      if (dirname(dir) === dir) break;
    }
    return { name, purpose, version };
  });
}
