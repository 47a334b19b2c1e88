import { chmodSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_EDIT_FILE_BYTES } from '../../../src/tools/edit/tool.js';
import type { ToolCallResult } from '../../../src/tools/core/registry.js';
import { entriesUnder, harness, makeWorld, markRead, withoutRootPrivileges } from '../files/file-write-fixtures.js';

interface Edited {
  result: ToolCallResult;
  /** The file's bytes after the call. */
  after: Buffer;
  /** The file's bytes after the call, as text. */
  text: string;
}

/** Writes `content` to f.txt in a fresh working directory, runs edit on it (as `quarry tool`: no ledger). */
async function editFile(content: string | Buffer, args: { old_string: string; new_string: string; replace_all?: boolean }): Promise<Edited> {
  const world = makeWorld();
  const path = join(world.work, 'f.txt');
  writeFileSync(path, content);
  const result = await harness(world, { mode: 'full', session: false }).call('edit', { path: 'f.txt', ...args });
  const after = readFileSync(path);
  expect(entriesUnder(world.work)).toEqual(['f.txt']);
  return { result, after, text: after.toString('utf8') };
}

describe('edit: exact stage', () => {
  it('replaces a unique match and reports stage, count, lines and the new text', async () => {
    const { result, text } = await editFile('alpha\nbeta\ngamma\n', { old_string: 'beta', new_string: 'BETA\nBETA2' });
    expect(text).toBe('alpha\nBETA\nBETA2\ngamma\n');
    expect(result.ok).toBe(true);
    expect(result.output).toBe('edited f.txt: 1 replacement (exact match) at line 2; 1 line replaced by 2\nLines 2-3 now read:\n     2\tBETA\n     3\tBETA2');
    expect(result.metadata).toMatchObject({ stage: 'exact', replacements: 1, lines: [2], linesBefore: 1, linesAfter: 2 });
  });

  it('takes new_string literally ($& and $1 are not replacement patterns)', async () => {
    const { text } = await editFile('price = 5\n', { old_string: '5', new_string: '$& and $1 $$' });
    expect(text).toBe('price = $& and $1 $$\n');
  });

  it('deletes text when new_string is empty', async () => {
    const { text, result } = await editFile('keep\ndrop me\nkeep too\n', { old_string: 'drop me\n', new_string: '' });
    expect(text).toBe('keep\nkeep too\n');
    expect(result.metadata).toMatchObject({ linesBefore: 1, linesAfter: 0 });
  });

  it('refuses an ambiguous match, listing the lines, and leaves the file alone', async () => {
    const content = 'x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n';
    const { result, text } = await editFile(content, { old_string: 'x = 1', new_string: 'x = 9' });
    expect(result.ok).toBe(false);
    expect(result.output).toBe(
      'old_string matches 3 places in f.txt (exact match), starting at lines 1, 3, 5; nothing was changed. Add surrounding lines to old_string so that it ' +
        'matches exactly one place, or set replace_all: true to replace every one.',
    );
    expect(result.metadata).toMatchObject({ error: 'ambiguous', lines: [1, 3, 5] });
    expect(text).toBe(content);
  });

  it('counts overlapping occurrences as ambiguous ("aa" in "aaa")', async () => {
    const { result, text } = await editFile('aaa\n', { old_string: 'aa', new_string: 'b' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('matches 2 places');
    expect(text).toBe('aaa\n');
  });

  it('replace_all replaces every occurrence, left to right without overlap', async () => {
    const { result, text } = await editFile('x = 1\ny = 2\nx = 1\n', { old_string: 'x = 1', new_string: 'x = 9', replace_all: true });
    expect(text).toBe('x = 9\ny = 2\nx = 9\n');
    expect(result.output.split('\n')[0]).toBe('edited f.txt: 2 replacements (exact match) at lines 1, 3; 2 lines replaced by 2');
    expect(result.metadata).toMatchObject({ replacements: 2, lines: [1, 3] });
    expect((await editFile('aaaa', { old_string: 'aa', new_string: 'b', replace_all: true })).text).toBe('bb');
  });

  it('a weakness of the Python original regression: never replaces the wrong occurrence', async () => {
    // Both blocks match once whitespace is ignored; only the second matches exactly. The exact
    // match decides, and the first block (which a fuzzy search meets first) stays as it was.
    const content = 'def a():\n    total  =  price * qty   \n\ndef b():\n    total = price * qty\n';
    const { text, result } = await editFile(content, { old_string: '    total = price * qty\n', new_string: '    total = price * qty * 2\n' });
    expect(text).toBe('def a():\n    total  =  price * qty   \n\ndef b():\n    total = price * qty * 2\n');
    expect(result.metadata).toMatchObject({ stage: 'exact', lines: [5] });
  });

  it('with several exact matches, does not fall through to a looser stage that would pick one', async () => {
    const content = 'call(a)\ncall(a)\n  call(a)  \n';
    const { result, text } = await editFile(content, { old_string: 'call(a)\n', new_string: 'call(b)\n' });
    expect(result.ok).toBe(false);
    expect(result.output).toContain('matches 2 places');
    expect(text).toBe(content);
  });
});

describe('edit: whitespace-normalised stage', () => {
  it('ignores trailing whitespace and repeated spaces inside lines, on whole lines', async () => {
    const content = 'a = 1\nif  (x)   {  \n\treturn  y;\n}\nb = 2\n';
    const { result, text } = await editFile(content, { old_string: 'if (x) {\n\treturn y;\n}', new_string: 'if (x) {\n\treturn z;\n}' });
    expect(result.ok).toBe(true);
    expect(text).toBe('a = 1\nif (x) {\n\treturn z;\n}\nb = 2\n');
    expect(result.output.split('\n')[0]).toBe('edited f.txt: 1 replacement (whitespace-normalised match) at line 2; 3 lines replaced by 3');
    expect(result.metadata.stage).toBe('whitespace');
  });

  it('keeps leading indentation significant (a different indent is a stage-3 match)', async () => {
    const { result } = await editFile('    value  =  1\n', { old_string: '  value = 1', new_string: '  value = 2' });
    expect(result.metadata.stage).toBe('indentation');
  });

  it('refuses several whitespace-normalised matches with their lines', async () => {
    const content = 'x  = 1\nother\nx =  1\n';
    const { result, text } = await editFile(content, { old_string: 'x = 1', new_string: 'x = 2' });
    expect(result.output).toContain('matches 2 places in f.txt (whitespace-normalised match), starting at lines 1, 3');
    expect(text).toBe(content);
  });

  it('an old_string ending in a newline takes the line break with it, as in the exact stage', async () => {
    const { text } = await editFile('one\ntwo  \nthree\n', { old_string: 'two\n', new_string: '' });
    expect(text).toBe('one\nthree\n');
  });
});

describe('edit: indentation-flexible stage', () => {
  it("re-indents the replacement with the file's tabs, keeping relative indentation", async () => {
    const content = 'func main() {\n\tif ok {\n\t\trun()\n\t}\n}\n';
    const { result, text } = await editFile(content, {
      old_string: 'if ok {\n    run()\n}',
      new_string: 'if ok {\n    run()\n    if again {\n        run()\n    }\n}',
    });
    expect(text).toBe('func main() {\n\tif ok {\n\t\trun()\n\t\tif again {\n\t\t\trun()\n\t\t}\n\t}\n}\n');
    expect(result.metadata.stage).toBe('indentation');
    expect(result.output.split('\n')[0]).toBe(
      'edited f.txt: 1 replacement (indentation-flexible match, re-indented to the file) at line 2; 3 lines replaced by 6',
    );
  });

  it('re-indents to a file indented with two spaces when the model used four', async () => {
    const content = 'class A:\n  def f(self):\n    return 1\n';
    const { text, result } = await editFile(content, {
      old_string: '    def f(self):\n        return 1',
      new_string: '    def f(self):\n        if self.x:\n            return 2\n        return 1',
    });
    expect(result.metadata.stage).toBe('indentation');
    expect(text).toBe('class A:\n  def f(self):\n    if self.x:\n      return 2\n    return 1\n');
  });

  it('handles new_string indented less than old_string', async () => {
    const content = 'root:\n\tchild:\n\t\tleaf: 1\n';
    const { text } = await editFile(content, { old_string: '  child:\n    leaf: 1', new_string: '  child:\n    leaf: 1\nsibling: 2' });
    expect(text).toBe('root:\n\tchild:\n\t\tleaf: 1\nsibling: 2\n');
  });

  it('nests kept lines deeper when new_string wraps them in a block', async () => {
    const content = 'def run():\n  load()\n  save()\n';
    const { text } = await editFile(content, { old_string: 'load()\nsave()', new_string: 'if ready:\n    load()\n    save()' });
    expect(text).toBe('def run():\n  if ready:\n    load()\n    save()\n');
  });

  it("restores the file's nesting when old_string and new_string lost all indentation", async () => {
    const content = 'def f():\n\tif x:\n\t\tgo()\n\treturn 1\n';
    const { text, result } = await editFile(content, { old_string: 'if x:\ngo()\nreturn 1', new_string: 'if x:\ngo()\nlog()\nreturn 1' });
    expect(result.metadata.stage).toBe('indentation');
    expect(text).toBe('def f():\n\tif x:\n\t\tgo()\n\tlog()\n\treturn 1\n');
  });

  it('does not match an old_string of blank lines loosely', async () => {
    const content = 'a\n\n\nb\n';
    const { result, text } = await editFile(content, { old_string: '   \n   ', new_string: 'x' });
    expect(result.ok).toBe(false);
    expect(text).toBe(content);
  });
});

describe('edit: line endings, BOM and tabs', () => {
  it('keeps CRLF line endings byte for byte, also for new lines (a weakness of the Python original regression)', async () => {
    const { after } = await editFile('one\r\ntwo\r\nthree\r\n', { old_string: 'two', new_string: 'TWO\nTWO-B' });
    expect(after).toEqual(Buffer.from('one\r\nTWO\r\nTWO-B\r\nthree\r\n'));
  });

  it('matches an LF old_string against a CRLF file, and a CRLF old_string too', async () => {
    const crlf = 'a\r\nb\r\nc\r\n';
    expect((await editFile(crlf, { old_string: 'a\nb\n', new_string: 'x\n' })).after).toEqual(Buffer.from('x\r\nc\r\n'));
    expect((await editFile(crlf, { old_string: 'b\r\nc', new_string: 'y\r\nz' })).after).toEqual(Buffer.from('a\r\ny\r\nz\r\n'));
  });

  it('keeps a CRLF file CRLF through the whitespace and indentation stages', async () => {
    const whitespace = await editFile('x:\r\nval  =  1   \r\nend\r\n', { old_string: 'val = 1', new_string: 'val = 1\nmore = 2' });
    expect(whitespace.result.metadata.stage).toBe('whitespace');
    expect(whitespace.after).toEqual(Buffer.from('x:\r\nval = 1\r\nmore = 2\r\nend\r\n'));
    const indentation = await editFile('x:\r\n\tval  =  1   \r\nend\r\n', { old_string: 'val = 1', new_string: 'val = 1\n  more = 2' });
    expect(indentation.result.metadata.stage).toBe('indentation');
    // "more" is one step deeper than "val" in new_string, so one tab deeper in the file.
    expect(indentation.after).toEqual(Buffer.from('x:\r\n\tval = 1\r\n\t\tmore = 2\r\nend\r\n'));
  });

  it('leaves every other line ending of a mixed file exactly as it was', async () => {
    const { after } = await editFile('a\r\nb\nc\r\nd\n', { old_string: 'b\nc', new_string: 'B\nC' });
    expect(after).toEqual(Buffer.from('a\r\nB\nC\r\nd\n'));
  });

  it('keeps a UTF-8 BOM', async () => {
    const content = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('name,city\r\nZoë,Köln\r\n')]);
    const { after } = await editFile(content, { old_string: 'Köln', new_string: 'Zürich' });
    expect(after).toEqual(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('name,city\r\nZoë,Zürich\r\n')]));
  });

  it('keeps tabs inside and around the edited text', async () => {
    const { after } = await editFile('\tkey\t=\tvalue\n', { old_string: 'value', new_string: 'other\tvalue' });
    expect(after).toEqual(Buffer.from('\tkey\t=\tother\tvalue\n'));
  });

  it('keeps a file without a final newline without one', async () => {
    const { after } = await editFile('a\nb', { old_string: 'b', new_string: 'c' });
    expect(after).toEqual(Buffer.from('a\nc'));
  });
});

