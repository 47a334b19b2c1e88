import { capOutput, sanitizeOutput } from './sanitize.js';
import { ToolError, type Tool, type ToolContext, type ToolResult } from './types.js';
import { validateArguments } from './validate.js';

/** What every caller (agent loop, `quarry tool`) gets back: output already sanitised and capped. */
export interface ToolCallResult {
  ok: boolean;
  output: string;
  metadata: Record<string, unknown>;
}

export class UnknownToolError extends Error {
  override name = 'UnknownToolError';
}

/**
 * The one place where tool calls are validated, run, sanitised and capped. Generic: it knows
 * no tool by name. Which tools a session gets is decided above it (agent/toolset.ts).
 */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  register(tool: Tool): void {
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
    this.tools.set(tool.name, tool);
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  names(): string[] {
    return [...this.tools.keys()];
  }

  list(): Tool[] {
    return [...this.tools.values()];
  }

  /** A copy without the named tools (a delegated child gets no delegate tool). */
  without(...names: string[]): ToolRegistry {
    const copy = new ToolRegistry();
    for (const tool of this.tools.values()) if (!names.includes(tool.name)) copy.register(tool);
    return copy;
  }

  /** Validates and runs one call. Never throws for a tool's own failure: that is a failed result. */
  async run(name: string, rawArgs: unknown, context: ToolContext): Promise<ToolCallResult> {
    const tool = this.tools.get(name);
    if (!tool) {
      return finish({
        ok: false,
        output: `unknown tool "${name}"; available tools: ${this.names().join(', ') || '(none)'}`,
        metadata: { error: 'unknown_tool' },
      });
    }
    const validation = await validateArguments(tool.validationParameters ?? tool.parameters, rawArgs);
    if (!validation.ok) {
      return finish({ ok: false, output: `${name}: ${validation.message}`, metadata: { error: 'invalid_arguments' } });
    }
    if (context.signal.aborted) {
      return finish({ ok: false, output: `${name}: cancelled before it started`, metadata: { error: 'cancelled' } });
    }
    let result: ToolResult;
    try {
      result = await tool.run(validation.args, context);
    } catch (error) {
      result = errorToResult(name, error, context.signal);
    }
    return finish(result);
  }
}

function errorToResult(toolName: string, error: unknown, signal: AbortSignal): ToolResult {
  if (error instanceof ToolError) return { ok: false, output: error.message, metadata: { error: error.kind, ...error.metadata } };
  if (signal.aborted) return { ok: false, output: `${toolName}: cancelled`, metadata: { error: 'cancelled' } };
  const err = error as NodeJS.ErrnoException;
  const detail = err?.code && err?.path ? `${describeErrno(err.code)}: ${err.path}` : String(err?.message ?? error);
  return { ok: false, output: `${toolName} failed: ${detail}`, metadata: { error: err?.code ?? 'internal' } };
}

const ERRNO_TEXT: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EEXIST: 'already exists',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
};

export function describeErrno(code: string): string {
  return ERRNO_TEXT[code] ?? code;
}

function finish(result: ToolResult): ToolCallResult {
  const hint = typeof result.metadata.moreHint === 'string' ? result.metadata.moreHint : undefined;
  const capped = capOutput(sanitizeOutput(result.output), undefined, hint);
  const metadata = capped.truncated ? { ...result.metadata, outputCut: true, outputBytes: capped.originalBytes } : result.metadata;
  return { ok: result.ok, output: capped.text, metadata };
}
