/** Exit codes shared by every command (docs/guide/running.md, exit codes). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_CANCELLED = 130;

/** What each exit code means, for docs/reference/exit-codes.md (scripts/gen-reference.mjs). */
export const EXIT_CODES: ReadonlyArray<{ code: number; name: string; meaning: string }> = [
  { code: EXIT_OK, name: 'EXIT_OK', meaning: 'The command did its work; a run completed.' },
  {
    code: EXIT_FAILED,
    name: 'EXIT_FAILED',
    meaning:
      'A run failed (a model or tool infrastructure error after retries, --max-turns reached, the same call repeated three times) or was refused (the model declined to answer); a command could not do its work; report --refresh found a step that failed.',
  },
  {
    code: EXIT_USAGE,
    name: 'EXIT_USAGE',
    meaning:
      'A usage error: a bad flag or argument, a config file, profile, knowledge file or eval suite that does not load, no model configured. One line on stderr says what to fix.',
  },
  {
    code: EXIT_CANCELLED,
    name: 'EXIT_CANCELLED',
    meaning: 'Cancelled: Ctrl+C, SIGTERM or quarry cancel ID; the session is saved and nothing is left running.',
  },
];

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
