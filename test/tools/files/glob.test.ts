import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { GLOB_DEFAULT_MAX_RESULTS, GLOB_MAX_RESULTS_LIMIT } from '../../../src/tools/files/glob.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

const registry = buildToolRegistry(loadProfile('readonly'));
let dir: string;

beforeEach(() => {
  dir = makeTempDir();
});

function put(relative: string): void {
  const path = join(dir, relative);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, 'x');
}

function glob(args: Record<string, unknown>) {
  return registry.run('glob', args, makeToolContext({ workingDir: dir }));
}

describe('glob', () => {
  it('lists matching files sorted, hidden ones included, skipped directories left out', async () => {
    for (const path of ['b.csv', 'a.csv', 'data/2024/jan.csv', 'data/notes.txt', '.cache/old.csv', 'a file: with-odd name.csv']) put(path);
    for (const skipped of ['.git', 'node_modules', '__pycache__', '.venv']) put(`${skipped}/x.csv`);
    put('data/node_modules/pkg/y.csv');
    const result = await glob({ pattern: '**/*.csv' });
    expect(result.ok).toBe(true);
    expect(result.output).toBe(['.cache/old.csv', 'a file: with-odd name.csv', 'a.csv', 'b.csv', 'data/2024/jan.csv', '[5 matching files]'].join('\n'));
    const top = await glob({ pattern: '*.csv' });
    expect(top.output).toBe(['a file: with-odd name.csv', 'a.csv', 'b.csv', '[3 matching files]'].join('\n'));
  });

  it('searches under path and shows paths relative to the working directory', async () => {
    put('data/2024/jan.csv');
    put('data/2024/feb.csv');
    put('other/x.csv');
    const result = await glob({ pattern: '**/*.csv', path: 'data' });
    expect(result.output).toBe('data/2024/feb.csv\ndata/2024/jan.csv\n[2 matching files]');
    const braces = await glob({ pattern: '{data,other}/**/*.csv' });
    expect(braces.metadata.count).toBe(3);
  });

  it(`returns at most ${GLOB_DEFAULT_MAX_RESULTS} paths by default and says how many matched`, async () => {
    for (let i = 0; i < 250; i++) put(`many/f${String(i).padStart(3, '0')}.txt`);
    const result = await glob({ pattern: 'many/*.txt' });
    const lines = result.output.split('\n');
    expect(lines).toHaveLength(GLOB_DEFAULT_MAX_RESULTS + 1);
    expect(lines[0]).toBe('many/f000.txt');
    expect(lines[99]).toBe('many/f099.txt');
    expect(lines[100]).toBe(
      `[showing the first 100 of 250 matching files; narrow the pattern or path, or raise max_results (at most ${GLOB_MAX_RESULTS_LIMIT})]`,
    );
    expect(result.metadata).toMatchObject({ count: 100, truncated: true, total: 250 });
    const ten = await glob({ pattern: 'many/*.txt', max_results: '10' });
    expect(ten.metadata).toMatchObject({ count: 10, truncated: true });
  });

  it('says when nothing matches and refuses absolute or upward patterns and missing directories', async () => {
    put('a.txt');
    expect((await glob({ pattern: '*.csv' })).output).toBe('no files match "*.csv" under .');
    expect((await glob({ pattern: '/etc/*.conf' })).output).toContain('give the directory in path and a relative pattern');
    expect((await glob({ pattern: '../*' })).output).toContain('goes up with ".."');
    const missing = await glob({ pattern: '*', path: 'nope' });
    expect(missing.ok).toBe(false);
    expect(missing.output).toMatch(/^no such file or directory: nope/);
    expect((await glob({ pattern: '*', path: 'a.txt' })).output).toContain('is not a directory');
  });
});
