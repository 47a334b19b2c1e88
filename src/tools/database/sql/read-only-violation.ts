/** A statement refused in read-only mode (by the statement check, statement-check.ts, or an engine's own check). */
export class ReadOnlyViolation extends Error {
  override name = 'ReadOnlyViolation';
}
