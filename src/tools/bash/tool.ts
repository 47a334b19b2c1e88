import { MAX_BASH_TIMEOUT_SECONDS, type BashToolOptions, type ShellNetwork } from './bash-options.js';
import { HeadTailBuffer } from './head-tail-buffer.js';
import { formatBytes, resolveToolPath } from '../core/paths.js';
import { isInside } from '../../security/paths.js';
import { decodeBytesVisibly } from '../../backends/names.js';
import { restrictedEnvironment, unrestrictedEnvironment } from './environment.js';
import { checkRestrictedCommand, staticRefusal, type PolicyEnvironment } from './policy/index.js';
import { bubblewrapSupport, SANDBOX_TMPDIR, sandboxedArgv } from './sandbox.js';
import { success, failure, ToolError, type Tool, type ToolContext } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';
import { effects, type ToolEffects } from '../core/effects.js';

/**
 * The bash tool (docs/guide/tools.md, bash). Restricted mode (docs/guide/restricted-shell.md) runs a command only when the policy allows
 * it, and then inside the OS sandbox where the machine has one, with secrets removed from the
 * environment. Both modes: no terminal (stdin is /dev/null, a new session), stderr
 * joined to stdout in the order written, the whole process group killed on timeout or cancel,
 * and only the head and tail of the output kept in memory.
 */

export { MAX_BASH_TIMEOUT_SECONDS, type BashToolOptions } from './bash-options.js';
/** Output kept from the start and from the end of what a command prints; the middle is counted and dropped. */
export const BASH_OUTPUT_HEAD_BYTES = 16 * 1024;
export const BASH_OUTPUT_TAIL_BYTES = 16 * 1024;

/**
 * Run before a restricted command, on its line: stderr joins stdout, and file patterns never
 * expand to names starting with "-" (which would be read as options).
 */
const RESTRICTED_PRELUDE = "exec 2>&1; GLOBIGNORE='-*:*/-*'; shopt -u dotglob; ";

function restrictedArgv(command: string): string[] {
  return ['/bin/bash', '-c', RESTRICTED_PRELUDE + command];
}

/** `sh` joins stderr to stdout and hands the command to bash untouched (so bash's line numbers stay right). */
function unrestrictedArgv(command: string): string[] {
  return ['/bin/sh', '-c', 'exec 2>&1; exec "$0" "$@"', '/bin/bash', '-c', command];
}

export function bashDescription(osLayerWanted = true): string {
  const osLayer =
    osLayerWanted && bubblewrapSupport().path !== null
      ? "OS layer active: commands run under bubblewrap with every file system read-only, the network as the profile's shell_network allows (none by " +
        'default) and no access to other processes.'
      : `OS layer NOT active (${osLayerWanted ? bubblewrapSupport().reason : 'turned off'}): only the command check protects the system.`;
  return [
    `Run a bash command and return JSON {"output", "exit_code", "duration_seconds"}; stdout and stderr are interleaved in the order written.`,
    `No terminal: stdin is empty and interactive programs cannot prompt. Timeout: the profile's shell_timeout by default, at most ` +
      `${MAX_BASH_TIMEOUT_SECONDS} s; on timeout the whole process group is killed and the output so far is returned.`,
    `Output: the first ${formatBytes(BASH_OUTPUT_HEAD_BYTES)} and the last ${formatBytes(BASH_OUTPUT_TAIL_BYTES)} are kept, with a marker saying how much ` +
      `was dropped in between; filter with head, tail or grep to see a specific part.`,
    `working_dir (optional) is resolved against the session's working directory and must exist.`,
    `In a restricted profile (shell: restricted) only read-only inspection runs: plain commands joined by |, &&, ||, ;, also inside if/while, for NAME in ` +
      `WORDS loops and while read NAME loops fed by < FILE or a pipe, with $(...) and <(...) whose output only reaches commands harmless with any ` +
      `arguments, input from a file (< FILE), and no other $-expansions, redirections (except to /dev/null and 2>&1), subshells or heredocs; allowed ` +
      `commands include cat, less, head, tail, grep, rg, find (no -delete; -exec only with grep/cat/wc/...), ls, stat, file, wc, du, df, sort (no -o), ` +
      `uniq, cut, tr, awk (no system/pipes/redirection), sed (no -i, w or e), jq, diff, xxd, od, md5sum, sha256sum, zcat, gzip -l, tar -t, unzip -l, git ` +
      `log/show/diff/status/blame/grep/remote -v/stash list/config --get, ps, top -b -n 1, env, date, xargs grep, journalctl, systemctl ` +
      `status/show/list-units, ss, ip addr/route/link, lsof, dmesg, zgrep; docker/podman reads and curl GET need shell_network loopback, kubectl reads all; ` +
      `refusals say which word or option was refused and why. File patterns never match names starting with "-". Secrets (API keys, tokens, passwords) are ` +
      `removed from the environment. ${osLayer}`,
  ].join('\n');
}

