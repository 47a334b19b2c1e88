import type { Backend } from '../../backends/types.js';
import type { ToolEffects } from './effects.js';
import type { FileReadLedger } from './file-read-ledger.js';

/** A JSON schema for a tool's arguments: always an object schema. */
export interface ToolParameters {
  type: 'object';
  properties: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean;
}

export type JsonSchema = Record<string, unknown>;

export interface ToolResult {
  ok: boolean;
  /** What the model sees. Buffers are decoded with invalid bytes made visible. */
  output: string | Buffer;
  metadata: Record<string, unknown>;
}

/**
 * What one call needs; tools import nothing that touches the world. What the profile decides
 * (modes, limits, write roots) is given to each tool when the toolset builds it (src/agent/toolset.ts).
 */
export interface ToolContext {
  /** Absolute working directory: every relative path resolves against it. */
  workingDir: string;
  backend: Backend;
  signal: AbortSignal;
  /**
   * Present in agent sessions: files this session has read, for the read-before-write guard.
   * Absent for `quarry tool`, where the user acts directly and the guard does not apply.
   */
  fileReads?: FileReadLedger;
  /**
   * Present in agent runs: runs a child agent for `delegate` (the session supplies it, so tools/
   * never imports agent/). Absent in a delegated child (one level only) and for `quarry tool`.
   */
  runChildAgent?: (request: ChildAgentRequest) => Promise<ChildAgentResult>;
  /**
   * Present when the caller wants progress of long work (an MCP client that sent a progress
   * token): export_query reports rows and bytes written so far, at most a few times a second.
   */
  onProgress?: (progress: ToolProgress) => void;
  /**
   * Present in agent runs: asks the user to approve something the call is about to do (the
   * database query guard), the way the loop asks before a call (docs/guide/profiles.md). Absent for
   * `quarry tool` and MCP clients, where what needs approval is refused.
   */
  approve?: (reason: string) => Promise<{ approved: true } | { approved: false; message: string }>;
  /**
   * Present in agent runs where someone can answer (the REPL, a terminal, an eval question's
   * clarifications): ask_user's way to the user (src/agent/ask-user.ts). Absent: no one can be asked.
   */
  askUser?: UserQuestions;
}

/** One question to the user: the answer text, or null when no one answered (cancelled, nothing to say). */
export interface UserQuestions {
  /** Counts one more question of this run and returns how many have been asked (this one included). */
  count(): number;
  ask(question: string, options: readonly string[], signal: AbortSignal): Promise<string | null>;
}

export interface ToolProgress {
  rows: number;
  bytes: number;
}

export interface ChildAgentRequest {
  instruction: string;
  /** Give the child the parent's conversation so far (without the pending delegate call). */
  fullContext: boolean;
  signal: AbortSignal;
}

export interface ChildAgentResult {
  status: 'completed' | 'failed' | 'cancelled' | 'running' | 'refused';
  /** The child's final answer. */
  text: string;
  error?: string;
  usage: { input_tokens: number; output_tokens: number; cached_tokens: number };
  durationMs: number;
  sessionId: string;
  /** Where the child's session (meta.json, trace.jsonl) is stored. */
  sessionDir: string;
  turns: number;
  toolCalls: number;
}

