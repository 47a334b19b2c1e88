import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/types.js';

/**
 * The behaviour every backend must show, run against each of them (local, and daytona over the
 * fake sandbox): the same calls on the same real files give the same answers.
 */
export interface ContractSubject {
  backend: Backend;
  /** The home and temporary directories this backend should report. */
  home: string;
  temp: string;
  /** A new empty directory the backend sees (its path there). */
  makeDir(prefix: string): string;
  /**
   * Where the backend's `path` is on this machine, for the test's own file calls: the same path
   * for the local backend, a place in the fake sandbox's private root for daytona (so a backend
   * that used this machine's files in place of the sandbox's would fail here).
   */
  hostPath(path: string): string;
  /** Releases the backend (deletes the sandbox). */
  dispose(): Promise<void>;
}

/** Arguments that break naive quoting. */
export const NASTY_ARGUMENTS = [
  '',
  ' ',
  'two words',
  "it's",
  '"double"',
  '$(touch pwned)',
  '`touch pwned`',
  '$HOME',
  '${PATH}',
  '*',
  '~',
  'a\nb',
  '\\',
  '-n',
  '--help',
  ';rm -rf x',
  '|cat',
  '&',
  'x=1',
  "'",
  "''",
  'tab\there',
  'ünïcødé ✓',
  '!!',
  '#comment',
];

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

async function expectErrno(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught as NodeJS.ErrnoException,
  );
  expect(error, `expected a ${code} error`).not.toBeNull();
  expect(error?.code).toBe(code);
}