async function resolveWorkingDir(args: BashArgs, context: ToolContext, restricted: boolean): Promise<string> {
  if (args.working_dir === undefined) return context.workingDir;
  const path = await resolveToolPath(context.backend, context.workingDir, args.working_dir);
  const found = await context.backend.stat(path);
  if (!found) throw new ToolError(`bash: working_dir ${args.working_dir} does not exist (resolved to ${path})`, 'not_found');
  if (found.type !== 'directory') throw new ToolError(`bash: working_dir ${args.working_dir} is not a directory`, 'not_a_directory');
  if (restricted && isInside('/proc', await context.backend.realpath(path))) {
    throw new ToolError('bash: working_dir under /proc is refused in the restricted shell (process environments hold secrets)', 'refused');
  }
  return path;
}

/** The seconds git may take to list a repository's configuration before a restricted git command. */
const GIT_CONFIG_PROBE_TIMEOUT_MS = 10_000;

/** Output bound and time limit of the search for links below a command's directories (without the OS layer). */
const LINK_SEARCH_TIMEOUT_MS = 10_000;
const LINK_SEARCH_MAX_BYTES = 4 * 1024 * 1024;

/**
 * What the policy may look at, on the backend that will run the command, with the environment
 * the command will get; `osLayer` false adds the search for links inside trees (docs/guide/restricted-shell.md: without
 * bubblewrap).
 */
export function policyEnvironment(
  backend: ToolContext['backend'],
  cwd: string,
  env: Record<string, string>,
  network: ShellNetwork = 'none',
  osLayer = true,
): PolicyEnvironment {
  return {
    cwd,
    network,
    ...(osLayer
      ? {}
      : {
          async findLinks(roots: readonly string[]) {
            try {
              const result = await backend.execFile(['find', '-P', ...roots, '-type', 'l', '-printf', '%p\\0%Y\\0'], {
                cwd: '/',
                env,
                timeoutMs: LINK_SEARCH_TIMEOUT_MS,
                maxOutputBytes: LINK_SEARCH_MAX_BYTES,
              });
              if (result.timedOut) return { error: `the search took more than ${LINK_SEARCH_TIMEOUT_MS / 1000} s` };
              if (result.stdout.length >= LINK_SEARCH_MAX_BYTES) return { error: 'too many links' };
              const fields = result.stdout.toString().split('\0');
              const links: Array<{ path: string; type: string }> = [];
              for (let i = 0; i + 1 < fields.length; i += 2) links.push({ path: fields[i]!, type: fields[i + 1]! });
              return links;
            } catch (error) {
              return { error: error instanceof Error ? error.message : String(error) };
            }
          },
        }),
    realpath: (path) => backend.realpath(path).catch(() => null),
    async gitConfigKeys(directory, directories) {
      const argv = ['git', ...directories.flatMap((dir) => ['-C', dir]), 'config', '--list', '--name-only', '-z'];
      try {
        const result = await backend.execFile(argv, { cwd: directory, env, timeoutMs: GIT_CONFIG_PROBE_TIMEOUT_MS, maxOutputBytes: 1024 * 1024 });
        if (result.exitCode !== 0) return { error: result.stderr.toString().trim() || `git config exited with ${result.exitCode}` };
        return result.stdout
          .toString()
          .split('\0')
          .filter((key) => key !== '');
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
    },
  };
}

const BASH_PARAMETERS = toolParameters(
  {
    command: { type: 'string', minLength: 1, description: 'The bash command line to run.' },
    working_dir: { type: 'string', description: "Directory to run in, relative to the session's working directory (default: the working directory)." },
    timeout: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_BASH_TIMEOUT_SECONDS,
      description: `Seconds before the command is killed (default: the profile's shell_timeout; at most ${MAX_BASH_TIMEOUT_SECONDS}).`,
    },
  },
  ['command'],
);
export type BashArgs = ArgsOf<typeof BASH_PARAMETERS>;

