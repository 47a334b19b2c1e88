import { chmodSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { LocalBackend } from '../../../src/backends/local.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { LIST_MAX_ENTRIES, modeString } from '../../../src/tools/files/list.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

const registry = buildToolRegistry(loadProfile('readonly'));
const TIME = new Date('2026-01-02T03:04:05Z');
let dir: string;

beforeEach(() => {
  dir = makeTempDir();
});

function put(relative: string, content = 'x', mode = 0o644): void {
  const path = join(dir, relative);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
  chmodSync(path, mode);
  utimesSync(path, TIME, TIME);
}

function directory(relative: string): void {
  mkdirSync(join(dir, relative), { recursive: true });
  chmodSync(join(dir, relative), 0o755);
  utimesSync(join(dir, relative), TIME, TIME);
}

function list(args: Record<string, unknown>) {
  return registry.run('list', args, makeToolContext({ workingDir: dir }));
}

const STAMP = '2026-01-02 03:04';

describe('list', () => {
  it('lists one level like ls -l: mode, size, UTC time, name, "/" for directories; hidden only on request', async () => {
    put('data.csv', 'a'.repeat(2048));
    put('run.sh', '#!/bin/sh\n', 0o755);
    put('.env', 'SECRET=1');
    directory('sub');
    const result = await list({ path: '.' });
    expect(result.ok).toBe(true);
    expect(result.output).toBe(
      [
        `-rw-r--r--    2.0 KB  ${STAMP}  data.csv`,
        `-rwxr-xr-x      10 B  ${STAMP}  run.sh`,
        `drwxr-xr-x         -  ${STAMP}  sub/`,
        '[3 entries shown (times UTC); 1 hidden entry not shown: set show_hidden=true to include them]',
      ].join('\n'),
    );
    const hidden = await list({ path: '.', show_hidden: true });
    expect(hidden.output.split('\n')[0]).toBe(`-rw-r--r--       8 B  ${STAMP}  .env`);
    expect(hidden.output.split('\n').at(-1)).toBe('[4 entries shown (times UTC)]');
  });

  it(`shows at most ${LIST_MAX_ENTRIES} entries and counts the rest`, async () => {
    for (let i = 0; i < 250; i++) put(`f${String(i).padStart(3, '0')}.txt`);
    const result = await list({ path: '.' });
    const lines = result.output.split('\n');
    expect(lines).toHaveLength(LIST_MAX_ENTRIES + 1);
    expect(lines[199]).toMatch(/ f199\.txt$/);
    expect(lines[200]).toBe(
      '[200 entries shown (times UTC); limit of 200 entries reached: 50 more not shown; list a subdirectory or use glob to find specific files]',
    );
    expect(result.metadata).toMatchObject({ entries: 200, notShown: 50, truncated: true });
  });

  it('draws a tree to max_depth; skipped directories shown but not expanded', async () => {
    put('a/b/c/d/deep.txt');
    put('a/top.txt');
    put('node_modules/pkg/index.js');
    put('.git/HEAD');
    put('z.txt');
    const result = await list({ path: '.', recursive: true, show_hidden: true });
    const names = result.output.split('\n').map((line) => line.replace(/^.{10} +\S+(?: [KMGT]?B)? {2}\d{4}-\d\d-\d\d \d\d:\d\d {2}/, ''));
    expect(names).toEqual([
      '.git/ [not expanded: skipped directory]',
      'a/',
      '  b/',
      '    c/ …',
      '  top.txt',
      'node_modules/ [not expanded: skipped directory]',
      'z.txt',
      '[7 entries shown (times UTC); 1 directory at depth 3 not expanded (marked …): list them or raise max_depth (at most 10)]',
    ]);
    const deeper = await list({ path: 'a', recursive: true, max_depth: 5 });
    expect(deeper.output).toContain('        deep.txt');
  });

  it(`spends the ${LIST_MAX_ENTRIES}-entry budget on upper levels first`, async () => {
    for (let d = 0; d < 5; d++) for (let f = 0; f < 60; f++) put(`d${d}/f${String(f).padStart(2, '0')}.txt`);
    put('top.txt');
    const result = await list({ path: '.', recursive: true });
    const lines = result.output.split('\n');
    expect(lines.filter((line) => / d\d\/( …)?$/.test(line))).toHaveLength(5);
    expect(lines.some((line) => line.endsWith(' top.txt'))).toBe(true);
    expect(lines).toHaveLength(LIST_MAX_ENTRIES + 1);
    expect(lines.at(-1)).toBe(
      '[200 entries shown (times UTC); limit of 200 entries reached: 46 more not shown, and the contents of 1 directory marked … were not listed; list a ' +
        'subdirectory or use glob to find specific files]',
    );
  });

  it('lists a single file, says when a directory is empty, and names similar paths when missing', async () => {
    put('report.csv', 'abc');
    directory('empty');
    put('empty/.keep');
    expect((await list({ path: 'report.csv' })).output).toBe(`-rw-r--r--       3 B  ${STAMP}  report.csv`);
    expect((await list({ path: 'empty' })).output).toBe('empty is empty apart from 1 hidden entry (show_hidden=true to see them)');
    const missing = await list({ path: 'reports.csv' });
    expect(missing.ok).toBe(false);
    expect(missing.output).toBe(`no such file or directory: reports.csv; similar names in ${dir}: report.csv`);
  });

  it('marks symlinks and does not follow them in a tree', async () => {
    directory('real');
    put('real/inside.txt');
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    const result = await list({ path: '.', recursive: true });
    const lines = result.output.split('\n');
    expect(lines.find((line) => line.endsWith(' link'))).toMatch(/^lrwxrwxrwx/);
    expect(lines.filter((line) => line.endsWith('inside.txt'))).toHaveLength(1);
  });

  it('writes special permission bits like ls', () => {
    expect(modeString({ type: 'directory', mode: 0o1777 })).toBe('drwxrwxrwt');
    expect(modeString({ type: 'file', mode: 0o4755 })).toBe('-rwsr-xr-x');
    expect(modeString({ type: 'file', mode: 0o2644 })).toBe('-rw-r-Sr--');
  });
});

/** The local backend, counting the entries it stats and the most names held at once by list. */
class CountingBackend extends LocalBackend {
  statted = 0;
  override statEntries(path: string, names: readonly string[]) {
    this.statted += names.length;
    return super.statEntries(path, names);
  }
}

describe('list on a big flat directory', () => {
  it('stats only the entries it shows, and says exactly how many more and how many hidden exist', async () => {
    const counts: number[] = [];
    for (const size of [1000, 10000]) {
      const big = makeTempDir();
      for (let i = 0; i < size; i++) writeFileSync(join(big, `f${String(size - i).padStart(6, '0')}`), '');
      writeFileSync(join(big, '.hidden'), '');
      const backend = new CountingBackend();
      const result = await registry.run('list', { path: '.' }, makeToolContext({ workingDir: big, backend }));
      const rows = result.output.split('\n');
      expect(rows).toHaveLength(LIST_MAX_ENTRIES + 1);
      // The first names in sorted order, whatever order the directory holds them in.
      expect(rows[0]).toMatch(/ {2}f000001$/);
      expect(rows[LIST_MAX_ENTRIES - 1]).toMatch(/ {2}f000200$/);
      expect(rows.at(-1)).toBe(
        `[${LIST_MAX_ENTRIES} entries shown (times UTC); limit of ${LIST_MAX_ENTRIES} entries reached: ${(size - LIST_MAX_ENTRIES).toLocaleString('en-US')} ` +
          `more not shown; list a subdirectory or use glob to find specific files; 1 hidden entry not shown: set show_hidden=true to include them]`,
      );
      counts.push(backend.statted);
    }
    // Bounded by what is shown: the same number of stat calls for 1,000 and 10,000 entries.
    expect(counts).toEqual([LIST_MAX_ENTRIES, LIST_MAX_ENTRIES]);
  });
});
