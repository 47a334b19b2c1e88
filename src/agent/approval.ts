import type { ApprovalPolicy } from '../profiles/schema.js';
import { callChangesNothing, canChange, effectsOf } from '../tools/core/effects.js';
import type { Tool } from '../tools/core/types.js';

/** What approval reads of a profile: its name (for messages) and its approval policy, nothing else. */
export interface ApprovalRules {
  name: string;
  approval: ApprovalPolicy;
}

/**
 * Whether a call needs the user's approval under a profile (docs/guide/profiles.md), and why.
 * - all: every call.
 * - dangerous: every call that may change something, as the tool's declared effects say (unrestricted
 *   bash, write, edit, export_query, mutating SQL, delegate, MCP tools); calls that change nothing
 *   (the restricted shell, read-only SQL) do not ask.
 * - granular: the profile's listed tools, any call whose arguments match one of its patterns, and
 *   whatever the list, third-party (MCP) tools that can send data out and delegate to a child that can change things.
 * - none: nothing.
 */
export function approvalReason(profile: ApprovalRules, tool: Tool, args: Record<string, unknown>): string | null {
  const { mode, tools, patterns } = profile.approval;
  switch (mode) {
    case 'none':
      return null;
    case 'all':
      return `profile "${profile.name}" asks before every tool call`;
    case 'dangerous':
      if (callChangesNothing(tool, args)) return null;
      // A read that writes its result to a file (export_query, profile with output_path) says so.
      if (typeof args.output_path === 'string' && typeof args.operation === 'string') {
        return `${tool.name} ${args.operation} writes a new file (${args.output_path}), and profile "${profile.name}" asks before such calls`;
      }
      return `${tool.name} can change things, and profile "${profile.name}" asks before such calls`;
    case 'granular': {
      if (tools.includes(tool.name)) return `profile "${profile.name}" asks before every ${tool.name} call`;
      const declared = effectsOf(tool);
      // What a list of names cannot foresee: a third party's tool that can send data out (MCP), a child agent that can change things.
      if (declared.external && declared.sendsOut)
        return `${tool.name} is a third-party tool that can send data out of this machine, and profile "${profile.name}" asks before such calls`;
      if (declared.delegates && (declared.sendsOut || canChange(declared)))
        return `${tool.name} runs a child agent whose tools can change things or send data out, and profile "${profile.name}" asks before such calls`;
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
