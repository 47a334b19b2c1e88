/** A seeded generator of doubles in [0, 1) (mulberry32), so a randomised test's failure reproduces. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The seed of a randomised test: QUARRY_TEST_SEED when set (to replay a failure), else `fallback`.
 * Name the seed in the test's (or describe block's) title, so every run prints it and a failure
 * says how to replay it: QUARRY_TEST_SEED=<seed> npx vitest run <file>.
 */
export function testSeed(fallback: number): number {
  const raw = process.env.QUARRY_TEST_SEED;
  if (raw === undefined || raw.trim() === '') return fallback >>> 0;
  const seed = Number(raw);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`QUARRY_TEST_SEED=${raw}: expected a whole number from 0 to 4294967295`);
  return seed;
}
