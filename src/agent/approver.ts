import type { Tool } from '../tools/core/types.js';

/**
 * The interactive half of approval (docs/guide/profiles.md); approval.ts holds the rule. On a TTY the user
 * answers yes, no or "always for this tool"; without one, the call is refused with a message
 * about --yes. --yes (or /approve in the REPL) approves everything the profile asks about, but not
 * an outward call after untrusted content (src/agent/untrusted.ts): that takes a person at the
 * terminal, --allow-outward, or a server the user vouched for in config.yaml.
 */

export type ApprovalAnswer = 'yes' | 'no' | 'always';

/** Asks the user one question on the terminal; supplied by the CLI only when there is a TTY. */
export type AskApproval = (question: string, signal: AbortSignal) => Promise<ApprovalAnswer>;

export type ApprovalDecision = { approved: true } | { approved: false; message: string; reason: 'declined' | 'no_tty' | 'cancelled' };

export function parseApprovalAnswer(text: string): ApprovalAnswer | undefined {
  const answer = text.trim().toLowerCase();
  if (['y', 'yes'].includes(answer)) return 'yes';
  if (['n', 'no', ''].includes(answer)) return 'no';
  if (['a', 'always'].includes(answer)) return 'always';
  return undefined;
}

const ARGUMENT_PREVIEW_CHARS = 400;

export class Approver {
  private approveEverything: boolean;
  private readonly alwaysTools = new Set<string>();
  /** One question at a time, even when read-only calls run concurrently. */
  private queue: Promise<unknown> = Promise.resolve();

  private ask: AskApproval | undefined;
  /** --allow-outward: outward calls after untrusted content are approved too. */
  private readonly allowOutward: boolean;
  private readonly alwaysOutward = new Set<string>();

  constructor(options: { autoApprove: boolean; ask?: AskApproval; allowOutward?: boolean }) {
    this.approveEverything = options.autoApprove;
    this.ask = options.ask;
    this.allowOutward = options.allowOutward ?? false;
  }

  /** /approve: everything, for the rest of the session. */
  approveAll(): void {
    this.approveEverything = true;
  }

  get approvesAll(): boolean {
    return this.approveEverything;
  }

  setAsk(ask: AskApproval | undefined): void {
    this.ask = ask;
  }

  decide(tool: Tool, args: Record<string, unknown>, reason: string, signal: AbortSignal): Promise<ApprovalDecision> {
    const next = this.queue.then(() => this.decideNow(tool, args, reason, signal));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** An outward call after untrusted content: --yes and /approve do not answer it. */
  decideOutward(tool: Tool, args: Record<string, unknown>, reason: string, signal: AbortSignal): Promise<ApprovalDecision> {
    const next = this.queue.then(() => this.decideNow(tool, args, reason, signal, true));
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async decideNow(tool: Tool, args: Record<string, unknown>, reason: string, signal: AbortSignal, outward = false): Promise<ApprovalDecision> {
    const always = outward ? this.alwaysOutward : this.alwaysTools;
    if ((outward ? this.allowOutward : this.approveEverything) || always.has(tool.name)) return { approved: true };
    if (signal.aborted) return { approved: false, reason: 'cancelled', message: `${tool.name}: cancelled before it started` };
    if (!this.ask) {
      return {
        approved: false,
        reason: 'no_tty',
        message: outward
          ? `refused: ${reason}, and there is no terminal to ask the user; nothing was run. --yes does not approve this; the user can rerun ` +
            'quarry with --allow-outward, or mark the MCP server allow_outward: true in config.yaml. Do not retry; answer from what you have.'
          : `refused: ${reason}, and there is no terminal to ask the user; nothing was run. The user can rerun quarry with --yes (or use /approve in ` +
            `the REPL) to approve such calls.`,
      };
    }
    let preview = JSON.stringify(args);
    if (preview.length > ARGUMENT_PREVIEW_CHARS) preview = `${preview.slice(0, ARGUMENT_PREVIEW_CHARS)}...`;
    let answer: ApprovalAnswer;
    try {
      answer = await this.ask(`Allow ${tool.name} ${preview}\n  (${reason})\n  [y]es / [n]o / [a]lways for ${tool.name}: `, signal);
    } catch {
      return { approved: false, reason: 'cancelled', message: `${tool.name}: cancelled while waiting for approval` };
    }
    if (answer === 'always') always.add(tool.name);
    if (answer === 'no') {
      return {
        approved: false,
        reason: 'declined',
        message: 'refused by the user: nothing was run. Do not repeat this call; take another approach or ask the user.',
      };
    }
    return { approved: true };
  }
}
