import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { acquireSessionLock, isProcessAlive, processStartTime, releaseSessionLock, SessionLockedError } from '../../src/agent/session-lock.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

/** The session lock itself: many real processes racing for one session, stale locks, reused pids. */

const LOCK_MODULE = pathToFileURL(join(REPO_ROOT, 'dist', 'agent', 'session-lock.js')).href;

/** A pid that belonged to a process which has exited. */
function deadPid(): number {
  return Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout);
}

/**
 * Starts `count` processes that each try to take the lock once; the one that gets it holds it
 * until every other has given up (the test then creates the release file), so a slow start
 * cannot turn into a second, later winner.
 */
async function race(dir: string, count: number): Promise<{ code: number | null; out: string }[]> {
  const release = `${dir}.release`;
  const program = `
    import { existsSync } from 'node:fs';
    import { acquireSessionLock } from ${JSON.stringify(LOCK_MODULE)};
    try {
      acquireSessionLock(${JSON.stringify(dir)}, (holder) => 'held by ' + (holder ? holder.pid : 'unknown'));
      process.stdout.write('won ' + process.pid);
      const poll = setInterval(() => { if (existsSync(${JSON.stringify(release)})) { clearInterval(poll); process.exit(0); } }, 20);
    } catch (error) {
      process.stdout.write('lost: ' + error.message);
      process.exit(2);
    }`;
  let exited = 0;
  const all = Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ code: number | null; out: string }>((resolve, reject) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
          let out = '';
          child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
          const timer = setTimeout(() => {
            child.kill('SIGKILL');
            reject(new Error('a racer did not exit'));
          }, 40_000);
          child.on('close', (code) => {
            clearTimeout(timer);
            exited++;
            resolve({ code, out });
          });
        }),
    ),
  );
  while (exited < count - 1) await new Promise((resolve) => setTimeout(resolve, 20));
  writeFileSync(release, '');
  return all;
}

describe('session lock', () => {
  it.each([
    ['no lock', false],
    ['a stale lock', true],
  ])('of 12 processes racing for a session with %s exactly one gets it, and it is gone after', { timeout: 60_000 }, async (_label, stale) => {
    expect(existsSync(LOCK_MODULE.replace('file://', ''))).toBe(true);
    const dir = makeTempDir('quarry-lock-');
    if (stale) writeFileSync(join(dir, 'lock'), JSON.stringify({ pid: deadPid(), host: hostname(), nonce: 'old', at: '2020-01-01T00:00:00Z' }));
    const results = await race(dir, 12);
    const winners = results.filter((r) => r.code === 0);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.out).toMatch(/^won \d+$/);
    const winnerPid = winners[0]!.out.slice(4);
    for (const loser of results.filter((r) => r.code !== 0)) {
      expect(loser.code).toBe(2);
      expect(loser.out).toMatch(new RegExp(`^lost: held by (${winnerPid}|unknown)$`));
    }
    // The winner exited normally: its exit hook removed the lock, and no takeover left litter.
    expect(readdirSync(dir)).toEqual([]);
  });

  it('takes over a lock whose pid now belongs to another process (start time differs), keeps a live one, and releases only its own', () => {
    const dir = makeTempDir('quarry-lock-');
    const started = processStartTime(process.pid);
    expect(started).toMatch(/^\d+$/);
    expect(isProcessAlive(process.pid, started)).toBe(true);
    expect(isProcessAlive(process.pid, `${started}0`)).toBe(false);
    expect(isProcessAlive(deadPid())).toBe(false);
    // The parent of this test process is alive and is not us.
    const parent = process.ppid;
    writeFileSync(join(dir, 'lock'), JSON.stringify({ pid: parent, started: processStartTime(parent), host: hostname(), nonce: 'live', at: '' }));
    expect(() => acquireSessionLock(dir, (holder) => `held by ${holder?.pid}`)).toThrow(SessionLockedError);
    expect(() => acquireSessionLock(dir, (holder) => `held by ${holder?.pid}`)).toThrow(`held by ${parent}`);
    // Same pid, another start time: a reused pid, so the lock is stale.
    writeFileSync(join(dir, 'lock'), JSON.stringify({ pid: parent, started: '1', host: hostname(), nonce: 'reused', at: '' }));
    acquireSessionLock(dir, () => 'unexpected');
    expect(JSON.parse(readFileSync(join(dir, 'lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    // A lock from another host cannot be checked: it counts as held, and the message says which file to remove.
    releaseSessionLock(dir);
    expect(existsSync(join(dir, 'lock'))).toBe(false);
    writeFileSync(join(dir, 'lock'), JSON.stringify({ pid: 1, host: 'elsewhere.example', nonce: 'remote', at: '' }));
    expect(() => acquireSessionLock(dir, (holder) => `held on ${holder?.host}`)).toThrow('held on elsewhere.example');
    // Releasing a lock that is not ours leaves it alone.
    releaseSessionLock(dir);
    expect(existsSync(join(dir, 'lock'))).toBe(true);
  });

  it('an unreadable lock file is taken for one being written when it is new, and for litter when it is old', () => {
    const dir = makeTempDir('quarry-lock-');
    writeFileSync(join(dir, 'lock'), '');
    expect(() => acquireSessionLock(dir, (holder) => `held by ${holder ? holder.pid : 'a process still writing its lock'}`)).toThrow(
      'a process still writing its lock',
    );
    const old = new Date(Date.now() - 60_000);
    spawnSync('touch', ['-d', old.toISOString(), join(dir, 'lock')]);
    acquireSessionLock(dir, () => 'unexpected');
    expect(JSON.parse(readFileSync(join(dir, 'lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    releaseSessionLock(dir);
    expect(readdirSync(dir)).toEqual([]);
  });
});