describe('edit: when nothing matches', () => {
  it('shows the closest region with line numbers and the first differing line', async () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`);
    lines[14] = 'total = compute(price, qty)';
    lines[15] = 'print(total)';
    const content = `${lines.join('\n')}\n`;
    const { result, text } = await editFile(content, { old_string: 'total = compute(price, quantity)\nprint(total)', new_string: 'x' });
    expect(result.ok).toBe(false);
    expect(result.metadata.error).toBe('not_found');
    expect(result.output).toBe(
      [
        'old_string was not found in f.txt (no exact, whitespace-normalised or indentation-flexible match); nothing was changed.',
        'The closest region is lines 13-18:',
        '    13\tline 13',
        '    14\tline 14',
        '    15\ttotal = compute(price, qty)',
        '    16\tprint(total)',
        '    17\tline 17',
        '    18\tline 18',
        'First difference: file line 15 is "total = compute(price, qty)" but old_string line 1 is "total = compute(price, quantity)".',
      ].join('\n'),
    );
    expect(text).toBe(content);
  });

  it('finds the closest region by similarity when no line matches verbatim', async () => {
    const { result } = await editFile('alpha\nconst threshold = 0.75;\nomega\n', { old_string: 'const threshold = 0.5;', new_string: 'x' });
    expect(result.output).toContain('The closest region is lines 1-3:');
    expect(result.output).toContain('First difference: file line 2 is "const threshold = 0.75;"');
  });

  it('says so when nothing resembles old_string', async () => {
    const { result } = await editFile('alpha\nbeta\n', { old_string: 'SELECT * FROM orders WHERE id = 7', new_string: 'x' });
    expect(result.output).toContain('Nothing in the file resembles old_string; read the file again to see its current content.');
  });

  it('points out line-number prefixes copied from read', async () => {
    const { result } = await editFile('alpha\nbeta\n', { old_string: '     1\talpha\n     2\tbeta', new_string: 'x' });
    expect(result.output).toContain('old_string seems to start its lines with line numbers from read: leave them out.');
  });
});

describe('edit: refusals', () => {
  it('refuses an empty old_string and an unchanged new_string', async () => {
    const empty = await editFile('a\n', { old_string: '', new_string: 'b' });
    expect(empty.result.output).toMatch(/^old_string is empty; give the text to replace/);
    const same = await editFile('a\n', { old_string: 'a', new_string: 'a' });
    expect(same.result.output).toBe('old_string and new_string are identical; nothing to change');
    expect(same.text).toBe('a\n');
  });

  it('refuses binary and non-UTF-8 files without touching them', async () => {
    const binary = Buffer.from([0x61, 0x00, 0x62, 0x0a]);
    const b = await editFile(binary, { old_string: 'a', new_string: 'c' });
    expect(b.result.output).toBe('f.txt looks binary (it contains NUL bytes); edit changes text files only');
    expect(b.after).toEqual(binary);
    const latin1 = Buffer.from('caf\xe9 au lait\n', 'latin1');
    const l = await editFile(latin1, { old_string: 'lait', new_string: 'sucre' });
    expect(l.result.output).toContain('is not valid UTF-8 text');
    expect(l.after).toEqual(latin1);
  });

  it(`refuses files over ${MAX_EDIT_FILE_BYTES} bytes with the limit in the message`, async () => {
    const world = makeWorld();
    const path = join(world.work, 'big.log');
    writeFileSync(path, 'needle\n');
    truncateSync(path, MAX_EDIT_FILE_BYTES + 1);
    const result = await harness(world, { mode: 'full', session: false }).call('edit', { path: 'big.log', old_string: 'needle', new_string: 'x' });
    expect(result.output).toBe("big.log is 10.0 MB, over edit's limit of 10.0 MB; change it with a shell command (e.g. sed) instead");
    expect(statSync(path).size).toBe(MAX_EDIT_FILE_BYTES + 1);
  });

  it('refuses a missing file and a directory', async () => {
    const world = makeWorld();
    mkdirSync(join(world.work, 'dir'));
    const { call } = harness(world, { mode: 'full', session: false });
    expect((await call('edit', { path: 'nope.txt', old_string: 'a', new_string: 'b' })).output).toBe(
      'nope.txt does not exist; edit changes existing files (use write to create one)',
    );
    expect((await call('edit', { path: 'dir', old_string: 'a', new_string: 'b' })).output).toBe('dir is a directory; give the path of a file');
  });

  it('refuses to run in a create-only profile', async () => {
    const world = makeWorld();
    writeFileSync(join(world.work, 'a.txt'), 'a');
    const result = await harness(world, { mode: 'create-only', session: false }).call('edit', { path: 'a.txt', old_string: 'a', new_string: 'b' });
    expect(result.output).toContain('edit is not allowed: it needs file_write: full');
    expect(readFileSync(join(world.work, 'a.txt'), 'utf8')).toBe('a');
  });
});

describe('edit: read-before-write and the file on disk', () => {
  it('in a session, refuses an unread file, works after a read, and refuses after an outside change', async () => {
    const world = makeWorld();
    const path = join(world.work, 'a.py');
    writeFileSync(path, 'x = 1\n');
    const { call, context } = harness(world, { mode: 'full', session: true });
    const unread = await call('edit', { path: 'a.py', old_string: 'x = 1', new_string: 'x = 2' });
    expect(unread.output).toBe(`refused: ${path} exists and has not been read in this session; read it first (read or grep), then retry`);
    expect(readFileSync(path, 'utf8')).toBe('x = 1\n');

    await markRead(context, path);
    expect((await call('edit', { path: 'a.py', old_string: 'x = 1', new_string: 'x = 2' })).ok).toBe(true);
    // Its own edit is known to the ledger: a second edit needs no new read.
    expect((await call('edit', { path: 'a.py', old_string: 'x = 2', new_string: 'x = 3' })).ok).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe('x = 3\n');

    writeFileSync(path, 'x = 3\ny = 4\n');
    utimesSync(path, new Date(), new Date(Date.now() + 5000));
    const changed = await call('edit', { path: 'a.py', old_string: 'x = 3', new_string: 'x = 5' });
    expect(changed.output).toContain('changed on disk since it was read in this session');
    expect(readFileSync(path, 'utf8')).toBe('x = 3\ny = 4\n');
  });

  it('edits the target of a symlink, keeps the link and the file mode', async () => {
    const world = makeWorld();
    const target = join(world.work, 'real.sh');
    writeFileSync(target, '#!/bin/sh\necho old\n');
    chmodSync(target, 0o750);
    symlinkSync('real.sh', join(world.work, 'link.sh'));
    const result = await harness(world, { mode: 'full', session: false }).call('edit', { path: 'link.sh', old_string: 'old', new_string: 'new' });
    expect(result.ok).toBe(true);
    expect(lstatSync(join(world.work, 'link.sh')).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('#!/bin/sh\necho new\n');
    expect(statSync(target).mode & 0o777).toBe(0o750);
  });

  it('a failed write (read-only directory) leaves the file byte-identical and no temporary file', async () => {
    const world = makeWorld();
    const dir = join(world.work, 'locked');
    mkdirSync(dir);
    const path = join(dir, 'a.txt');
    const original = Buffer.from('\ufeffkeep\r\nme\r\n', 'utf8');
    writeFileSync(path, original);
    chmodSync(path, 0o666);
    chmodSync(dir, 0o555);
    const { call } = harness(world, { mode: 'full', session: false });
    const result = await withoutRootPrivileges(world.root, () => call('edit', { path: 'locked/a.txt', old_string: 'keep', new_string: 'lose' }));
    chmodSync(dir, 0o755);
    expect(result.output).toBe('could not write locked/a.txt: permission denied (the file or its directory is not writable); no file was changed');
    expect(readFileSync(path)).toEqual(original);
    expect(entriesUnder(dir)).toEqual(['a.txt']);
  });
});