export interface Tool<Args = Record<string, unknown>> {
  name: string;
  /** Model-facing: what the tool does and its real limits. */
  description: string;
  parameters: ToolParameters;
  /**
   * What calls are checked against, when `parameters` names things only known at run time (the
   * database tools' aliases): the same schema without them, so that its checker is compiled at
   * build time (scripts/postbuild.mjs) instead of loading Ajv at start-up; run() checks those names.
   */
  validationParameters?: ToolParameters;
  /** True when the tool never changes anything: such calls may run concurrently and need no approval. */
  readOnly: boolean;
  /** May run alongside the other calls of one message even though it is not read-only (delegate). */
  concurrent?: boolean;
  /**
   * What the tool can do as built for the profile (src/tools/core/effects.ts): read by approval, the
   * outward-tool rule and `quarry mcp`'s annotations. A tool that declares nothing is taken to do everything.
   */
  effects?: ToolEffects;
  /**
   * Set when the description or the schema's descriptions carry a third party's words (an MCP
   * server's): the model is sent `describe(mark)`, with those words passed through `mark`, and every
   * description and title in the schema marked, as data from `source` (src/agent/marking.ts).
   */
  foreign?: { source: string; describe(mark: (text: string) => string): string };
  /** Optional per-call refinement of readOnly (e.g. a database tool's export_query writes a file). */
  callIsReadOnly?(args: Args): boolean;
  run(args: Args, context: ToolContext): Promise<ToolResult>;
}

/** Helpers so that tools return results in one shape. */
export function success(output: string | Buffer, metadata: Record<string, unknown> = {}): ToolResult {
  return { ok: true, output, metadata };
}

export function failure(output: string, metadata: Record<string, unknown> = {}): ToolResult {
  return { ok: false, output, metadata };
}

/**
 * What went wrong in a failed tool call, for programs (the message is for the model): the registry
 * puts it in the result's metadata as `error`, which the trace, `--format stream-json`, `quarry tool
 * --format json` and `quarry mcp` show. `quarry tool` treats `invalid_arguments` as a usage error (exit 2).
 */
export type ToolErrorKind =
  // The call: arguments that break a rule of the tool (invalid_arguments), or a value it cannot use.
  | 'invalid_arguments'
  | 'bad_value'
  | 'bad_range'
  | 'bad_pattern'
  | 'bad_glob'
  | 'ambiguous'
  // What the call names: missing, of the wrong kind, or too big.
  | 'not_found'
  | 'exists'
  | 'is_directory'
  | 'not_a_directory'
  | 'not_a_file'
  | 'unsupported_path'
  | 'binary'
  | 'spreadsheet'
  | 'not_a_workbook'
  | 'unsupported_format'
  | 'too_large'
  | 'no_data'
  // read_excel's workbook problems (excel/errors.ts).
  | 'corrupt'
  | 'encrypted'
  | 'unsupported'
  | 'no_sheets'
  | 'no_cells'
  | 'sheet_not_found'
  // Refused by a rule: the profile, the write policy, the shell policy, read-only SQL, the user, the query guard.
  | 'refused'
  | 'not_read'
  | 'read_only_violation'
  | 'approval_refused'
  | 'query_guard'
  // Stopped.
  | 'cancelled'
  | 'timeout'
  | 'connect_timeout'
  // Something outside failed or is missing.
  | 'database_error'
  | 'mcp_call_failed'
  | 'delegate_unavailable'
  | 'bad_configuration'
  // SSH tunnels (database/ssh-tunnel.ts) and optional packages not installed (optional-packages.ts).
  | 'ssh_tunnel'
  | 'ssh_host_key'
  | 'ssh_login'
  | 'missing_package'
  // A file write failed with this errno (file-write-support.ts).
  | WriteErrno;

export type WriteErrno = 'EACCES' | 'EPERM' | 'ENOTDIR' | 'EISDIR' | 'EEXIST' | 'EROFS' | 'ENOSPC' | 'EDQUOT' | 'ENAMETOOLONG';

/**
 * An error whose message is meant for the model or user as it stands (no stack trace).
 * The registry turns any thrown error into a failed result; this class marks the expected ones,
 * each with its kind.
 */
export class ToolError extends Error {
  override name = 'ToolError';
  constructor(
    message: string,
    readonly kind: ToolErrorKind,
    readonly metadata: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function isReadOnlyCall(tool: Tool, args: Record<string, unknown>): boolean {
  return tool.callIsReadOnly ? tool.callIsReadOnly(args) : tool.readOnly;
}
