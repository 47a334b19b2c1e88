import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ToolError } from '../../../src/tools/core/types.js';
import { checkCreateOnlyTarget, type WriteTargetPolicy } from '../../../src/tools/core/write-policy.js';
import { makeWorld, SandboxBackend, type World } from '../files/file-write-fixtures.js';

function policy(world: World, writeRoots: string[] = [], workingDir = world.work): WriteTargetPolicy {
  return { workingDir, writeRoots };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError);
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('checkCreateOnlyTarget: where new files may go', () => {
  it('allows a new file in the working directory, also in new subdirectories', async () => {
    const world = makeWorld();
    expect(await checkCreateOnlyTarget(world.backend, join(world.work, 'a.csv'), policy(world))).toBe(join(world.work, 'a.csv'));
    expect(await checkCreateOnlyTarget(world.backend, join(world.work, 'new/deep/a.csv'), policy(world))).toBe(join(world.work, 'new/deep/a.csv'));
  });

  it('allows the temporary directory', async () => {
    const world = makeWorld();
    expect(await checkCreateOnlyTarget(world.backend, join(world.tmp, 'x.csv'), policy(world))).toBe(join(world.tmp, 'x.csv'));
  });

  it('refuses an existing file, an existing directory and a symlink at the target', async () => {
    const world = makeWorld();
    writeFileSync(join(world.work, 'old.txt'), 'old');
    mkdirSync(join(world.work, 'dir'));
    symlinkSync(join(world.work, 'nowhere.txt'), join(world.work, 'dangling'));
    symlinkSync(join(world.work, 'old.txt'), join(world.work, 'alias'));
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'old.txt'), policy(world)))).toMatch(/already exists.*never overwrites/);
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'dir'), policy(world)))).toMatch(/is a directory/);
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'dangling'), policy(world)))).toMatch(
      /is a symbolic link; quarry never writes through a symlink/,
    );
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'alias'), policy(world)))).toMatch(/is a symbolic link/);
  });

  it('refuses paths outside the working and temporary directories, naming write_roots', async () => {
    const world = makeWorld();
    const message = await refusal(checkCreateOnlyTarget(world.backend, join(world.outside, 'x.csv'), policy(world)));
    expect(message).toContain('is outside the places this profile may write');
    expect(message).toContain(world.work);
    expect(message).toContain('write_roots');
    // `..` is resolved before the check: it is the same path.
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, '../outside/y.csv'), policy(world)))).toContain('outside the places');
  });

  it('allows write_roots: absolute, relative to the working directory, and ~/', async () => {
    const world = makeWorld();
    const exports = join(world.home, 'exports');
    expect(await checkCreateOnlyTarget(world.backend, join(world.outside, 'x.csv'), policy(world, [world.outside]))).toBe(join(world.outside, 'x.csv'));
    expect(await checkCreateOnlyTarget(world.backend, join(world.outside, 'y.csv'), policy(world, ['../outside']))).toBe(join(world.outside, 'y.csv'));
    expect(await checkCreateOnlyTarget(world.backend, join(exports, 'z.csv'), policy(world, ['~/exports']))).toBe(join(exports, 'z.csv'));
  });

  it('refuses sensitive files in the home directory even when the working directory is home', async () => {
    const world = makeWorld();
    const inHome = policy(world, [], world.home);
    expect(await checkCreateOnlyTarget(world.backend, join(world.home, 'notes.txt'), inHome)).toBe(join(world.home, 'notes.txt'));
    for (const path of [
      '.bashrc',
      '.profile',
      '.ssh/authorized_keys',
      '.config/autostart/x.desktop',
      '.aws/credentials',
      '.local/bin/ls',
      '.pgpass',
      '.quarry/profiles/mine.yaml',
    ]) {
      expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.home, path), inHome))).toMatch(/sensitive location/);
    }
  });

  it('refuses system directories even when write_roots contains /', async () => {
    const world = makeWorld();
    expect(await refusal(checkCreateOnlyTarget(world.backend, '/etc/quarry-test.conf', policy(world)))).toContain('/etc/ is a system directory');
    expect(await refusal(checkCreateOnlyTarget(world.backend, '/usr/local/bin/quarry-test', policy(world, ['/'])))).toContain('/usr/ is a system directory');
    expect(await refusal(checkCreateOnlyTarget(world.backend, '/root/quarry-test.txt', policy(world, ['/'])))).toContain('under /root, a sensitive location');
  });

  it('refuses files inside a .git directory', async () => {
    const world = makeWorld();
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, '.git/hooks/pre-commit'), policy(world)))).toContain('.git directory');
  });

  it('resolves a symlinked parent directory: into a sensitive location is refused', async () => {
    const world = makeWorld();
    mkdirSync(join(world.home, '.ssh'));
    symlinkSync(join(world.home, '.ssh'), join(world.work, 'keys'));
    const message = await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'keys/authorized_keys'), policy(world)));
    expect(message).toContain(`resolves to ${join(world.home, '.ssh/authorized_keys')}`);
    expect(message).toContain('sensitive location');
  });

  it('resolves a symlinked parent directory: out of the allowed places is refused, into them allowed', async () => {
    const world = makeWorld();
    symlinkSync(world.outside, join(world.work, 'out'));
    symlinkSync(world.tmp, join(world.work, 'scratch'));
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'out/x.csv'), policy(world)))).toContain(
      `resolves to ${join(world.outside, 'x.csv')}`,
    );
    expect(await checkCreateOnlyTarget(world.backend, join(world.work, 'scratch/x.csv'), policy(world))).toBe(join(world.tmp, 'x.csv'));
  });

  it('refuses a parent that is a symlink pointing nowhere (creating it would follow the link)', async () => {
    const world = makeWorld();
    symlinkSync(join(world.home, '.ssh'), join(world.work, 'keys'));
    expect(await refusal(checkCreateOnlyTarget(world.backend, join(world.work, 'keys/authorized_keys'), policy(world)))).toMatch(
      /symbolic link whose target does not exist/,
    );
    expect(existsSync(join(world.home, '.ssh'))).toBe(false);
  });

  it('recognises the home directory through a symlink to it', async () => {
    const world = makeWorld();
    const linkedHome = join(world.root, 'home-link');
    symlinkSync(world.home, linkedHome);
    const backend = new SandboxBackend(linkedHome, world.tmp);
    // The real path of ~/.ssh is refused although HOME names the link.
    expect(await refusal(checkCreateOnlyTarget(backend, join(world.home, '.ssh/config'), policy(world, [world.home])))).toMatch(/sensitive location/);
  });

  it('refuses a relative path (callers resolve paths first)', async () => {
    const world = makeWorld();
    expect(await refusal(checkCreateOnlyTarget(world.backend, 'a.csv', policy(world)))).toContain('not an absolute path');
  });
});
