import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { packageRoot, quarryHome } from '../config/home.js';
import { parseYamlDocument } from '../config/yaml.js';
import { ProfileError } from '../errors.js';
import { parseProfile, type Profile } from './schema.js';

export const DEFAULT_PROFILE = 'readonly';
export const BUILTIN_PROFILE_NAMES = ['readonly', 'developer', 'eval', 'daytona'] as const;

function builtinDir(): string {
  return join(packageRoot(), 'profiles');
}

function userDir(): string {
  return join(quarryHome(), 'profiles');
}

/** The build's parse of the built-in profiles (scripts/postbuild.mjs), by file name, with the text it parsed; empty when absent. */
let prebuilt: Record<string, { text: string; parsed: unknown }> | undefined;

function prebuiltParse(path: string, text: string): unknown {
  if (dirname(path) !== builtinDir()) return undefined;
  if (prebuilt === undefined) {
    try {
      prebuilt = JSON.parse(readFileSync(join(packageRoot(), 'dist', 'profiles', 'builtin.json'), 'utf8')) as typeof prebuilt;
    } catch {
      prebuilt = {};
    }
  }
  const entry = prebuilt?.[basename(path)];
  // Only for exactly the text the build parsed: an edited file is parsed anew.
  return entry && entry.text === text ? structuredClone(entry.parsed) : undefined;
}

function readProfileFile(path: string, fallbackName: string): Profile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ProfileError(`cannot read profile ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const raw: unknown = prebuiltParse(path, text);
  if (raw !== undefined) return parseProfile(raw, path, fallbackName);
  return parseProfile(parseYamlDocument(text, path, ProfileError), path, fallbackName);
}

function looksLikePath(nameOrPath: string): boolean {
  return nameOrPath.includes('/') || nameOrPath.includes('\\') || /\.ya?ml$/i.test(nameOrPath);
}

function profileFilesIn(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir)) {
    const ext = extname(entry).toLowerCase();
    if (ext === '.yaml' || ext === '.yml') found.set(basename(entry, extname(entry)), join(dir, entry));
  }
  return found;
}

/**
 * Loads a profile by built-in name, user profile name (`$QUARRY_HOME/profiles/NAME.yaml`,
 * which may not shadow a built-in) or file path (relative to `cwd`).
 */
export function loadProfile(nameOrPath: string = DEFAULT_PROFILE, cwd: string = process.cwd()): Profile {
  return resolveProfile(nameOrPath, cwd).profile;
}

/**
 * loadProfile, plus `ref`: what loads the same profile again from anywhere (the built-in's
 * name, else the file's absolute path), which sessions store to resume under it.
 */
export function resolveProfile(nameOrPath: string = DEFAULT_PROFILE, cwd: string = process.cwd()): { profile: Profile; ref: string } {
  if (looksLikePath(nameOrPath)) {
    const path = resolve(cwd, nameOrPath);
    if (!existsSync(path)) throw new ProfileError(`profile file not found: ${path}`);
    return { profile: readProfileFile(path, basename(path, extname(path))), ref: path };
  }
  const builtin = profileFilesIn(builtinDir()).get(nameOrPath);
  if (builtin) return { profile: { ...readProfileFile(builtin, nameOrPath), source: `built-in` }, ref: nameOrPath };
  const user = profileFilesIn(userDir()).get(nameOrPath);
  if (user) return { profile: readProfileFile(user, nameOrPath), ref: resolve(user) };
  const known = listProfileNames();
  throw new ProfileError(`unknown profile "${nameOrPath}"; available: ${known.join(', ')} (or pass the path of a YAML file)`);
}

/** Built-in names first, then user profiles (a user file named like a built-in is ignored). */
export function listProfileNames(): string[] {
  const builtins = [...profileFilesIn(builtinDir()).keys()];
  const users = [...profileFilesIn(userDir()).keys()].filter((name) => !builtins.includes(name));
  return [
    ...BUILTIN_PROFILE_NAMES.filter((name) => builtins.includes(name)),
    ...builtins.filter((n) => !(BUILTIN_PROFILE_NAMES as readonly string[]).includes(n)),
    ...users.sort(),
  ];
}
