/** Exit codes shared by every command (README "Running the agent"). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_CANCELLED = 130;

/** A mistake in how quarry was called or configured: reported in one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The exit code of a finished run, from its status (README "Running the agent", exit codes). */
export function exitCodeFor(status: string): number {
  if (status === 'completed') return EXIT_OK;
  if (status === 'cancelled') return EXIT_CANCELLED;
  return EXIT_FAILED;
}
