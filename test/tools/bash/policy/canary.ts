import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { LocalBackend } from '../../../../src/backends/local.js';
import { policyEnvironment } from '../../../../src/tools/bash/tool.js';
import { restrictedEnvironment } from '../../../../src/tools/bash/environment.js';
import type { PolicyEnvironment } from '../../../../src/tools/bash/policy/index.js';
import { makeTempDir } from '../../../support/context.js';

/**
 * A directory full of canary files (and a git repository, archives, a script, a read-only file,
 * a symlink and a file named "-i"), a snapshot of everything in it, and a canary process: the
 * restricted shell's tests check both are untouched after every command.
 */

export function makeCanaryDir(): string {
  const dir = makeTempDir('quarry-canary-');
  writeFileSync(join(dir, 'notes.txt'), 'alpha\nbeta\ngamma\nalpha beta\n');
  writeFileSync(join(dir, 'data.csv'), 'id,name,amount\n1,ann,10\n2,bob,20\n3,cy,30\n');
  writeFileSync(
    join(dir, 'data.json'),
    JSON.stringify({
      items: [
        { id: 1, tag: 'x' },
        { id: 2, tag: 'y' },
      ],
    }),
  );
  writeFileSync(join(dir, 'script.sh'), '#!/bin/sh\necho pwned > pwned.txt\n', { mode: 0o755 });
  writeFileSync(join(dir, 'readonly.txt'), 'do not change\n', { mode: 0o444 });
  writeFileSync(join(dir, '-i'), 'a file named like an option\n');
  symlinkSync('notes.txt', join(dir, 'link'));
  mkdirSync(join(dir, 'logs'));
  writeFileSync(join(dir, 'logs', 'app.log'), 'INFO start\nERROR disk full\nINFO done\n');
  writeFileSync(join(dir, 'logs', 'app.log.gz'), gzipSync('gz line 1\ngz line 2\n'));
  execFileSync('tar', ['-cf', 'archive.tar', 'notes.txt', 'data.csv'], { cwd: dir });
  execFileSync('python3', ['-c', 'import zipfile; z = zipfile.ZipFile("bundle.zip", "w"); z.writestr("inside.txt", "zipped\\n"); z.close()'], { cwd: dir });
  const repo = join(dir, 'repo');
  mkdirSync(repo);
  writeFileSync(join(repo, 'README'), 'hello repo\n');
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: repo,
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@e',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@e',
        GIT_CONFIG_GLOBAL: '/dev/null',
      },
      stdio: 'ignore',
    });
  git('init', '-q');
  git('add', 'README');
  git('commit', '-q', '-m', 'initial commit');
  git('tag', 'v1');
  git('status'); // settle the index so that read-only commands find nothing to refresh
  return dir;
}

/** Names, types, sizes, modes, content hashes and link targets of everything under `dir`. */
export function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (path: string, rel: string) => {
    for (const name of readdirSync(path).sort()) {
      const full = join(path, name);
      const key = rel ? `${rel}/${name}` : name;
      const stats = lstatSync(full);
      const mode = (stats.mode & 0o7777).toString(8);
      if (stats.isSymbolicLink()) out[key] = `link ${readlinkSync(full)}`;
      else if (stats.isDirectory()) {
        out[key] = `dir ${mode}`;
        walk(full, key);
      } else out[key] = `file ${mode} ${stats.size} ${createHash('sha256').update(readFileSync(full)).digest('hex')}`;
    }
  };
  walk(dir, '');
  return out;
}

export function startCanaryProcess(): ChildProcess {
  return spawn('sleep', ['3600'], { stdio: 'ignore', detached: true });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The policy's view of this machine from `cwd`, as the bash tool builds it. */
export function localPolicyEnvironment(cwd: string): PolicyEnvironment {
  return policyEnvironment(new LocalBackend(), cwd, restrictedEnvironment(process.env));
}
