/**
 * Execution accuracy: whether a predicted result equals the expected one (docs/guide/eval.md,
 * scoring rules). Column names are never compared, only values:
 * - set: BIRD's official rule, also used for Spider suites: the rows as sets (order and
 *   duplicates ignored), `set(predicted) == set(gold)`.
 * - multiset: the rows as a multiset (duplicates count, order does not); quarry YAML's default.
 * - ordered: the same rows in the same order (quarry YAML with `order_matters: true`).
 *
 * Values are compared the way Python compares BIRD's result tuples: 1 equals 1.0, true equals 1,
 * and a decimal the driver hands over as text ("12.50") equals the number 12.5. NULL equals only
 * NULL. With a tolerance, two numbers are equal when they differ by at most that much.
 */

export const COMPARE_RULES = ['set', 'multiset', 'ordered'] as const;
export type CompareRule = (typeof COMPARE_RULES)[number];

/** Text that is a plain decimal number (no leading zeros, which would make "007" equal 7). */
const DECIMAL_TEXT = /^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$/;

export type Canonical = null | number | string;

/** One value in comparable form: numbers as numbers, everything else as text. */
export function canonicalValue(value: unknown): Canonical {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : value;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : `#${value.toString()}`;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string') {
    if (DECIMAL_TEXT.test(value)) {
      const number = Number(value);
      if (Number.isFinite(number) && (Number.isSafeInteger(number) || !/^-?\d+$/.test(value))) return number;
      return `#${value}`;
    }
    return value;
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (Buffer.isBuffer(value)) return `0x${value.toString('hex')}`;
  return JSON.stringify(value);
}

function rowKey(row: readonly Canonical[]): string {
  // Numbers and text never collide: a number is written with a marker text cannot start a JSON string with.
  return JSON.stringify(row.map((value) => (typeof value === 'number' ? { n: Object.is(value, -0) ? 0 : value } : value)));
}

function valuesEqual(a: Canonical, b: Canonical, tolerance: number): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || Math.abs(a - b) <= tolerance;
  return a === b;
}

function rowsEqual(a: readonly Canonical[], b: readonly Canonical[], tolerance: number): boolean {
  return a.length === b.length && a.every((value, index) => valuesEqual(value, b[index]!, tolerance));
}

export interface Comparison {
  equal: boolean;
  /** Why not, in a few words (for the report). */
  reason?: string;
}

/** Above this many rows, tolerance matching of unordered rows compares sorted rows pairwise instead of matching each row. */
const GREEDY_MATCH_LIMIT = 5000;

export function compareResults(predicted: readonly unknown[][], expected: readonly unknown[][], rule: CompareRule, tolerance = 0): Comparison {
  const p = predicted.map((row) => row.map(canonicalValue));
  const e = expected.map((row) => row.map(canonicalValue));
  if (rule === 'ordered') {
    if (p.length !== e.length) return { equal: false, reason: `${p.length} rows, expected ${e.length}` };
    const at = p.findIndex((row, index) => !rowsEqual(row, e[index]!, tolerance));
    return at === -1 ? { equal: true } : { equal: false, reason: `row ${at + 1} differs` };
  }
  if (rule === 'set') {
    const pSet = new Map(p.map((row) => [rowKey(row), row]));
    const eSet = new Map(e.map((row) => [rowKey(row), row]));
    if (tolerance === 0) {
      if (pSet.size !== eSet.size) return { equal: false, reason: `${pSet.size} distinct rows, expected ${eSet.size}` };
      for (const key of eSet.keys()) if (!pSet.has(key)) return { equal: false, reason: 'a different set of rows' };
      return { equal: true };
    }
    return unorderedWithTolerance([...pSet.values()], [...eSet.values()], tolerance);
  }
  if (p.length !== e.length) return { equal: false, reason: `${p.length} rows, expected ${e.length}` };
  if (tolerance === 0) {
    const counts = new Map<string, number>();
    for (const row of e) counts.set(rowKey(row), (counts.get(rowKey(row)) ?? 0) + 1);
    for (const row of p) {
      const key = rowKey(row);
      const left = counts.get(key) ?? 0;
      if (left === 0) return { equal: false, reason: 'a different multiset of rows' };
      counts.set(key, left - 1);
    }
    return { equal: true };
  }
  return unorderedWithTolerance(p, e, tolerance);
}

function compareCanonical(a: readonly Canonical[], b: readonly Canonical[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    if (x === null) return -1;
    if (y === null) return 1;
    if (typeof x === 'number' && typeof y === 'number') return x - y;
    if (typeof x === 'number') return -1;
    if (typeof y === 'number') return 1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** Each expected row matched to one predicted row within the tolerance (same counts on both sides). */
function unorderedWithTolerance(p: Canonical[][], e: Canonical[][], tolerance: number): Comparison {
  if (p.length !== e.length) return { equal: false, reason: `${p.length} rows, expected ${e.length}` };
  if (p.length > GREEDY_MATCH_LIMIT) {
    const ps = [...p].sort(compareCanonical);
    const es = [...e].sort(compareCanonical);
    return ps.every((row, index) => rowsEqual(row, es[index]!, tolerance)) ? { equal: true } : { equal: false, reason: 'rows differ beyond the tolerance' };
  }
  const used = new Array<boolean>(p.length).fill(false);
  for (const row of e) {
    const match = p.findIndex((candidate, index) => !used[index] && rowsEqual(candidate, row, tolerance));
    if (match === -1) return { equal: false, reason: 'rows differ beyond the tolerance' };
    used[match] = true;
  }
  return { equal: true };
}

/** A result's identity for voting: the rows as a set, so attempts with equal results group together. */
export function resultSignature(rows: readonly unknown[][]): string {
  return [...new Set(rows.map((row) => rowKey(row.map(canonicalValue))))].sort().join('\n');
}
