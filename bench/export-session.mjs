// A running quarry session for the database bench: loads the tools once, as an agent session
// does, then runs export_query each time a line arrives on stdin and answers with the
// milliseconds it took (one JSON line). Usage: node bench/export-session.mjs DB_FLAG WORKDIR ENGINE SQL
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { buildToolRegistry } from '../dist/agent/toolset.js';
import { LocalBackend } from '../dist/backends/local.js';
import { loadProfile } from '../dist/profiles/load.js';
import { loadDatabaseConfigs } from '../dist/config/databases.js';
import { closeAllDatabaseConnections } from '../dist/tools/database/connections.js';

const [dbFlag, workingDir, engine, sql] = process.argv.slice(2);
const profile = loadProfile('readonly');
const databases = loadDatabaseConfigs({ dbFlags: [dbFlag], env: {}, cwd: workingDir });
const registry = buildToolRegistry(profile, { databases });
const context = { workingDir, backend: new LocalBackend(), profile, signal: new AbortController().signal };
const output = join(workingDir, 'session-out.csv');
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'quit') break;
  rmSync(output, { force: true });
  const started = process.hrtime.bigint();
  const result = await registry.run(engine, { operation: 'export_query', sql, output_path: 'session-out.csv' }, context);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  process.stdout.write(`${JSON.stringify({ ms, ok: result.ok, output: result.ok ? '' : result.output })}\n`);
}
rmSync(output, { force: true });
await closeAllDatabaseConnections();
