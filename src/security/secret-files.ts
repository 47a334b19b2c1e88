import { readdirSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { quarryHome } from '../config/home.js';
import { isInside } from './paths.js';

/**
 * Files that hold credentials (docs/security.md): quarry's own config.yaml (MCP tokens,
 * database URLs) and the usual credential files of the tools a data team uses. The model's file
 * tools (read, read_excel, grep, glob, list) refuse them, and the restricted shell refuses to open
 * them or to search a tree that holds them; the sandbox of the restricted shell hides them as well
 * (src/tools/bash/sandbox.ts).
 */

/**
 * Relative to the home directory: a file, or (ending in /) a directory whose whole tree is secret.
 * Not ~/.kube/config nor ~/.docker/config.json: the restricted shell's kubectl and docker reads need
 * them, and their policy refuses the commands that would print their credentials.
 */
const IN_HOME = ['.pgpass', '.my.cnf', '.netrc', '.git-credentials', '.aws/', '.ssh/', '.config/gcloud/', '.pypirc'];

export interface SecretLocation {
  path: string;
  directory: boolean;
}

/** The secret locations of this machine, by their written path and (where it exists) their real one. */
export function secretLocations(env: NodeJS.ProcessEnv = process.env, home = homedir()): SecretLocation[] {
  const written: SecretLocation[] = [
    { path: join(quarryHome(env), 'config.yaml'), directory: false },
    ...IN_HOME.map((entry) => ({ path: join(home, entry), directory: entry.endsWith('/') })),
  ];
  const all = [...written];
  for (const location of written) {
    try {
      const real = realpathSync(location.path);
      if (real !== location.path) all.push({ path: real, directory: location.directory });
    } catch {
      // Absent: nothing to read there (a later file is caught by its written path).
    }
  }
  return all;
}

/** At most this many files below the secret directories are identified by inode (~/.ssh and the like hold a few). */
const MAX_IDENTIFIED_FILES = 1000;

function identity(path: string | Buffer): { key: string; links: number } | null {
  try {
    const stat = statSync(path);
    return stat.isFile() ? { key: `${stat.dev}:${stat.ino}`, links: stat.nlink } : null;
  } catch {
    return null;
  }
}

const identitiesOf = new WeakMap<readonly SecretLocation[], Map<string, SecretLocation>>();

/** The device and inode of every secret file, so that a hard link to one (which no path check sees) is known. */
function secretIdentities(locations: readonly SecretLocation[]): Map<string, SecretLocation> {
  const cached = identitiesOf.get(locations);
  if (cached) return cached;
  const found = new Map<string, SecretLocation>();
  for (const location of locations) {
    const files = location.directory ? filesBelow(location.path) : [location.path];
    for (const file of files) {
      const id = identity(file);
      if (id) found.set(id.key, location);
    }
  }
  identitiesOf.set(locations, found);
  return found;
}

function filesBelow(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true })
      .slice(0, MAX_IDENTIFIED_FILES)
      .map((name) => join(dir, String(name)));
  } catch {
    return [];
  }
}

/** The secret location a path is, lies inside, or is a hard link to; null when none. */
export function secretLocationOf(path: string, locations: readonly SecretLocation[] = secretLocations()): SecretLocation | null {
  const byPath = locations.find((location) => (location.directory ? isInside(location.path, path) : location.path === path));
  return byPath ?? secretLinkOf(path, locations);
}

/** The secret file that `path` (as a name of any bytes) is a hard link to; null when none. */
export function secretLinkOf(path: string | Buffer, locations: readonly SecretLocation[] = secretLocations()): SecretLocation | null {
  const id = identity(path);
  return id && id.links > 1 ? (secretIdentities(locations).get(id.key) ?? null) : null;
}

/**
 * Whether reading everything below `path` would read a secret location: one lies below it, or a
 * secret file has a hard link somewhere (its other names can be anywhere, so no tree is known free of it).
 */
export function treeHoldsSecrets(path: string, locations: readonly SecretLocation[] = secretLocations()): SecretLocation | null {
  return locations.find((location) => isInside(path, location.path)) ?? (isDirectory(path) ? hardLinkedSecret(locations) : null);
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function hardLinkedSecret(locations: readonly SecretLocation[]): SecretLocation | null {
  for (const location of locations) {
    const files = location.directory ? filesBelow(location.path) : [location.path];
    if (files.some((file) => (identity(file)?.links ?? 0) > 1)) return location;
  }
  return null;
}

export function secretRefusal(shown: string, location: SecretLocation): string {
  return `refused: ${shown} ${location.path === shown ? '' : `(${location.path}) `}holds credentials, which quarry never shows to the model; ask the user for what you need from it`;
}
