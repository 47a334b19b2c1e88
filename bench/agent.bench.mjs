// The agent loop's own overhead (docs/development/benchmarks.md): per turn with the scripted provider (model time is
// zero, tool time subtracted), and a tool call's dispatch through the registry. In process,
// against compiled dist/.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const TURNS = 300;
const DISPATCH_CALLS = 20_000;
const RUNS = 5;
const TURN_TARGET_MS = 5;
const DISPATCH_TARGET_MS = 1;

export async function run({ root, workDir, median }) {
  const dist = (path) => join(root, 'dist', path);
  const { Agent } = await import(dist('agent/loop.js'));
  const { Approver } = await import(dist('agent/approver.js'));
  const { Session } = await import(dist('agent/session.js'));
  const { ScriptedProvider } = await import(dist('model/script.js'));
  const { retryPolicyFromEnv } = await import(dist('model/retry.js'));
  const { ToolRegistry } = await import(dist('tools/core/registry.js'));
  const { LocalBackend } = await import(dist('backends/local.js'));
  const { loadProfile } = await import(dist('profiles/load.js'));

  let toolMs = 0;
  const noop = {
    name: 'noop',
    description: 'Does nothing (benchmark).',
    parameters: { type: 'object', properties: { i: { type: 'integer' } }, required: ['i'], additionalProperties: false },
    readOnly: true,
    async run(args) {
      const started = performance.now();
      const result = { ok: true, output: `done ${args.i}`, metadata: {} };
      toolMs += performance.now() - started;
      return result;
    },
  };
  const registry = new ToolRegistry();
  registry.register(noop);
  const profile = loadProfile('readonly');
  const backend = new LocalBackend();
  const home = join(workDir, 'agent-home');
  rmSync(home, { recursive: true, force: true });
  mkdirSync(home, { recursive: true });
  const env = { QUARRY_HOME: home };

  // Turns 1..N each call noop once (different arguments, so the repeat guard stays quiet); the last answers.
  const turns = Array.from({ length: TURNS }, (_, i) => ({ text: `step ${i}`, toolCalls: [{ name: 'noop', arguments: JSON.stringify({ i }) }] }));
  turns.push({ text: 'finished', toolCalls: [] });

  const perTurn = [];
  for (let r = 0; r < RUNS + 1; r++) {
    const session = Session.create({ profile: profile.name, model: 'script:bench', workingDir: workDir }, env);
    const agent = new Agent({
      provider: new ScriptedProvider(turns, 'bench'),
      system: 'bench',
      workspace: { registry, profile, workingDir: workDir, backend },
      session,
      approver: new Approver({ autoApprove: false }),
      maxTurns: TURNS + 1,
      contextWindow: 10_000_000,
      retryPolicy: retryPolicyFromEnv({}),
    });
    toolMs = 0;
    const started = performance.now();
    const result = await agent.run('bench', new AbortController().signal);
    const elapsed = performance.now() - started - toolMs;
    if (result.status !== 'completed') throw new Error(`bench run ${result.status}: ${result.error}`);
    if (r > 0) perTurn.push(elapsed / (TURNS + 1));
  }

  const context = { workingDir: workDir, backend, profile, signal: new AbortController().signal };
  const perCall = [];
  for (let r = 0; r < RUNS + 1; r++) {
    toolMs = 0;
    const started = performance.now();
    for (let i = 0; i < DISPATCH_CALLS; i++) await registry.run('noop', { i }, context);
    const elapsed = performance.now() - started - toolMs;
    if (r > 0) perCall.push(elapsed / DISPATCH_CALLS);
  }
  rmSync(home, { recursive: true, force: true });

  return [
    {
      name: `agent loop overhead per turn (${TURNS + 1} scripted turns, trace on disk)`,
      quarry: median(perTurn),
      reference: TURN_TARGET_MS,
      referenceName: 'target',
      unit: 'ms',
      note: 'model and tool time excluded',
    },
    {
      name: 'tool dispatch overhead (registry.run, validate+sanitise+cap)',
      quarry: median(perCall) * 1000,
      reference: DISPATCH_TARGET_MS * 1000,
      referenceName: 'target',
      unit: 'µs',
      note: `${DISPATCH_CALLS} calls`,
    },
  ];
}
