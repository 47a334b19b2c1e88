/** Distinct values the value index keeps per column (quarry db index --max-distinct); a module of its own so the CLI's help loads no database code. */
export const DEFAULT_MAX_DISTINCT = 10_000;