/** Commands that show the network: under shell_network none they see the sandbox's empty namespace, not this host's. */
const NETWORK_VIEW_COMMAND = /(^|[;&|(`\n]|\$\()\s*(ss|ip|netstat|ifconfig|route|arp)(?=$|[\s;&|)])/;
export const SANDBOX_NETWORK_NOTE =
  "this shell runs in an empty network namespace (the profile's shell_network: none), so ss, ip and netstat show the sandbox's " +
  "network (only lo, no sockets), not this host's: an empty list here does not mean that nothing listens on the host. A profile with " +
  "shell_network: loopback or all shows the host's sockets; lsof -i and /proc/PID/fd show processes' sockets here.";
/**
 * The restricted shell runs only inspection commands (docs/guide/restricted-shell.md): it changes nothing, and
 * reaches out only as far as its shell_network lets it. Unrestricted, or in a remote sandbox, it can do anything.
 */
function bashEffects(options: BashToolOptions): ToolEffects {
  const outward = !options.restricted || options.network !== 'none' || options.remote === true;
  if (options.restricted) return effects({ reads: true, runsCommands: true, reachesNetwork: outward, sendsOut: outward });
  return effects({ reads: true, runsCommands: true, writesFiles: true, destructive: true, changesDatabase: true, reachesNetwork: true, sendsOut: true });
}

export function createBashTool(options: BashToolOptions): Tool {
  return defineTool({
    name: 'bash',
    get description() {
      return bashDescription(options.osSandbox);
    },
    parameters: BASH_PARAMETERS,
    readOnly: false,
    effects: bashEffects(options),
    async run(args, context) {
      const { restricted, network } = options;
      if (restricted) {
        // Refuse what needs no file system before touching the backend (or creating a sandbox).
        const refusal = await staticRefusal(args.command, network);
        if (refusal) throw new ToolError(`bash: refused by the restricted shell: ${refusal}`, 'refused');
      }
      const cwd = await resolveWorkingDir(args, context, restricted);
      let argv = restricted ? restrictedArgv(args.command) : unrestrictedArgv(args.command);
      let sandboxed = false;
      if (restricted && options.osSandbox && context.backend.name === 'local') {
        const wrapped = sandboxedArgv(argv, cwd, network);
        if (wrapped) {
          argv = wrapped;
          sandboxed = true;
        }
      }
      // The backend's own environment: a remote sandbox never receives this machine's variables.
      const baseEnv = await context.backend.environment();
      const env = restricted ? restrictedEnvironment(baseEnv, sandboxed ? { TMPDIR: SANDBOX_TMPDIR } : {}) : unrestrictedEnvironment(baseEnv);
      if (restricted) {
        const physicalCwd = await context.backend.realpath(cwd);
        const decision = await checkRestrictedCommand(args.command, policyEnvironment(context.backend, physicalCwd, env, network, sandboxed));
        if (!decision.allowed) throw new ToolError(`bash: refused by the restricted shell: ${decision.reason}`, 'refused');
      }
      const timeoutSeconds = Math.min(args.timeout ?? options.timeouts.defaultSeconds, MAX_BASH_TIMEOUT_SECONDS);
      const output = new HeadTailBuffer(BASH_OUTPUT_HEAD_BYTES, BASH_OUTPUT_TAIL_BYTES);
      const result = await context.backend.execFile(argv, {
        cwd,
        env,
        timeoutMs: timeoutSeconds * 1000,
        signal: context.signal,
        maxOutputBytes: 0, // everything goes through onStdout into the bounded buffer
        onStdout: (chunk) => output.push(chunk),
      });
      // Only the sandbox itself writes to stderr (the command's stderr is joined to stdout).
      if (result.stderr.length > 0) output.push(result.stderr);
      let text = decodeBytesVisibly(
        output.render(
          (dropped) =>
            `\n[... ${formatBytes(dropped)} (${dropped} bytes) of output dropped here; showing the first ${formatBytes(BASH_OUTPUT_HEAD_BYTES)} and the ` +
            `last ${formatBytes(BASH_OUTPUT_TAIL_BYTES)} ...]\n`,
        ),
      );
      if (result.timedOut) text += `\n[timed out after ${timeoutSeconds} s: the command and all its child processes were killed]`;
      if (result.aborted) text += '\n[cancelled: the command and all its child processes were killed]';
      const exitCode = result.timedOut ? 124 : result.aborted ? 130 : result.exitCode;
      // The note goes beside the output, which stays exactly what the command printed.
      const note = sandboxed && network === 'none' && NETWORK_VIEW_COMMAND.test(args.command) ? { note: SANDBOX_NETWORK_NOTE } : {};
      const body = JSON.stringify({ output: text, exit_code: exitCode, duration_seconds: Math.round(result.durationMs) / 1000, ...note });
      const metadata = { exit_code: exitCode, output_bytes: output.total, dropped_bytes: output.dropped, sandboxed, timed_out: result.timedOut };
      return result.timedOut || result.aborted ? failure(body, { ...metadata, error: result.timedOut ? 'timeout' : 'cancelled' }) : success(body, metadata);
    },
  });
}
