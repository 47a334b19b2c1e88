import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/** read and grep feed the ledger that write and edit check (docs/guide/tools.md "Writes"), in one agent session. */
describe('read-before-write through read and grep', () => {
  const registry = buildToolRegistry(loadProfile('developer'));

  it('lets write overwrite only what read showed, and edit only what grep showed', async () => {
    const dir = makeTempDir();
    writeFileSync(join(dir, 'a.txt'), 'old a\n');
    writeFileSync(join(dir, 'b.txt'), 'old b\n');
    const session = makeToolContext({ workingDir: dir, session: true });

    const blind = await registry.run('write', { path: 'a.txt', content: 'new a\n' }, session);
    expect(blind.ok).toBe(false);
    expect(blind.output).toContain('has not been read in this session');
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('old a\n');

    expect((await registry.run('read', { path: 'a.txt' }, session)).ok).toBe(true);
    expect((await registry.run('write', { path: 'a.txt', content: 'new a\n' }, session)).ok).toBe(true);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('new a\n');

    expect((await registry.run('grep', { pattern: 'old', path: '.' }, session)).metadata.files).toBe(1);
    const edited = await registry.run('edit', { path: 'b.txt', old_string: 'old b', new_string: 'new b' }, session);
    expect(edited.ok).toBe(true);
    expect(readFileSync(join(dir, 'b.txt'), 'utf8')).toBe('new b\n');
  });
});
