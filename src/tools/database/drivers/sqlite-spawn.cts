// How quarry starts the process SQLite runs in (sqlite-process.ts says why there is one). CommonJS,
// so that the CLI's entry point (src/cli.cts) can start one for `quarry tool sqlite` before it
// loads the rest of quarry (about 30 ms of bundle): that process's own Node start (about 80 ms)
// then overlaps quarry's instead of following it (docs/development/benchmarks.md).
import { type ChildProcess, spawn } from 'node:child_process';

/** Where the entry point leaves the process it started, for the first SQLite connection. */
const SPARE = Symbol.for('quarry.sqlite-spare');

/**
 * What of quarry's environment the process gets. It reads none of quarry's settings (its database
 * comes over the IPC channel), so it gets only what Node, SQLite (its temporary files) and the
 * locale use (the locale categories by name: ssh forwards every LC_* variable, and people pass
 * tokens in them): an API key or a database password in quarry's environment would otherwise sit in
 * this process's /proc/PID/environ for the whole session, readable by the user's other processes
 * (quarry hides its own: docs/security.md).
 */
const KEPT_VARIABLES =
  /^(?:PATH|HOME|TMPDIR|TMP|TEMP|SQLITE_TMPDIR|LANG|LANGUAGE|TZ|NODE_OPTIONS|LC_(?:ALL|CTYPE|NUMERIC|TIME|COLLATE|MONETARY|MESSAGES|PAPER|NAME|ADDRESS|TELEPHONE|MEASUREMENT|IDENTIFICATION))$/;

export function sqliteProcessEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => KEPT_VARIABLES.test(name)));
}

export function spawnSqliteProcess(script: string): ChildProcess {
  return spawn(process.execPath, [script], {
    env: sqliteProcessEnv(),
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'advanced',
    // Its own process group: a Ctrl+C at the terminal is quarry's to handle (it kills this one).
    detached: true,
  });
}

/**
 * Starts a process without a database, ahead of need. Nothing of it keeps quarry alive: a command
 * that ends before any SQLite call (a usage error) exits as before, and the process, whose only
 * handle is its channel to quarry, exits when that closes.
 */
export function startSpareSqliteProcess(script: string): void {
  try {
    const child = spawnSqliteProcess(script);
    child.on('error', () => undefined);
    child.unref();
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
    (child.stderr as { unref?: () => void } | null)?.unref?.();
    (globalThis as Record<symbol, unknown>)[SPARE] = child;
  } catch {
    // The first SQLite call starts one as usual.
  }
}

/** The process started ahead of need, if there is one that still runs; it is handed out once. */
export function takeSpareSqliteProcess(): ChildProcess | null {
  const holder = globalThis as Record<symbol, unknown>;
  const child = holder[SPARE] as ChildProcess | undefined;
  delete holder[SPARE];
  if (!child) return null;
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null && child.connected) return child;
  child.kill('SIGKILL');
  return null;
}
