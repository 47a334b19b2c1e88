import type { Tool } from './types.js';

/**
 * What a tool can do, as built for a profile (docs/security.md): declared once by the tool's
 * factory from the options the toolset gives it (src/agent/toolset.ts), and read by approval
 * (src/agent/approval.ts), the outward-tool rule (src/agent/untrusted.ts) and the MCP server's
 * annotations (src/mcp/serve.ts), none of which looks at a tool's name or at the profile.
 */
export interface ToolEffects {
  /** Its results carry content someone other than the user may have written (files, rows, command output, a server's answer). */
  reads: boolean;
  /** Can create files (export_query, chart, write). */
  writesFiles: boolean;
  /** Can overwrite or delete what exists (edit, write under file_write: full, unrestricted bash). */
  destructive: boolean;
  /** Can change a database's data or schema. */
  changesDatabase: boolean;
  /** Runs commands on this machine or in a sandbox. */
  runsCommands: boolean;
  /** Opens connections beyond the configured databases (network of the shell, a remote sandbox, a third-party server). */
  reachesNetwork: boolean;
  /** Can carry data out of this machine to somewhere the user has not vouched for (the outward-tool rule). */
  sendsOut: boolean;
  /** Does what a third party says it does: its effects cannot be known here (an MCP server's tool). */
  external: boolean;
  /** Runs a child agent with the other tools (its effects are theirs). */
  delegates: boolean;
  /** Puts a question to the person at quarry's own terminal (ask_user): nothing an MCP client could be served. */
  asksPerson: boolean;
}

const NONE: ToolEffects = {
  reads: false,
  writesFiles: false,
  destructive: false,
  changesDatabase: false,
  runsCommands: false,
  reachesNetwork: false,
  sendsOut: false,
  external: false,
  delegates: false,
  asksPerson: false,
};

export function effects(declared: Partial<ToolEffects>): ToolEffects {
  return { ...NONE, ...declared };
}

/** A tool that only reads (read, grep, glob, list, read_excel). */
export const READ_ONLY_EFFECTS: ToolEffects = effects({ reads: true });

/** A tool that declares nothing is taken to do everything (fail closed). */
const EVERYTHING: ToolEffects = {
  reads: true,
  writesFiles: true,
  destructive: true,
  changesDatabase: true,
  runsCommands: true,
  reachesNetwork: true,
  sendsOut: true,
  external: true,
  delegates: false,
  asksPerson: false,
};

export function effectsOf(tool: Tool): ToolEffects {
  return tool.effects ?? (tool.readOnly ? READ_ONLY_EFFECTS : EVERYTHING);
}

/** Whether any call of the tool can change something (a file, a database, or what a third party holds). */
export function canChange(effects: ToolEffects): boolean {
  return effects.writesFiles || effects.destructive || effects.changesDatabase || effects.external;
}

/**
 * Whether this call changes nothing: the tool can change nothing at all (the restricted shell, whose
 * policy runs only inspection commands), or the tool itself proves this call a read (read-only SQL
 * under `database: readonly`; export_query still writes a file).
 */
export function callChangesNothing(tool: Tool, args: Record<string, unknown>): boolean {
  if (!canChange(effectsOf(tool))) return true;
  return tool.callIsReadOnly ? tool.callIsReadOnly(args) : tool.readOnly;
}

/** The union of several tools' effects (what a delegated child, which has them all, can do). */
export function unionEffects(list: readonly ToolEffects[]): ToolEffects {
  const result = { ...NONE };
  for (const item of list) for (const key of Object.keys(result) as (keyof ToolEffects)[]) result[key] ||= item[key];
  return result;
}

/** The effects left when only the calls that change nothing may run (`quarry mcp` without --yes under `dangerous` approval). */
export function readCallEffects(declared: ToolEffects): ToolEffects {
  return { ...declared, writesFiles: false, destructive: false, changesDatabase: false, external: false };
}

/** One line for `quarry tools` and the docs: "reads, writes files, sends data out". */
export function describeEffects(declared: ToolEffects): string {
  const words: [keyof ToolEffects, string][] = [
    ['reads', 'reads'],
    ['writesFiles', 'writes files'],
    ['destructive', 'overwrites or deletes'],
    ['changesDatabase', 'changes a database'],
    ['runsCommands', 'runs commands'],
    ['reachesNetwork', 'reaches the network'],
    ['sendsOut', 'can send data out'],
    ['external', 'does what a third-party server says'],
    ['delegates', 'runs a child agent'],
  ];
  return (
    words
      .filter(([key]) => declared[key])
      .map(([, word]) => word)
      .join(', ') || 'nothing'
  );
}
