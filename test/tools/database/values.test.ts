import { describe, expect, test } from 'vitest';
import { numberToText, valueToText } from '../../../src/tools/database/values.js';
import { seededRandom, testSeed } from '../../support/random.js';

describe('numberToText: the fast path for two-decimal values writes exactly what String() writes', () => {
  test('edge values', () => {
    const edges = [
      0,
      -0,
      0.01,
      -0.01,
      0.1,
      0.005,
      0.015,
      1.005,
      2.675,
      0.1 + 0.2,
      4.35,
      0.07,
      1.1,
      100,
      -100.5,
      9_999_999_999_999.99,
      99_999_999_999_999.99,
      1e13,
      1e13 + 0.01,
      2 ** 53,
      1e21,
      5e-324,
      Number.MAX_VALUE,
      Infinity,
      -Infinity,
      NaN,
    ];
    for (const value of edges) expect(numberToText(value), String(value)).toBe(String(value));
  });

  const seed = testSeed(20261122);
  test(`every cent from -2,000.00 to 2,000.00, and 600,000 seeded random values of every kind (seed ${seed})`, () => {
    const mismatches: string[] = [];
    const check = (value: number) => {
      const text = numberToText(value);
      if (text !== String(value)) mismatches.push(`${String(value)} written as ${text}`);
    };
    for (let cents = -200_000; cents <= 200_000; cents++) check(cents / 100);
    const random = seededRandom(seed);
    for (let i = 0; i < 100_000; i++) {
      const r = random();
      check(Math.round(r * 1e12) / 100); // money up to 10^10
      check(-Math.round(r * 1e16) / 100); // beyond the fast path's bound
      check(Math.round(r * 1e4) / 1000); // three decimals
      check(r * 1e6); // measurements
      check(Math.round(r * 1e6)); // integers
      check((Math.round(r * 1e5) * 1.37) / 100); // computed amounts
    }
    expect(mismatches.slice(0, 10)).toEqual([]);
  });

  test('valueToText uses it for numbers', () => {
    expect(valueToText(12.5)).toBe('12.5');
    expect(valueToText(-0.07)).toBe('-0.07');
    expect(valueToText(1 / 3)).toBe(String(1 / 3));
  });
});
