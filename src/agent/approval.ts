import type { Profile } from '../profiles/schema.js';
import { isReadOnlyCall, type Tool } from '../tools/types.js';

/**
 * A call the profile's own guard proves read-only is a read-only call. bash under
 * `shell: restricted` runs only what the restricted-shell policy accepts (inspection commands,
 * no writing option or redirection; README "The restricted shell"), so it cannot change
 * anything. The database tools declare this themselves (callIsReadOnly: a query under
 * `database: readonly` passes the read-only statement check; export_query still writes a file).
 */
export function isReadOnlyUnderProfile(profile: Profile, tool: Tool, args: Record<string, unknown>): boolean {
  if (tool.name === 'bash' && profile.shell === 'restricted') return true;
  return isReadOnlyCall(tool, args);
}

/**
 * Whether a call needs the user's approval under a profile (README "Profiles"), and why.
 * - all: every call.
 * - dangerous: every call that may change something (unrestricted bash, write, edit, export_query,
 *   mutating SQL, delegate, MCP tools); calls that the profile's guards prove read-only
 *   (restricted bash, read-only SQL) do not ask.
 * - granular: the profile's listed tools, and any call whose arguments match one of its patterns.
 * - none: nothing.
 */
export function approvalReason(profile: Profile, tool: Tool, args: Record<string, unknown>): string | null {
  const { mode, tools, patterns } = profile.approval;
  switch (mode) {
    case 'none':
      return null;
    case 'all':
      return `profile "${profile.name}" asks before every tool call`;
    case 'dangerous':
      if (isReadOnlyUnderProfile(profile, tool, args)) return null;
      // A read that writes its result to a file (export_query, profile with output_path) says so.
      if (typeof args.output_path === 'string' && typeof args.operation === 'string') {
        return `${tool.name} ${args.operation} writes a new file (${args.output_path}), and profile "${profile.name}" asks before such calls`;
      }
      return `${tool.name} can change things, and profile "${profile.name}" asks before such calls`;
    case 'granular': {
      if (tools.includes(tool.name)) return `profile "${profile.name}" asks before every ${tool.name} call`;
      const text = argumentText(args);
      const matched = patterns.find((pattern) => new RegExp(pattern, 'i').test(text));
      return matched ? `the arguments match the approval pattern /${matched}/ of profile "${profile.name}"` : null;
    }
  }
}

/** All string values of the arguments, one per line, so patterns see commands and SQL as written. */
function argumentText(args: Record<string, unknown>): string {
  const parts: string[] = [];
  const visit = (value: unknown) => {
    if (typeof value === 'string') parts.push(value);
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === 'object') Object.values(value).forEach(visit);
  };
  visit(args);
  return parts.join('\n');
}
