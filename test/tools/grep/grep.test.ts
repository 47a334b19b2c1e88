import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { LocalBackend } from '../../../src/backends/local.js';
import type { ExecOptions } from '../../../src/backends/types.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { GREP_DEFAULT_MAX_MATCHES, GREP_MAX_MATCHES_LIMIT } from '../../../src/tools/grep/tool.js';
import { MAX_LINE_CHARS } from '../../../src/tools/core/long-lines.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/** The local backend as a sandbox without ripgrep sees it: grep must fall back to GNU grep. */
class NoRipgrepBackend extends LocalBackend {
  override ripgrepPath(): Promise<string | null> {
    return Promise.resolve(null);
  }
}

/** Counts the stdout bytes a search delivered, to show that an early stop really stops reading. */
function countingBackend(Base: typeof LocalBackend): LocalBackend & { stdoutBytes: number } {
  return new (class extends Base {
    stdoutBytes = 0;
    override execFile(argv: readonly string[], options: ExecOptions) {
      return super.execFile(argv, {
        ...options,
        onStdout: (chunk) => {
          this.stdoutBytes += chunk.length;
          options.onStdout?.(chunk);
        },
      });
    }
  })();
}

const registry = buildToolRegistry(loadProfile('readonly'));
const engines = [
  { engine: 'ripgrep', Backend: LocalBackend, backend: () => new LocalBackend() },
  { engine: 'grep', Backend: NoRipgrepBackend, backend: () => new NoRipgrepBackend() },
] as const;

let dir: string;
beforeEach(() => {
  dir = makeTempDir();
});

function put(relative: string, content: string | Buffer): void {
  const path = join(dir, relative);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, content);
}

/** A tree with the awkward cases: skipped and hidden dirs, odd names, binary, CRLF, Latin-1. */
function buildTree(): void {
  put('src/app.ts', 'import x\nconst needle = 1;\nother\nNEEDLE again\n');
  put('src/util.js', 'no match here\n');
  put('docs/a b:c-d.txt', 'first\nsecond needle\nthird\n');
  put('-dash.txt', 'needle at dash\n');
  put('.hidden/conf', 'needle hidden\n');
  put('.gitignore', 'ignored.txt\n');
  put('ignored.txt', 'needle despite gitignore\n');
  put('win.txt', 'a\r\nneedle crlf\r\nb\r\n');
  put('latin.txt', Buffer.from('caf\xe9 needle\n', 'latin1'));
  put('blob.bin', Buffer.concat([Buffer.from('needle'), Buffer.from([0, 1, 2, 3]), Buffer.from('needle\n')]));
  for (const skipped of ['.git', 'node_modules', '__pycache__', '.venv']) put(`${skipped}/inner/file.txt`, 'needle skipped\n');
  put('deep/node_modules/pkg/index.js', 'needle skipped\n');
}

