import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { createDaytonaBackend } from '../../../src/backends/daytona.js';
import { LocalBackend } from '../../../src/backends/local.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { fakeDaytona } from '../../support/fake-daytona.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/**
 * One tool implementation for every backend: the file tools must answer the same through the
 * daytona backend (over a fake sandbox that runs real commands on real files) as locally.
 */

const registry = buildToolRegistry(loadProfile('readonly'));
// Without ripgrep in the sandbox (as with a bare image), so grep takes its GNU grep path there.
const fake = fakeDaytona({ QUARRY_NO_RIPGREP: '1' });
const remote = createDaytonaBackend(fake.env, fake.factory);
let dir: string;

function put(relative: string, content: string | Buffer): void {
  const path = join(dir, relative);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

beforeAll(() => {
  dir = makeTempDir();
  put('src/app.ts', 'import x\nconst needle = 1;\nother\nNEEDLE again\n');
  put('docs/a b:c-d.txt', 'first\nsecond needle\nthird\n');
  put('.hidden/conf', 'needle hidden\n');
  put('win.txt', 'a\r\nneedle crlf\r\n');
  put('latin.txt', Buffer.from('caf\xe9 needle\n', 'latin1'));
  put('blob.bin', Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0, 1, 2]));
  put('node_modules/pkg/index.js', 'needle skipped\n');
  put('long.txt', Array.from({ length: 700 }, (_, i) => `row ${i + 1}`).join('\n'));
  // The same tree at the same path in the sandbox, whose files are its own.
  fake.mirror(dir);
});

afterAll(async () => {
  await remote.dispose();
});

const calls: Array<[string, Record<string, unknown>]> = [
  ['grep', { pattern: 'needle' }],
  ['grep', { pattern: 'needle', ignore_case: true, context_lines: 1, glob: '*.{ts,txt}' }],
  ['grep', { pattern: 'a(' }],
  ['read', { path: 'long.txt', start_line: 650 }],
  ['read', { path: 'win.txt' }],
  ['read', { path: 'latin.txt' }],
  ['read', { path: 'blob.bin' }],
  ['read', { path: 'src/ap.ts' }],
  ['glob', { pattern: '**/*.txt' }],
  ['list', { path: '.', recursive: true, show_hidden: true }],
];

describe('file tools on the daytona backend', () => {
  it.each(calls)('%s %j answers as it does locally', async (tool, args) => {
    const local = await registry.run(tool, args, makeToolContext({ workingDir: dir, backend: new LocalBackend() }));
    const sandboxed = await registry.run(tool, args, makeToolContext({ workingDir: dir, backend: remote }));
    if (tool === 'grep' && !local.ok) {
      // Engines word regex errors differently (ripgrep locally, GNU grep in the sandbox).
      expect(sandboxed.ok).toBe(false);
      expect(sandboxed.output).toMatch(/^grep failed \(grep\): .*parenthes/);
      return;
    }
    expect(sandboxed.output).toBe(local.output);
    expect(sandboxed.ok).toBe(local.ok);
    if (tool === 'grep') expect([local.metadata.engine, sandboxed.metadata.engine]).toEqual(['ripgrep', 'grep']);
  });
});
