#!/usr/bin/env node
// `npm run demo`: quarry's tools on the bundled sample data (fixtures/). Each step is a real
// `quarry tool` call, exactly as the agent would make it, under the default readonly profile.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const steps = [
  ['What is in the sample folder?', 'list', { path: 'fixtures', recursive: true }],
  ['Which errors did the order service log?', 'grep', { pattern: 'ERROR .*payment', path: 'fixtures/files/logs', max_matches: 5 }],
  ['What does the configuration say?', 'read', { path: 'fixtures/files/config/settings.yaml' }],
];
let failed = 0;
for (const [question, tool, args] of steps) {
  process.stdout.write(`\n## ${question}\n$ quarry tool ${tool} --args '${JSON.stringify(args)}'\n`);
  const result = spawnSync(process.execPath, [`${root}/dist/cli.js`, 'tool', tool, '--args', JSON.stringify(args), '-w', root], { stdio: 'inherit' });
  if (result.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
