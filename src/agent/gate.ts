import type { Profile } from '../profiles/schema.js';
import type { Tool } from '../tools/core/types.js';
import { approvalReason } from './approval.js';
import type { Approver } from './approver.js';
import { outwardCheck } from './untrusted.js';

export type GateResult =
  | { blocked: false; asked: boolean }
  | { blocked: true; message: string; error: 'cancelled' | 'approval_refused' | 'untrusted_data_refused' };

/**
 * Whether one call of an agent run may go ahead (docs/guide/profiles.md, "Security model"): first the
 * outward-tool rule (an outward call after untrusted content needs consent that --yes does not give;
 * a yes to it also answers the profile's own question), then the profile's approval policy.
 */
export async function gateCall(
  profile: Pick<Profile, 'name' | 'approval' | 'untrusted_data'>,
  approver: Approver,
  tool: Tool,
  args: Record<string, unknown>,
  untrusted: readonly string[],
  signal: AbortSignal,
): Promise<GateResult> {
  const outward = outwardCheck(profile.untrusted_data, profile.name, tool, untrusted);
  if (outward.kind === 'refuse') return { blocked: true, message: outward.message, error: 'untrusted_data_refused' };
  const reason = outward.kind === 'ask' ? outward.reason : approvalReason(profile, tool, args);
  if (!reason) return { blocked: false, asked: false };
  const decision = outward.kind === 'ask' ? await approver.decideOutward(tool, args, reason, signal) : await approver.decide(tool, args, reason, signal);
  if (decision.approved) return { blocked: false, asked: true };
  return { blocked: true, message: decision.message, error: decision.reason === 'cancelled' ? 'cancelled' : 'approval_refused' };
}
