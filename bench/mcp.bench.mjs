// `quarry mcp`: the per-call cost of a tool served over stdio (the SDK's client, JSON-RPC over a
// pipe, quarry's server, the registry path) beside the same call through the registry in process
// (what `quarry tool` runs once it has started). Both against compiled dist/, alternating batches.
import { join } from 'node:path';

const CALLS = 200;
const ROUNDS = 5;

export async function run({ root, median }) {
  const dist = (path) => join(root, 'dist', path);
  const sdk = (path) => join(root, 'node_modules', '@modelcontextprotocol', 'sdk', 'dist', 'esm', path);
  const { Client } = await import(sdk('client/index.js'));
  const { StdioClientTransport } = await import(sdk('client/stdio.js'));
  const { openWorkspace } = await import(dist('agent/workspace.js'));
  const sample = join(root, 'fixtures', 'sample.db');
  const args = { operation: 'query', sql: 'SELECT id, name FROM customers ORDER BY id LIMIT 5' };

  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [dist('cli.cjs'), 'mcp', '--db', `sample=${sample}`],
    cwd: root,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(transport);
  const workspace = await openWorkspace({ profile: 'readonly', cwd: root, databases: { dbFlags: [`sample=${sample}`] }, mcp: false });
  const context = { workingDir: root, backend: workspace.backend, profile: workspace.profile, signal: new AbortController().signal };

  const batch = async (call) => {
    const started = performance.now();
    for (let i = 0; i < CALLS; i++) await call();
    return (performance.now() - started) / CALLS;
  };
  const overMcp = async () => {
    const result = await client.callTool({ name: 'sqlite', arguments: args });
    if (result.isError) throw new Error(result.content[0].text);
  };
  const inProcess = async () => {
    const result = await workspace.registry.run('sqlite', args, context);
    if (!result.ok) throw new Error(result.output);
  };
  await batch(overMcp);
  await batch(inProcess);
  const mcp = [];
  const local = [];
  const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    const a = await batch(overMcp);
    const b = await batch(inProcess);
    mcp.push(a);
    local.push(b);
    ratios.push(a / b);
  }
  await client.close();
  await workspace.close();
  const overheadUs = (median(mcp) - median(local)) * 1000;
  return [
    {
      name: 'mcp stdio tool call (sqlite query, 5 rows)',
      quarry: median(mcp),
      reference: median(local),
      referenceName: 'registry in process',
      unit: 'ms',
      ratio: median(ratios),
      note: `served-call overhead ${overheadUs.toFixed(0)} µs per call`,
    },
  ];
}
