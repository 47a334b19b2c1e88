/** Exit codes shared by every command (docs/guide/running.md, exit codes). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_CANCELLED = 130;

/** A mistake in how quarry was called or configured: reported in one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A mistake in a configuration file, flag or variable (config.yaml, --config, --db, --databases, SQLITE_DB ...): a usage error. */
export class ConfigError extends UsageError {
  override name = 'ConfigError';
}

/** A profile that cannot be found or does not pass its schema (docs/guide/profiles.md): a usage error. */
export class ProfileError extends UsageError {
  override name = 'ProfileError';
}

/** The exit code of a finished run, from its status (docs/guide/running.md, exit codes). */
export function exitCodeFor(status: string): number {
  if (status === 'completed') return EXIT_OK;
  if (status === 'cancelled') return EXIT_CANCELLED;
  return EXIT_FAILED;
}

/** The exit code of an error that stopped a command: every kind of usage error is 2, anything else 1. */
export function exitCodeForError(error: unknown): number {
  return error instanceof UsageError ? EXIT_USAGE : EXIT_FAILED;
}
