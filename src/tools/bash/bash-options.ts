/**
 * What the bash tool is built with (docs/guide/restricted-shell.md): decided once, from the
 * profile, by the toolset (src/agent/toolset.ts), never looked up at call time.
 */

/** What the restricted shell's commands may reach over the network (the profile's shell_network). */
export const SHELL_NETWORK_MODES = ['none', 'loopback', 'all'] as const;
export type ShellNetwork = (typeof SHELL_NETWORK_MODES)[number];

/** The longest a command may run, whatever the profile or the call asks. */
export const MAX_BASH_TIMEOUT_SECONDS = 600;

export interface BashToolOptions {
  /** shell: restricted: only commands the policy allows, secrets removed from the environment. */
  restricted: boolean;
  /** The restricted shell's network (shell_network). */
  network: ShellNetwork;
  /** Seconds a command runs when the call names no timeout (shell_timeout); calls are capped at MAX_BASH_TIMEOUT_SECONDS. */
  timeouts: { defaultSeconds: number };
  /** Run restricted commands under the OS sandbox where the machine supports it (tests turn it off to check the policy alone). */
  osSandbox: boolean;
  /** Commands run in a remote sandbox (the daytona backend), which has its own network. */
  remote?: boolean;
}
