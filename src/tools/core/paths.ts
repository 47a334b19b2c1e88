import { isAbsolute, relative, resolve } from 'node:path';
import { escapeName } from '../../backends/names.js';
import type { Backend } from '../../backends/types.js';
import { ToolError } from './types.js';

/** Directories no file tool descends into. */
export const SKIPPED_DIRECTORIES = ['.git', 'node_modules', '__pycache__', '.venv'] as const;

/**
 * Resolves a tool's path argument: `~` and `~/…` against the backend's home directory,
 * anything else relative against the session's working directory.
 */
export async function resolveToolPath(backend: Backend, workingDir: string, path: string): Promise<string> {
  if (path.includes('\0')) throw new ToolError(`path contains a NUL byte: ${JSON.stringify(path)}`, 'bad_value');
  if (path.trim() === '') throw new ToolError('path is empty; give a file or directory path', 'bad_value');
  if (path === '~' || path.startsWith('~/')) return resolve(await backend.homeDir(), path.slice(2));
  return isAbsolute(path) ? resolve(path) : resolve(workingDir, path);
}

/** How a path is shown to the model: relative to the working directory when inside it. */
export function displayPath(workingDir: string, absolutePath: string): string {
  const rel = relative(workingDir, absolutePath);
  if (rel === '') return '.';
  if (rel.startsWith('..') || isAbsolute(rel)) return absolutePath;
  return rel;
}

/**
 * A path as a tool's message shows it: displayPath with control characters, bytes that are not
 * UTF-8 and backslashes escaped as every listing shows names (escapeName), so that a name with a
 * line break cannot pass for more lines of the message; tools accept the escaped form back.
 */
export function shownPath(workingDir: string, absolutePath: string): string {
  return escapeName(displayPath(workingDir, absolutePath));
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
