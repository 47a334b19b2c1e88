import { shellCommandLine, shellQuote } from './shell-quote.js';

/**
 * How an argument vector runs inside a sandbox that only offers "run this command line and
 * give me its text output and exit status" (the SDK's process.executeCommand):
 *
 * - the program runs under GNU `timeout` (which puts it in its own process group), with stdout
 *   and stderr redirected to files in a per-run directory under the sandbox's $TMPDIR;
 * - its group id is written to a file, so a second command (killScript) can kill the whole
 *   group when the caller aborts;
 * - when it ends, the wrapper prints one framed report: a marker line with the exit status and
 *   byte counts, then the head of stdout and of stderr in base64 (binary-safe through a text
 *   channel, and immune to the toolbox merging stderr into the output).
 */

/** Seconds between SIGTERM and SIGKILL for the program's process group. */
export const REMOTE_KILL_GRACE_SECONDS = 2;
/** Extra seconds the outer request may take beyond the program's own timeout. */
export const REMOTE_REQUEST_SLACK_SECONDS = 30;

export interface RemoteRun {
  /** A unique id for this run: names its directory and its report marker. */
  runId: string;
  argv: readonly string[];
  cwd: string;
  env: Record<string, string> | undefined;
  timeoutMs: number | undefined;
  /** Bytes of stdout and stderr to bring back. */
  stdoutLimit: number;
  stderrLimit: number;
}

function runDirExpression(runId: string): string {
  return `"\${TMPDIR:-/tmp}/quarry-exec-${runId}"`;
}

function timeoutSeconds(timeoutMs: number | undefined): string {
  if (timeoutMs === undefined) return '0'; // 0 disables the limit; timeout still gives a process group
  return `${Math.max(0.001, timeoutMs / 1000).toFixed(3)}s`;
}

/** The shell script that runs one argument vector and prints the framed report. */
export function buildRunScript(run: RemoteRun): string {
  const envPrefix = run.env ? ['env', '-i', '--', ...Object.entries(run.env).map(([key, value]) => `${key}=${value}`)] : [];
  const command = shellCommandLine(['timeout', '-k', `${REMOTE_KILL_GRACE_SECONDS}`, timeoutSeconds(run.timeoutMs), ...envPrefix, ...run.argv]);
  const marker = `QUARRY-RUN-${run.runId}`;
  return [
    `D=${runDirExpression(run.runId)}`,
    'mkdir -p "$D" || exit 97',
    ': >"$D/out"; : >"$D/err"',
    // An abort that arrived before the program started wins: it never starts.
    `if [ -e "$D/abort" ]; then s=aborted`,
    `elif cd -- ${shellQuote(run.cwd)} 2>"$D/err"; then`,
    `  ${command} </dev/null >"$D/out" 2>"$D/err" &`,
    '  echo $! >"$D/pid"',
    `  if [ -e "$D/abort" ]; then kill -TERM "-$!" 2>/dev/null; fi`,
    '  wait $!; s=$?',
    'else s=cwd; fi',
    `printf '\\n${marker} %s %s %s\\n' "$s" "$(wc -c <"$D/out")" "$(wc -c <"$D/err")"`,
    `head -c ${run.stdoutLimit} "$D/out" | base64`,
    `printf '${marker}\\n'`,
    `head -c ${run.stderrLimit} "$D/err" | base64`,
    `printf '${marker}-end\\n'`,
    'rm -rf "$D"',
  ].join('\n');
}

/** Kills a run's whole process group: marks it aborted, waits briefly for its pid, TERM, then KILL if it lingers. */
export function buildKillScript(runId: string): string {
  return [
    `D=${runDirExpression(runId)}`,
    'mkdir -p "$D" && : >"$D/abort"',
    'i=0; while [ ! -s "$D/pid" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done',
    'p=$(cat "$D/pid" 2>/dev/null) || exit 0',
    '[ -n "$p" ] || exit 0',
    'kill -TERM "-$p" 2>/dev/null || exit 0',
    `i=0; while kill -0 "-$p" 2>/dev/null && [ $i -lt ${REMOTE_KILL_GRACE_SECONDS * 10} ]; do sleep 0.1; i=$((i+1)); done`,
    'kill -KILL "-$p" 2>/dev/null',
    'exit 0',
  ].join('\n');
}

/** A command line that runs a script with sh, whether or not the toolbox itself uses a shell. */
export function shCommandLine(script: string): string {
  return shellCommandLine(['sh', '-c', script]);
}

export interface RunReport {
  /** The program's exit status, "cwd" when the working directory could not be entered, or "aborted". */
  status: string;
  stdoutBytes: number;
  stderrBytes: number;
  stdout: Buffer;
  stderr: Buffer;
}

/** Parses the framed report out of the command's text output; null when it is missing. */
export function parseRunReport(output: string, runId: string): RunReport | null {
  const marker = `QUARRY-RUN-${runId}`;
  const lines = output.split('\n');
  const head = lines.findIndex((line) => line.startsWith(`${marker} `));
  if (head === -1) return null;
  const fields = lines[head]!.slice(marker.length + 1)
    .trim()
    .split(/\s+/);
  const separator = lines.indexOf(marker, head + 1);
  const end = lines.indexOf(`${marker}-end`, separator + 1);
  if (fields.length !== 3 || separator === -1 || end === -1) return null;
  const decode = (from: number, to: number) => Buffer.from(lines.slice(from, to).join('').replace(/\s+/g, ''), 'base64');
  return {
    status: fields[0]!,
    stdoutBytes: Number(fields[1]),
    stderrBytes: Number(fields[2]),
    stdout: decode(head + 1, separator),
    stderr: decode(separator + 1, end),
  };
}
