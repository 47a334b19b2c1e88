import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';
import { seededRandom, testSeed } from '../support/random.js';

/**
 * Every randomised test is seeded and names its seed (README Tests): its random numbers come from
 * test/support/random.ts's seededRandom, seeded by testSeed (QUARRY_TEST_SEED replays a run), and
 * nothing in test/ draws from an unseeded source.
 */
const TEST_DIR = join(REPO_ROOT, 'test');
const THIS_FILE = 'test/core/seeds.test.ts';
const RANDOM_MODULE = 'test/support/random.ts';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path);
    return /\.(?:ts|mts|cts|mjs|cjs|js)$/.test(name) ? [path] : [];
  });
}

const UNSEEDED = /\bMath\.random\s*\(|\brandom(?:Int|Bytes|Fill|FillSync)\s*\(|\bcrypto\.getRandomValues\s*\(|\bfaker\b/;

describe('randomised tests', () => {
  const files = sources(TEST_DIR).map((path) => ({ name: relative(REPO_ROOT, path), text: readFileSync(path, 'utf8') }));

  it('draw from no unseeded source', () => {
    const offenders = files
      .filter(({ name }) => name !== THIS_FILE && name !== RANDOM_MODULE)
      .flatMap(({ name, text }) =>
        text
          .split('\n')
          .map((line, index) => ({ line, index }))
          .filter(({ line }) => UNSEEDED.test(line) && !/^\s*(?:\/\/|\*)/.test(line))
          .map(({ index }) => `${name}:${index + 1}`),
      );
    expect(offenders, 'use seededRandom(testSeed(N)) from test/support/random.ts').toEqual([]);
  });

  it('take their seed from testSeed, so QUARRY_TEST_SEED replays them', () => {
    const seeded = files.filter(({ name, text }) => name !== RANDOM_MODULE && name !== THIS_FILE && /\bseededRandom\s*\(/.test(text));
    expect(seeded.length).toBeGreaterThan(0);
    expect(seeded.filter(({ text }) => !/\btestSeed\s*\(/.test(text)).map(({ name }) => name)).toEqual([]);
  });
});

describe('testSeed', () => {
  const saved = process.env.QUARRY_TEST_SEED;
  afterEach(() => {
    if (saved === undefined) delete process.env.QUARRY_TEST_SEED;
    else process.env.QUARRY_TEST_SEED = saved;
  });

  it('is the fallback unless QUARRY_TEST_SEED names another, and the same seed gives the same numbers', () => {
    delete process.env.QUARRY_TEST_SEED;
    expect(testSeed(42)).toBe(42);
    process.env.QUARRY_TEST_SEED = '7';
    expect(testSeed(42)).toBe(7);
    const a = seededRandom(testSeed(42));
    const b = seededRandom(7);
    const drawn = Array.from({ length: 5 }, () => a());
    expect(drawn).toEqual(Array.from({ length: 5 }, () => b()));
    expect(new Set(drawn).size).toBe(5);
  });

  it('refuses a seed that is not a whole number in range, in one line', () => {
    for (const bad of ['x', '1.5', '-1', '4294967296']) {
      process.env.QUARRY_TEST_SEED = bad;
      expect(() => testSeed(1)).toThrow(new RegExp(`^QUARRY_TEST_SEED=${bad.replace('.', '\\.')}: expected a whole number from 0 to 4294967295$`));
    }
  });
});
