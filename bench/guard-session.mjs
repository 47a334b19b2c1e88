// The query guard's cost in a running session (docs/guide/databases.md "Knowing the data"): the same small query
// with the guard on and off, alternating, in one process with the connection open, as an agent
// session runs it. Usage: node bench/guard-session.mjs DB_FLAG WORKDIR SQL RUNS; prints one JSON line.
import { buildToolRegistry } from '../dist/agent/toolset.js';
import { LocalBackend } from '../dist/backends/local.js';
import { loadProfile } from '../dist/profiles/load.js';
import { loadDatabaseConfigs } from '../dist/config/databases.js';
import { closeAllDatabaseConnections } from '../dist/tools/database/connections.js';

const [dbFlag, workingDir, sql, runs] = process.argv.slice(2);
const databases = loadDatabaseConfigs({ dbFlags: [dbFlag], env: {}, cwd: workingDir });
const base = loadProfile('readonly');
const registries = {
  guarded: buildToolRegistry({ ...base, query_guard: { max_estimated_rows: 10_000_000, action: 'refuse' } }, { databases }),
  unguarded: buildToolRegistry({ ...base, query_guard: null }, { databases }),
};
const context = { workingDir, backend: new LocalBackend(), profile: base, signal: new AbortController().signal };
const times = { guarded: [], unguarded: [] };
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
for (let i = -2; i < Number(runs); i++) {
  for (const name of ['guarded', 'unguarded']) {
    const started = process.hrtime.bigint();
    const result = await registries[name].run('postgres', { operation: 'query', sql }, context);
    if (!result.ok) throw new Error(`${name}: ${result.output}`);
    if (i >= 0) times[name].push(Number(process.hrtime.bigint() - started) / 1e6);
  }
}
process.stdout.write(`${JSON.stringify({ guarded: median(times.guarded), unguarded: median(times.unguarded) })}\n`);
await closeAllDatabaseConnections();
