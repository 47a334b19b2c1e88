import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { makeTempDir } from '../../support/context.js';

/**
 * The bubblewrap probe's memory (src/tools/bash/bubblewrap-probe.ts): a success is remembered in
 * $QUARRY_HOME/cache/bubblewrap.json and used only while its key matches; anything else probes
 * again. Each case is a fresh process, as each quarry command is.
 */
const PROBE = new URL('../../../dist/tools/bash/bubblewrap-probe.js', import.meta.url).pathname;
const SANDBOX = new URL('../../../dist/tools/bash/sandbox.js', import.meta.url).pathname;

interface Answer {
  path: string | null;
  reason: string;
  cached?: boolean;
}

function probe(home: string, env: NodeJS.ProcessEnv = {}): Answer {
  const script = `const { bubblewrapSupport } = await import(${JSON.stringify(SANDBOX)}); console.log(JSON.stringify(bubblewrapSupport()));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, QUARRY_NO_BWRAP: '', ...env, QUARRY_HOME: home },
    encoding: 'utf8',
  });
  return JSON.parse(output) as Answer;
}

const bwrapWorks = existsSync(PROBE) && spawnSync('bwrap', ['--ro-bind', '/', '/', '--unshare-all', '--', '/bin/true']).status === 0;

describe.skipIf(!bwrapWorks)('bubblewrap probe cache (bwrap works here)', () => {
  test('the first command probes and remembers; the next uses the memory; the same answer both times', () => {
    const home = makeTempDir();
    const first = probe(home);
    expect(first.path).toMatch(/\/bwrap$/);
    expect(first.cached).toBeUndefined();
    const file = join(home, 'cache', 'bubblewrap.json');
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { path: string; key: string };
    expect(stored.path).toBe(first.path);
    expect(JSON.parse(stored.key)).toMatchObject({ path: first.path, uid: process.getuid?.() });
    const second = probe(home);
    expect(second).toMatchObject({ path: first.path, reason: '', cached: true });
  });

  test('a key that no longer matches, or a path that is not where bwrap is looked for, means a new probe', () => {
    const home = makeTempDir();
    const first = probe(home);
    const file = join(home, 'cache', 'bubblewrap.json');
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { path: string; key: string };
    // Another kernel (as after an upgrade): probed again and remembered anew.
    writeFileSync(file, JSON.stringify({ path: stored.path, key: stored.key.replace(/"kernel":"[^"]*"/, '"kernel":"0.0.0-other"') }));
    const again = probe(home);
    expect(again.cached).toBeUndefined();
    expect(again.path).toBe(first.path);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(stored);
    // A file naming some other program as bwrap is never believed.
    const fake = join(home, 'fake-bwrap');
    writeFileSync(fake, '#!/bin/sh\nshift $#\nexec "$@"\n');
    chmodSync(fake, 0o755);
    writeFileSync(file, JSON.stringify({ path: fake, key: stored.key.replace(JSON.stringify(stored.path), JSON.stringify(fake)) }));
    const notFooled = probe(home);
    expect(notFooled.path).toBe(first.path);
    expect(notFooled.cached).toBeUndefined();
    // Garbage in the file: probed again, nothing thrown.
    writeFileSync(file, '{not json');
    expect(probe(home)).toMatchObject({ path: first.path, reason: '' });
  });

  test('QUARRY_NO_BWRAP=1 turns the OS layer off whatever the memory says, and a home that cannot be written only costs a probe', () => {
    const home = makeTempDir();
    probe(home);
    expect(probe(home, { QUARRY_NO_BWRAP: '1' })).toMatchObject({ path: null, reason: 'turned off by QUARRY_NO_BWRAP=1' });
    const file = join(home, 'not-a-dir');
    writeFileSync(file, 'x');
    const unwritable = probe(join(file, 'home'));
    expect(unwritable.path).toMatch(/\/bwrap$/);
    expect(unwritable.cached).toBeUndefined();
  });
});