describe.each(engines)('grep with $engine', ({ engine, Backend, backend }) => {
  function grep(args: Record<string, unknown>, options: { session?: boolean; signal?: AbortSignal } = {}) {
    const context = makeToolContext({ workingDir: dir, backend: backend(), ...options });
    return { context, result: registry.run('grep', args, context) };
  }

  it('finds matches in sorted files, relative paths, hidden files included, skipped dirs and binaries left out', async () => {
    buildTree();
    const result = await grep({ pattern: 'needle' }).result;
    expect(result.ok).toBe(true);
    expect(result.output).toBe(
      [
        '-dash.txt:1:needle at dash',
        '.hidden/conf:1:needle hidden',
        'docs/a b:c-d.txt:2:second needle',
        'ignored.txt:1:needle despite gitignore',
        'latin.txt:1:caf\\xe9 needle',
        'src/app.ts:2:const needle = 1;',
        'win.txt:2:needle crlf',
        '[7 matching lines in 7 files]',
      ].join('\n'),
    );
    expect(result.metadata).toMatchObject({ engine, matches: 7, files: 7, truncated: false });
  });

  it('applies ignore_case, glob (with braces and negation) and context lines', async () => {
    buildTree();
    const insensitive = await grep({ pattern: 'needle', ignore_case: true, glob: '*.ts' }).result;
    expect(insensitive.output).toBe('src/app.ts:2:const needle = 1;\nsrc/app.ts:4:NEEDLE again\n[2 matching lines in 1 file]');
    const braces = await grep({ pattern: 'needle', glob: '*.{ts,txt}' }).result;
    expect(braces.metadata.files).toBe(6);
    const negated = await grep({ pattern: 'needle', glob: '!*.txt' }).result;
    expect(negated.output).toBe('.hidden/conf:1:needle hidden\nsrc/app.ts:2:const needle = 1;\n[2 matching lines in 2 files]');
    const context = await grep({ pattern: 'needle', path: 'docs', context_lines: 1 }).result;
    expect(context.output).toBe('docs/a b:c-d.txt-1-first\ndocs/a b:c-d.txt:2:second needle\ndocs/a b:c-d.txt-3-third\n[1 matching line in 1 file]');
    const groups = await grep({ pattern: 'needle|import', path: 'src', context_lines: 1, ignore_case: true }).result;
    expect(groups.output).toBe(
      ['src/app.ts:1:import x', 'src/app.ts:2:const needle = 1;', 'src/app.ts-3-other', 'src/app.ts:4:NEEDLE again', '[3 matching lines in 1 file]'].join('\n'),
    );
  });

  it('separates context groups with -- within and between files', async () => {
    put('a.txt', ['hit', 'x', 'x', 'x', 'x', 'hit'].join('\n') + '\n');
    put('b.txt', 'x\nhit\n');
    const result = await grep({ pattern: 'hit', context_lines: 1 }).result;
    expect(result.output).toBe(
      ['a.txt:1:hit', 'a.txt-2-x', '--', 'a.txt-5-x', 'a.txt:6:hit', '--', 'b.txt-1-x', 'b.txt:2:hit', '[3 matching lines in 2 files]'].join('\n'),
    );
  });

  it('searches one file when path is a file, and searches inside a skipped directory named explicitly', async () => {
    buildTree();
    const one = await grep({ pattern: 'needle', path: 'docs/a b:c-d.txt' }).result;
    expect(one.output).toBe('docs/a b:c-d.txt:2:second needle\n[1 matching line in 1 file]');
    const inside = await grep({ pattern: 'needle', path: 'node_modules' }).result;
    expect(inside.output).toBe('node_modules/inner/file.txt:1:needle skipped\n[1 matching line in 1 file]');
  });

  it('takes a pattern that looks like an option as literal text and runs nothing (--pre=rm regression)', async () => {
    const canary = join(dir, 'canary');
    // The script names the canary relative to itself: the random temporary path could contain a pattern ("-e").
    put('touch-canary', '#!/bin/sh\ntouch "$(dirname "$0")/canary"\ncat "$1"\n');
    chmodSync(join(dir, 'touch-canary'), 0o755);
    put('notes.txt', 'run --pre=./touch-canary here\nuse -f/etc/passwd\nlist --files\n--pre=rm\ntry -e too\n');
    for (const pattern of ['--pre=./touch-canary', '--pre=rm', '-f/etc/passwd', '--files', '-e']) {
      const result = await grep({ pattern }).result;
      expect(result.ok, pattern).toBe(true);
      expect(existsSync(canary)).toBe(false);
      const expected = ['run --pre=./touch-canary here', 'use -f/etc/passwd', 'list --files', '--pre=rm', 'try -e too']
        .map((line, i) => ({ line, n: i + 1 }))
        .filter(({ line }) => line.includes(pattern));
      expect(result.output).toBe(
        [...expected.map(({ line, n }) => `notes.txt:${n}:${line}`), `[${expected.length} matching line${expected.length === 1 ? '' : 's'} in 1 file]`].join(
          '\n',
        ),
      );
    }
    const asPath = await grep({ pattern: 'x', path: '--pre=rm' }).result;
    expect(asPath.ok).toBe(false);
    expect(asPath.output).toMatch(/^no such file or directory: --pre=rm/);
  });

  it(`stops at max_matches (default ${GREP_DEFAULT_MAX_MATCHES}) on a tree with huge numbers of matches`, async () => {
    const lines = 'match me\n'.repeat(20_000);
    for (let i = 0; i < 100; i++) put(`many/f${String(i).padStart(3, '0')}.txt`, lines);
    const counting = countingBackend(Backend);
    const result = await registry.run('grep', { pattern: 'match' }, makeToolContext({ workingDir: dir, backend: counting }));
    // The whole output would be 2,000,000 lines of about 30 bytes; the engine was stopped long before.
    expect(counting.stdoutBytes).toBeLessThan(2_000_000);
    expect(result.metadata).toMatchObject({ engine, matches: GREP_DEFAULT_MAX_MATCHES, truncated: true });
    const body = result.output.split('\n');
    expect(body.filter((line) => /^many\/f\d+\.txt:\d+:match me$/.test(line))).toHaveLength(GREP_DEFAULT_MAX_MATCHES);
    expect(body.at(-1)).toMatch(/^\[showing the first 100 matching lines in \d+ files?; more matches exist/);
    const five = await grep({ pattern: 'match', max_matches: 5, context_lines: 2 }).result;
    expect(five.metadata.matches).toBe(5);
    expect(five.output.split('\n').filter((line) => line.includes(':match me'))).toHaveLength(5);
  });

  it('says no matches, and reports an invalid regex as a clean error', async () => {
    put('a.txt', 'hello\n');
    const none = await grep({ pattern: 'absent' }).result;
    expect(none.ok).toBe(true);
    expect(none.output).toBe('no matches for "absent" in .');
    const invalid = await grep({ pattern: 'a(' }).result;
    expect(invalid.ok).toBe(false);
    expect(invalid.output).toMatch(new RegExp(`^grep failed \\(${engine}\\): `));
    expect(invalid.output).toMatch(engine === 'ripgrep' ? /unclosed group/ : /parenthes/);
    expect(invalid.metadata.error).toBe('search_failed');
  });

  it(`cuts matched lines over ${MAX_LINE_CHARS} characters`, async () => {
    put('wide.txt', `${'a'.repeat(5000)}needle${'b'.repeat(1000)}\n`);
    const result = await grep({ pattern: 'needle' }).result;
    expect(result.output.split('\n')[0]).toBe(`wide.txt:1:${'a'.repeat(MAX_LINE_CHARS)}… [line cut: 6,006 chars total]`);
    expect(result.output).toContain('1 line(s) cut at 500 characters');
  });

  it('records matched files in the session ledger', async () => {
    buildTree();
    const { context, result } = grep({ pattern: 'needle', path: 'src' }, { session: true });
    await result;
    const app = join(dir, 'src/app.ts');
    const stat = statSync(app);
    expect(context.fileReads!.checkUnchanged(app, stat)).toBeNull();
    expect(context.fileReads!.checkUnchanged(join(dir, 'src/util.js'), statSync(join(dir, 'src/util.js')))).toContain('has not been read');
  });

  it('skips pipes inside a tree instead of blocking on them, and refuses a pipe as path', async () => {
    put('a.txt', 'needle\n');
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const started = performance.now();
    const result = await grep({ pattern: 'needle' }).result;
    expect(result.output).toBe('a.txt:1:needle\n[1 matching line in 1 file]');
    expect(performance.now() - started).toBeLessThan(20_000);
    const pipe = await grep({ pattern: 'needle', path: 'pipe' }).result;
    expect(pipe.ok).toBe(false);
    expect(pipe.output).toBe('pipe is not a regular file or directory (a device, socket or pipe); grep searches files');
  });

  it('refuses a glob with a directory part, a multi-line pattern and too many matches', async () => {
    put('a.txt', 'x\n');
    expect((await grep({ pattern: 'x', glob: 'src/*.ts' }).result).output).toContain('glob matches file names only');
    expect((await grep({ pattern: 'a\nb' }).result).output).toBe('pattern must be a single line: grep matches one line at a time');
    const tooMany = await grep({ pattern: 'x', max_matches: GREP_MAX_MATCHES_LIMIT + 1 }).result;
    expect(tooMany.ok).toBe(false);
    expect(tooMany.output).toContain('max_matches');
  });
});

/** The local backend with a stand-in for the ripgrep binary: a script that misbehaves. */
function backendWithFakeRipgrep(script: string, timeoutMs?: number): LocalBackend {
  const fake = join(dir, 'fake-rg');
  writeFileSync(fake, `#!/bin/sh\n${script}\n`);
  chmodSync(fake, 0o755);
  return new (class extends LocalBackend {
    override ripgrepPath(): Promise<string | null> {
      return Promise.resolve(fake);
    }
    // Stands in for the 30 s limit, so that a test need not wait for it.
    override execFile(argv: readonly string[], options: ExecOptions) {
      return super.execFile(argv, timeoutMs === undefined ? options : { ...options, timeoutMs });
    }
  })();
}

describe('grep when the engine misbehaves', () => {
  it('stops the engine and reports cancelled when the session cancels', async () => {
    const controller = new AbortController();
    const context = makeToolContext({ workingDir: dir, backend: backendWithFakeRipgrep('sleep 30'), signal: controller.signal });
    const started = performance.now();
    setTimeout(() => controller.abort(), 200);
    const result = await registry.run('grep', { pattern: 'x' }, context);
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(result.ok).toBe(false);
    expect(result.output).toBe('grep: cancelled');
  });

  it('keeps what was found when the time limit stops the engine, and fails when nothing was', async () => {
    const partial = makeToolContext({ workingDir: dir, backend: backendWithFakeRipgrep("printf 'a.txt\\000'; printf '3:hit\\n'; sleep 30", 300) });
    const found = await registry.run('grep', { pattern: 'hit' }, partial);
    expect(found.ok).toBe(true);
    expect(found.output).toBe('a.txt:3:hit\n[1 matching line in 1 file before the search was stopped at 30 s; there may be more: narrow path or glob]');
    expect(found.metadata).toMatchObject({ timedOut: true, matches: 1 });
    mkdirSync(join(dir, 'logs'), { recursive: true });
    mkdirSync(join(dir, 'data'), { recursive: true });
    const nothing = makeToolContext({ workingDir: dir, backend: backendWithFakeRipgrep('sleep 30', 300) });
    const none = await registry.run('grep', { pattern: 'hit' }, nothing);
    expect(none.ok).toBe(false);
    expect(none.output).not.toMatch(/^no matches/);
    expect(none.output).toBe(
      'grep stopped at its 30 s limit before the search finished: no match in the part of . it read, but the rest was not searched, so matches may exist ' +
        '(a large tree, or files not yet in the disk cache). Narrow the search: add a glob (e.g. "*.log"), or search one subdirectory at a time (data, ' +
        'logs); ' +
        'a repeated search is faster once the files are cached.',
    );
    expect(none.metadata).toMatchObject({ timedOut: true, matches: 0, error: 'timeout' });
  });

  it('reports an engine that dies or exits oddly as a failure, with its stderr', async () => {
    const context = makeToolContext({ workingDir: dir, backend: backendWithFakeRipgrep('echo boom >&2; exit 3') });
    const result = await registry.run('grep', { pattern: 'x' }, context);
    expect(result.ok).toBe(false);
    expect(result.output).toBe('grep failed (ripgrep): the search exited with status 3: boom');
    const killed = makeToolContext({ workingDir: dir, backend: backendWithFakeRipgrep('kill -9 $$') });
    expect((await registry.run('grep', { pattern: 'x' }, killed)).output).toBe('grep failed (ripgrep): the search was killed');
  });
});

describe('grep engines agree', () => {
  it('gives identical output with ripgrep and with GNU grep on the same tree', async () => {
    buildTree();
    const cases: Record<string, unknown>[] = [
      { pattern: 'needle' },
      { pattern: 'NEEDLE', ignore_case: true, context_lines: 2 },
      { pattern: '\\bsecond\\s+\\w+', path: 'docs' },
      { pattern: 'ne+dle', glob: '*.{txt,conf}', max_matches: 50 },
      { pattern: '^[a-z]+$', context_lines: 1 },
    ];
    for (const args of cases) {
      const outputs = await Promise.all(engines.map(({ backend }) => registry.run('grep', args, makeToolContext({ workingDir: dir, backend: backend() }))));
      expect(outputs[1]!.output, JSON.stringify(args)).toBe(outputs[0]!.output);
      expect(outputs[0]!.metadata).toMatchObject({ engine: 'ripgrep', regexSyntax: 'rust' });
      expect(outputs[1]!.metadata).toMatchObject({ engine: 'grep', regexSyntax: 'pcre' });
    }
  });

  it('uses extended regexps with a grep that has no -P (BusyBox, --disable-perl-regexp)', async () => {
    put('a.txt', 'needle 42\n');
    const bin = makeTempDir('quarry-fake-bin-');
    const realGrep = execFileSync('sh', ['-c', 'command -v grep']).toString().trim();
    writeFileSync(
      join(bin, 'grep'),
      `#!/bin/sh\nfor arg in "$@"; do [ "$arg" = -P ] && { echo 'grep: support for the -P option is not compiled into this --disable-perl-regexp binary' ` +
        `>&2; exit 2; }; done\nexec ${realGrep} "$@"\n`,
    );
    chmodSync(join(bin, 'grep'), 0o755);
    const savedPath = process.env.PATH;
    process.env.PATH = `${bin}:${savedPath}`;
    try {
      const context = makeToolContext({ workingDir: dir, backend: new NoRipgrepBackend() });
      const result = await registry.run('grep', { pattern: 'needle [0-9]+' }, context);
      expect(result.output).toBe('a.txt:1:needle 42\n[1 matching line in 1 file]');
      expect(result.metadata).toMatchObject({ engine: 'grep', regexSyntax: 'extended' });
    } finally {
      process.env.PATH = savedPath;
    }
  });

  it('falls back to grep when QUARRY_NO_RIPGREP=1', async () => {
    put('a.txt', 'needle\n');
    process.env.QUARRY_NO_RIPGREP = '1';
    try {
      const result = await registry.run('grep', { pattern: 'needle' }, makeToolContext({ workingDir: dir }));
      expect(result.metadata.engine).toBe('grep');
      expect(result.output).toBe('a.txt:1:needle\n[1 matching line in 1 file]');
    } finally {
      delete process.env.QUARRY_NO_RIPGREP;
    }
  });
});
