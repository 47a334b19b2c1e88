import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadProfile } from '../../src/profiles/load.js';
import { parseProfile } from '../../src/profiles/schema.js';
import { REPO_ROOT } from '../support/cli.js';

/**
 * The build parses the built-in profiles ahead of time (dist/profiles/builtin.json, see
 * scripts/postbuild.mjs); src/profiles/load.ts uses an entry only for exactly the text it parsed.
 */
describe('built-in profiles parsed at build time', () => {
  const built = JSON.parse(readFileSync(join(REPO_ROOT, 'dist', 'profiles', 'builtin.json'), 'utf8')) as Record<string, { text: string; parsed: unknown }>;
  const files = readdirSync(join(REPO_ROOT, 'profiles'))
    .filter((name) => name.endsWith('.yaml'))
    .sort();

  it("hold every profile file, its text as on disk and the YAML parser's own result", () => {
    expect(Object.keys(built).sort()).toEqual(files);
    for (const name of files) {
      const text = readFileSync(join(REPO_ROOT, 'profiles', name), 'utf8');
      expect(built[name]!.text).toBe(text);
      expect(built[name]!.parsed).toEqual(parse(text));
    }
  });

  it('give the same profiles as parsing the YAML, each a fresh object', () => {
    for (const name of files) {
      const base = name.replace(/\.yaml$/, '');
      const path = join(REPO_ROOT, 'profiles', name);
      const fromYaml = { ...parseProfile(parse(readFileSync(path, 'utf8')), path, base), source: 'built-in' };
      const loaded = loadProfile(base);
      expect(loaded).toEqual(fromYaml);
      expect(loadProfile(base)).not.toBe(loaded);
    }
  });
});
