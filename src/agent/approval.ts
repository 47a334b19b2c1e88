import type { Profile } from '../profiles/schema.js';
import { isReadOnlyCall, type Tool } from '../tools/types.js';

/**
 * Whether a call needs the user's approval under a profile (SPEC §4), and why.
 * - all: every call.
 * - dangerous: every call that may change something (bash, write, edit, export_query, delegate, MCP tools):
 *   the tools themselves declare whether a call only reads.
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
      return isReadOnlyCall(tool, args) ? null : `${tool.name} can change things, and profile "${profile.name}" asks before such calls`;
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
