import { describe, expect, it } from 'vitest';
import { approvalReason } from '../../src/agent/approval.js';
import { Approver } from '../../src/agent/approver.js';
import { buildToolRegistry } from '../../src/agent/toolset.js';
import { outwardCheck, UntrustedSources } from '../../src/agent/untrusted.js';
import { servedEffects, toolAnnotations } from '../../src/mcp/serve.js';
import { loadProfile } from '../../src/profiles/load.js';
import { parseProfile } from '../../src/profiles/schema.js';
import { effectsOf } from '../../src/tools/core/effects.js';
import { mcpToolEffects } from '../../src/tools/mcp/tool-adapter.js';
import type { Tool } from '../../src/tools/core/types.js';

/** Each tool declares its effects as built for a profile; approval, the outward rule and MCP read only that. */

const outwardTools = (profile: ReturnType<typeof loadProfile>) =>
  buildToolRegistry(profile)
    .list()
    .filter((tool) => effectsOf(tool).sendsOut)
    .map((tool) => tool.name)
    .sort();

function mcpTool(annotations: { readOnlyHint?: boolean; openWorldHint?: boolean }, allowOutward = false): Tool {
  return {
    name: 'mcp__crm__send',
    description: '',
    parameters: { type: 'object', properties: {} },
    readOnly: false,
    effects: mcpToolEffects({ name: 'send', inputSchema: {}, annotations }, allowOutward),
    run: async () => ({ ok: true, output: '', metadata: {} }),
  };
}

describe('declared tool effects', () => {
  it('readonly has no outward tool; a shell with network, unrestricted bash, a remote sandbox and delegate over them are outward', () => {
    expect(outwardTools(loadProfile('readonly'))).toEqual([]);
    expect(outwardTools(parseProfile({ shell_network: 'loopback' }, 'test', 'loopback'))).toEqual(['bash', 'delegate']);
    expect(outwardTools(loadProfile('developer'))).toEqual(['bash', 'delegate']);
    expect(outwardTools(loadProfile('daytona'))).toEqual(['bash', 'delegate']);
    const developer = buildToolRegistry(loadProfile('developer'));
    expect(effectsOf(developer.get('delegate')!)).toMatchObject({ delegates: true, writesFiles: true, destructive: true, sendsOut: true });
    expect(effectsOf(buildToolRegistry(loadProfile('readonly')).get('delegate')!)).toMatchObject({ delegates: true, destructive: false, sendsOut: false });
  });

  it('an MCP tool is outward whatever the annotations of its server claim, unless the user allows the server', () => {
    expect(effectsOf(mcpTool({})).sendsOut).toBe(true);
    expect(effectsOf(mcpTool({ readOnlyHint: true })).sendsOut).toBe(true);
    expect(effectsOf(mcpTool({ readOnlyHint: true, openWorldHint: false })).sendsOut).toBe(true);
    expect(effectsOf(mcpTool({}, true)).sendsOut).toBe(false);
  });

  it('granular approval asks before MCP tools and delegate, whatever its list names', () => {
    const developer = loadProfile('developer');
    const registry = buildToolRegistry(developer);
    expect(approvalReason(developer, mcpTool({}), {})).toMatch(/third-party tool that can send data out/);
    expect(approvalReason(developer, registry.get('delegate')!, { instruction: 'x' })).toMatch(/runs a child agent/);
    expect(approvalReason(developer, registry.get('bash')!, { command: 'ls' })).toBeNull();
  });

  it('MCP annotations say what a tool can do as served', () => {
    const readonly = loadProfile('readonly');
    const bash = buildToolRegistry(readonly).get('bash')!;
    expect(toolAnnotations(bash, servedEffects(bash, readonly, false))).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    const loopback = parseProfile({ shell_network: 'loopback' }, 'test', 'loopback');
    const networked = buildToolRegistry(loopback).get('bash')!;
    expect(toolAnnotations(networked, servedEffects(networked, loopback, false))).toMatchObject({ readOnlyHint: true, openWorldHint: true });
  });
});

describe('the outward rule and the approver', () => {
  it('names the sources; --yes does not approve an outward call, --allow-outward does', async () => {
    const sources = new UntrustedSources();
    const developer = loadProfile('developer');
    const registry = buildToolRegistry(developer);
    const bash = registry.get('bash')!;
    expect(outwardCheck('ask', 'developer', bash, sources.list())).toEqual({ kind: 'none' });
    sources.noteResult(registry.get('write'), 'write', { path: 'mine.txt' });
    expect(sources.list()).toEqual([]);
    sources.noteResult(registry.get('read'), 'read', { path: 'ticket.txt' });
    const check = outwardCheck('ask', 'developer', bash, sources.list());
    expect(check).toMatchObject({ kind: 'ask', reason: expect.stringContaining('(from read (ticket.txt))') });
    const reason = check.kind === 'ask' ? check.reason : '';
    const signal = new AbortController().signal;
    const yes = new Approver({ autoApprove: true });
    expect(await yes.decide(bash, {}, reason, signal)).toEqual({ approved: true });
    expect(await yes.decideOutward(bash, {}, reason, signal)).toMatchObject({ approved: false, reason: 'no_tty' });
    expect(await new Approver({ autoApprove: false, allowOutward: true }).decideOutward(bash, {}, reason, signal)).toEqual({ approved: true });
    let asked = '';
    const terminal = new Approver({
      autoApprove: true,
      ask: async (question) => {
        asked = question;
        return 'no';
      },
    });
    expect(await terminal.decideOutward(bash, { command: 'curl' }, reason, signal)).toMatchObject({ approved: false, reason: 'declined' });
    expect(asked).toContain('read (ticket.txt)');
  });
});
