import { existsSync } from 'node:fs';
import { secretLocations } from '../../security/secret-files.js';
import { probeBubblewrap, type BubblewrapSupport } from './bubblewrap-probe.js';
import type { ShellNetwork } from './bash-options.js';

/**
 * The restricted shell's OS layer (docs/guide/restricted-shell.md), independent of the policy: allowed commands run
 * under bubblewrap with every file system read-only, the network off, a private process
 * namespace (host processes can be listed through a read-only /proc, never signalled), no
 * capabilities beyond reading, and a private writable scratch directory.
 *
 * Decision (issue 6): bwrap is invoked directly rather than through @anthropic-ai/sandbox-runtime.
 * sandbox-runtime (0.0.83 when checked) requires Node >= 22.12 (quarry targets Node 20), wraps bwrap on Linux too, but adds a network proxy, socat
 * and seccomp helpers and a settings file we do not need, is built for the opposite default
 * (a writable project folder), and would put an unstable dependency in front of a security
 * boundary; the flags below are few and each is tested.
 *
 * The network follows the profile's shell_network: `none` gives the command a network namespace
 * of its own (only an unconnected loopback), `loopback` and `all` keep the host's (bubblewrap
 * cannot narrow it to loopback; the policy allows only loopback URLs there: docs/guide/restricted-shell.md).
 *
 * /tmp stays the host's (read-only, so logs and dumps there can be inspected); programs that need
 * scratch space (sort) get TMPDIR on a private tmpfs at /dev/shm.
 */

export const SANDBOX_TMPDIR = '/dev/shm';

function sandboxFlags(cwd: string, network: ShellNetwork): string[] {
  const flags = [
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--tmpfs',
    SANDBOX_TMPDIR,
    '--ro-bind',
    '/proc',
    '/proc',
    '--unshare-pid',
    '--unshare-ipc',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
  ];
  // Credential files (src/security/secret-files.ts) are hidden: an empty file or directory in their place.
  for (const location of secretLocations()) {
    if (!existsSync(location.path)) continue;
    if (location.directory) flags.push('--tmpfs', location.path);
    else flags.push('--ro-bind', '/dev/null', location.path);
  }
  if (network === 'none') flags.push('--unshare-net');
  // As root, keep only the right to read every file (production logs are often root:adm 0640).
  if (process.getuid?.() === 0) flags.push('--cap-add', 'CAP_DAC_READ_SEARCH');
  flags.push('--chdir', cwd);
  return flags;
}

export function bubblewrapSupport(): BubblewrapSupport {
  return probeBubblewrap(sandboxFlags('/', 'none'));
}

/** The argument vector that runs `argv` inside the sandbox, or null when the OS layer is unavailable. */
export function sandboxedArgv(argv: readonly string[], cwd: string, network: ShellNetwork = 'none'): string[] | null {
  const support = bubblewrapSupport();
  if (!support.path) return null;
  return [support.path, ...sandboxFlags(cwd, network), '--', ...argv];
}