export function describeBackendContract(label: string, makeSubject: () => Promise<ContractSubject>): void {
  describe(`backend contract: ${label}`, () => {
    let subject: ContractSubject;
    let backend: Backend;
    let dir: string;
    const host = (path: string): string => subject.hostPath(path);

    beforeAll(async () => {
      subject = await makeSubject();
      backend = subject.backend;
      dir = subject.makeDir('quarry-contract-');
    });
    afterAll(async () => {
      await subject.dispose();
    });

    it('reports its home and temporary directories', async () => {
      expect(await backend.homeDir()).toBe(subject.home);
      expect(await backend.tempDir()).toBe(subject.temp);
    });

    it("gives commands the backend's own environment to start from", async () => {
      const env = await backend.environment();
      expect(env.HOME).toBe(subject.home);
      expect(env.PATH).toMatch(/\/bin/);
      const result = await backend.execFile(['sh', '-c', 'printf %s "$HOME"'], { cwd: dir, env });
      expect(result.stdout.toString()).toBe(subject.home);
    });

    it('runs an argument vector with every nasty argument arriving unchanged', async () => {
      const result = await backend.execFile(['printf', '%s\\0', ...NASTY_ARGUMENTS], { cwd: dir });
      expect(result.exitCode).toBe(0);
      expect(result.stdout.toString('utf8').split('\0').slice(0, -1)).toEqual(NASTY_ARGUMENTS);
      expect(existsSync(host(join(dir, 'pwned')))).toBe(false);
    });

    it('keeps stdout and stderr apart, reports the exit status, honours cwd and a complete env', async () => {
      const result = await backend.execFile(['sh', '-c', 'pwd; echo "v=$QUARRY_CONTRACT_VAR h=${HOME-unset}"; echo oops >&2; exit 3'], {
        cwd: dir,
        env: { QUARRY_CONTRACT_VAR: 'a b', PATH: '/usr/bin:/bin' },
      });
      expect(result.stdout.toString()).toBe(`${dir}\nv=a b h=unset\n`);
      expect(result.stderr.toString()).toBe('oops\n');
      expect(result.exitCode).toBe(3);
      expect(result.timedOut).toBe(false);
      expect(result.aborted).toBe(false);
    });

    it('returns binary stdout byte for byte and counts what maxOutputBytes dropped', async () => {
      const binary = await backend.execFile(['printf', '\\377\\000\\001end'], { cwd: dir });
      expect([...binary.stdout]).toEqual([0xff, 0x00, 0x01, ...Buffer.from('end')]);
      const capped = await backend.execFile(['sh', '-c', 'head -c 100000 /dev/zero'], { cwd: dir, maxOutputBytes: 1000 });
      expect(capped.stdout.length).toBe(1000);
      expect(capped.droppedBytes).toBe(99000);
    });

    it('hands every stdout byte to onStdout, even when nothing is kept', async () => {
      const seen: Buffer[] = [];
      const result = await backend.execFile(['seq', '1', '20000'], { cwd: dir, maxOutputBytes: 0, onStdout: (chunk) => seen.push(chunk) });
      const expected = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
      expect(Buffer.concat(seen).toString()).toBe(expected);
      expect(result.stdout.length).toBe(0);
    });

    it('kills the whole process group on timeout and keeps the output so far', async () => {
      const pidFile = join(dir, 'timeout.pid');
      const started = Date.now();
      const result = await backend.execFile(['sh', '-c', `echo started; sleep 30 & echo $! > ${pidFile}; wait`], { cwd: dir, timeoutMs: 700 });
      expect(result.timedOut).toBe(true);
      expect(result.exitCode).toBeNull();
      expect(result.stdout.toString()).toBe('started\n');
      expect(Date.now() - started).toBeLessThan(10_000);
      const grandchild = Number(readFileSync(host(pidFile), 'utf8'));
      expect(await waitFor(() => !pidAlive(grandchild), 5000)).toBe(true);
    });

    it('kills the whole process group on abort', async () => {
      const pidFile = join(dir, 'abort.pid');
      const controller = new AbortController();
      const running = backend.execFile(['sh', '-c', `echo $$ > ${pidFile}; sleep 30 & wait`], { cwd: dir, signal: controller.signal });
      expect(await waitFor(() => existsSync(host(pidFile)) && readFileSync(host(pidFile), 'utf8').trim() !== '', 5000)).toBe(true);
      const started = Date.now();
      controller.abort();
      const result = await running;
      expect(result.aborted).toBe(true);
      expect(result.exitCode).toBeNull();
      expect(Date.now() - started).toBeLessThan(8000);
      const shell = Number(readFileSync(host(pidFile), 'utf8'));
      expect(await waitFor(() => !pidAlive(shell), 5000)).toBe(true);
    });

    it('rejects with ENOENT for a program that does not exist', async () => {
      await expectErrno(backend.execFile(['quarry-no-such-program-xyz'], { cwd: dir }), 'ENOENT');
    });

    it('finds programs on PATH', async () => {
      expect(await backend.which('sh')).toMatch(/^\/.*\/sh$/);
      expect(await backend.which('quarry-no-such-program-xyz')).toBeNull();
    });

    it('stats files, directories and symlinks like lstat(2) and stat(2)', async () => {
      const file = join(dir, 'stat me.txt');
      writeFileSync(host(file), 'hello\n');
      chmodSync(host(file), 0o640);
      symlinkSync(file, host(join(dir, 'link')));
      symlinkSync(join(dir, 'nowhere'), host(join(dir, 'dangling')));
      const fileStat = await backend.stat(file);
      expect(fileStat).toMatchObject({ type: 'file', size: 6, mode: 0o640 });
      expect(Math.abs(fileStat!.mtimeMs - statSync(host(file)).mtimeMs)).toBeLessThan(1);
      expect(await backend.lstat(join(dir, 'link'))).toMatchObject({ type: 'symlink', size: lstatSync(host(join(dir, 'link'))).size });
      expect(await backend.stat(join(dir, 'link'))).toMatchObject({ type: 'file', size: 6 });
      expect(await backend.lstat(join(dir, 'dangling'))).toMatchObject({ type: 'symlink' });
      expect(await backend.stat(join(dir, 'dangling'))).toBeNull();
      expect(await backend.stat(join(dir, 'missing'))).toBeNull();
      expect(await backend.lstat(join(file, 'under-a-file'))).toBeNull();
      expect(await backend.stat(dir)).toMatchObject({ type: 'directory' });
    });

    it('resolves symlinks with realpath and fails with ENOENT for a missing path', async () => {
      mkdirSync(host(join(dir, 'real-dir')));
      symlinkSync(join(dir, 'real-dir'), host(join(dir, 'dir-link')));
      expect(await backend.realpath(join(dir, 'dir-link'))).toBe(join(dir, 'real-dir'));
      await expectErrno(backend.realpath(join(dir, 'no-such')), 'ENOENT');
    });

    it('reads files byte for byte, whole and as a stream', async () => {
      const bytes = Buffer.concat([Buffer.from('line one\r\n'), Buffer.from([0xff, 0xfe, 0x00]), Buffer.alloc(300_000, 'x')]);
      const file = join(dir, 'binary.bin');
      writeFileSync(host(file), bytes);
      expect((await backend.readFile(file)).equals(bytes)).toBe(true);
      const chunks: Buffer[] = [];
      for await (const chunk of backend.readStream(file)) chunks.push(chunk);
      expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
      // Stopping early is allowed (read shows only the first lines).
      for await (const chunk of backend.readStream(file)) {
        expect(chunk.length).toBeGreaterThan(0);
        break;
      }
      await expectErrno(backend.readFile(join(dir, 'missing.txt')), 'ENOENT');
      await expectErrno(backend.readFile(dir), 'EISDIR');
    });

    it('reads byte ranges: inside, across chunk boundaries, at and past the end, empty; a missing file fails with ENOENT', async () => {
      // Over 4 MiB, so a remote backend that fetches ranges in chunks crosses a chunk boundary.
      const size = 4 * 1024 * 1024 + 300_000;
      const bytes = Buffer.alloc(size);
      for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >> 12)) & 0xff;
      const file = join(dir, 'ranges.bin');
      writeFileSync(host(file), bytes);
      const read = async (path: string, start: number, end: number) => {
        const chunks: Buffer[] = [];
        for await (const chunk of backend.readStream(path, { start, end })) chunks.push(chunk);
        return Buffer.concat(chunks);
      };
      for (const [start, end] of [
        [0, 8],
        [100, 300_000],
        [4 * 1024 * 1024 - 10, 4 * 1024 * 1024 + 10],
        [1, size],
        [size - 22, size],
      ] as const) {
        expect((await read(file, start, end)).equals(bytes.subarray(start, end)), `range ${start}-${end}`).toBe(true);
      }
      expect((await read(file, size - 5, size + 1000)).equals(bytes.subarray(size - 5))).toBe(true);
      expect((await read(file, size + 10, size + 20)).length).toBe(0);
      expect((await read(file, 50, 50)).length).toBe(0);
      // Stopping early is allowed (read_excel stops inside a sheet).
      for await (const chunk of backend.readStream(file, { start: 10, end: size })) {
        expect(chunk.equals(bytes.subarray(10, 10 + chunk.length))).toBe(true);
        break;
      }
      await expectErrno(read(join(dir, 'missing.bin'), 0, 10), 'ENOENT');
    });

    it('writes atomically: parents created, exclusive never replaces, overwrite keeps the mode, no temporary files left', async () => {
      const target = join(dir, 'new', 'deep', 'file.txt');
      await backend.writeFileAtomic(target, Buffer.from('first'), { exclusive: true });
      expect(readFileSync(host(target), 'utf8')).toBe('first');
      await expectErrno(backend.writeFileAtomic(target, Buffer.from('second'), { exclusive: true }), 'EEXIST');
      expect(readFileSync(host(target), 'utf8')).toBe('first');
      chmodSync(host(target), 0o600);
      await backend.writeFileAtomic(target, Buffer.from('third'), { exclusive: false });
      expect(readFileSync(host(target), 'utf8')).toBe('third');
      expect(statSync(host(target)).mode & 0o777).toBe(0o600);
      await backend.writeFileAtomic(join(dir, 'new', 'empty.txt'), Buffer.alloc(0), { exclusive: true });
      expect(readFileSync(host(join(dir, 'new', 'empty.txt'))).length).toBe(0);
      symlinkSync(join(dir, 'outside-target'), host(join(dir, 'new', 'trap')));
      await expectErrno(backend.writeFileAtomic(join(dir, 'new', 'trap'), Buffer.from('x'), { exclusive: true }), 'EEXIST');
      expect(existsSync(host(join(dir, 'outside-target')))).toBe(false);
      expect(readdirSync(host(join(dir, 'new', 'deep')))).toEqual(['file.txt']);
      expect(readdirSync(host(join(dir, 'new'))).filter((name) => name.includes('quarry-'))).toEqual([]);
    });

    it('lists a directory with lstat information', async () => {
      const listed = join(dir, 'listed');
      mkdirSync(host(join(listed, 'sub')), { recursive: true });
      writeFileSync(host(join(listed, 'a file.txt')), 'abc');
      writeFileSync(host(join(listed, 'new\nline')), '');
      symlinkSync('a file.txt', host(join(listed, 'ln')));
      const entries = (await backend.listDir(listed)).sort((a, b) => a.name.localeCompare(b.name));
      expect(entries.map((entry) => [entry.name, entry.type])).toEqual([
        ['a file.txt', 'file'],
        ['ln', 'symlink'],
        ['new\\nline', 'file'], // names are shown escaped (escapeName), one per line
        ['sub', 'directory'],
      ]);
      expect(entries[0]!.size).toBe(3);
      await expectErrno(backend.listDir(join(dir, 'no-such-dir')), 'ENOENT');
      await expectErrno(backend.listDir(join(listed, 'a file.txt')), 'ENOTDIR');
    });

    it('globs with skipped directories, hidden files, symlinks and a limit', async () => {
      const tree = join(dir, 'tree');
      for (const path of ['src/a.ts', 'src/b.tsx', 'src/deep/c.ts', '.hidden/d.ts', 'node_modules/pkg/e.ts', 'src/.git/f.ts', 'top.ts', 'notes.md']) {
        mkdirSync(host(join(tree, path, '..')), { recursive: true });
        writeFileSync(host(join(tree, path)), '');
      }
      symlinkSync('top.ts', host(join(tree, 'alias.ts')));
      const options = { cwd: tree, skipDirs: ['.git', 'node_modules'], includeHidden: true, limit: 100 };
      // Symbolic links are not followed and not listed (tinyglobby with followSymbolicLinks: false).
      expect((await backend.glob('**/*.ts', options)).paths).toEqual(['.hidden/d.ts', 'src/a.ts', 'src/deep/c.ts', 'top.ts']);
      expect((await backend.glob('*.ts', options)).paths).toEqual(['top.ts']);
      expect((await backend.glob('src/**/*.{ts,tsx}', options)).paths).toEqual(['src/a.ts', 'src/b.tsx', 'src/deep/c.ts']);
      expect((await backend.glob('**/*.ts', { ...options, includeHidden: false })).paths).toEqual(['src/a.ts', 'src/deep/c.ts', 'top.ts']);
      expect(await backend.glob('**/*', { ...options, limit: 2 })).toMatchObject({ paths: ['.hidden/d.ts', 'notes.md'], truncated: true });
      expect((await backend.glob('**/*.none', options)).paths).toEqual([]);
    });
  });
}
