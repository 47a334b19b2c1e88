import { success, failure, ToolError } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';

/** "850 ms", "12.3 s". */
function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

const DELEGATE_PARAMETERS = toolParameters(
  {
    instruction: { type: 'string', minLength: 1, description: 'What the child should do and what it should answer with.' },
    full_context: { type: 'boolean', description: 'Give the child this conversation so far. Default false.' },
  },
  ['instruction'],
);
export type DelegateArgs = ArgsOf<typeof DELEGATE_PARAMETERS>;

/**
 * `delegate` (docs/guide/tools.md "delegate"): a child agent for a focused subtask, with the parent's profile, model,
 * working directory, databases, backend and approvals. The session supplies the child runner
 * through the tool context; a child's registry has no delegate tool, so there is one level only.
 */
export const delegateTool = defineTool({
  name: 'delegate',
  description:
    'Hand a focused subtask to a child agent with the same tools, profile, databases and working directory (but no ' +
    'delegate tool of its own). It starts with only your instruction, or with this conversation so far when ' +
    'full_context is true. Returns its final answer, status, token usage, duration and session id. Several ' +
    'delegate calls in one message run at the same time; use it for independent pieces of work.',
  parameters: DELEGATE_PARAMETERS,
  readOnly: false,
  concurrent: true,
  async run(args, context) {
    if (!context.runChildAgent) {
      throw new ToolError(
        'delegate is not available here: it runs only in an agent run, and a delegated agent cannot delegate again (one level only)',
        'delegate_unavailable',
      );
    }
    const child = await context.runChildAgent({ instruction: args.instruction, fullContext: args.full_context ?? false, signal: context.signal });
    const usage = child.usage;
    const footer =
      `[delegate: ${child.status}${child.error ? ` (${child.error})` : ''}; ${child.turns} turn(s), ${child.toolCalls} tool call(s); ` +
      `${usage.input_tokens} input / ${usage.output_tokens} output tokens; ${formatDuration(child.durationMs)}; session ${child.sessionId}]`;
    const metadata = {
      status: child.status,
      usage,
      duration_ms: Math.round(child.durationMs),
      child_session: child.sessionId,
      child_session_dir: child.sessionDir,
      turns: child.turns,
      tool_calls: child.toolCalls,
    };
    const body = `${child.text.trim() || '(the child gave no answer)'}\n${footer}`;
    return child.status === 'completed' ? success(body, metadata) : failure(body, { ...metadata, error: `child_${child.status}` });
  },
});
