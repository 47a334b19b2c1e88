import type { Message } from '../model/types.js';
import { usageJson } from '../model/types.js';
import type { ChildAgentRequest, ChildAgentResult, ToolContext } from '../tools/core/types.js';
import { Agent, type AgentOptions } from './loop.js';

/**
 * The child-agent runner behind `delegate` (docs/guide/tools.md "delegate"). A child shares the parent's provider,
 * system prompt, profile, working directory, backend (the same sandbox), databases (the same
 * registry tools and connections) and approver; its registry has no delegate tool, so it cannot
 * delegate again. Its session is stored under the parent's (sessions/PARENT/children/CHILD) and
 * the parent's trace links it (tool_end metadata child_session). The parent's cancel signal is
 * the child's, and so are the parent's untrusted sources (the outward-tool rule, src/agent/untrusted.ts).
 */

export const DELEGATE_TOOL_NAME = 'delegate';

/**
 * The parent's conversation without the pending delegate call: the current assistant message
 * keeps its text but not its tool calls, which have no results yet (providers refuse those).
 */
export function conversationForChild(conversation: readonly Message[]): Message[] {
  const history = [...conversation];
  const last = history[history.length - 1];
  if (last?.role === 'assistant' && last.toolCalls?.length) {
    history[history.length - 1] = { role: 'assistant', content: last.content.trim() || '(handing a subtask to a delegate)' };
  }
  return history;
}

/** The extendToolContext of a parent agent: every tool call gets a runChildAgent bound to this run. */
export function childAgentRunner(parent: AgentOptions): (context: ToolContext, conversation: readonly Message[], untrusted: readonly string[]) => ToolContext {
  const childRegistry = parent.workspace.registry.without(DELEGATE_TOOL_NAME);
  return (context, conversation, untrusted) => ({
    ...context,
    runChildAgent: (request: ChildAgentRequest) => runChild(parent, childRegistry, request, conversation, untrusted),
  });
}

async function runChild(
  parent: AgentOptions,
  registry: AgentOptions['workspace']['registry'],
  request: ChildAgentRequest,
  conversation: readonly Message[],
  untrusted: readonly string[],
): Promise<ChildAgentResult> {
  const started = performance.now();
  const session = parent.session.createChild({ profile: parent.workspace.profile.name, model: parent.provider.label, workingDir: parent.workspace.workingDir });
  const { extendToolContext: _none, onEvent: _quiet, messages: _parentMessages, ...shared } = parent;
  const child = new Agent({
    ...shared,
    session,
    workspace: { ...parent.workspace, registry },
    // The outward-tool rule carries over: the parent's instruction may come from untrusted content.
    untrustedSources: [...untrusted],
    ...(request.fullContext ? { messages: conversationForChild(conversation) } : {}),
  });
  const result = await child.run(request.instruction, request.signal);
  return {
    status: result.status,
    text: result.text,
    ...(result.error ? { error: result.error } : {}),
    usage: usageJson(result.usage),
    durationMs: performance.now() - started,
    sessionId: session.id,
    sessionDir: session.dir,
    turns: result.turns,
    toolCalls: result.toolCalls,
  };
}
