// `npm run demo`: an analyst question answered end to end on the bundled sample database.
// The model is scripted (fixtures/demo/analyst.json: no LLM, no API key); the sqlite tool,
// the read-only checks, the CSV export, the trace and the session are all real.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const database = join(root, 'fixtures', 'sample.db');
const script = join(root, 'fixtures', 'demo', 'analyst.json');
const question = 'Which 5 customers spent the most in 2024? Export all their 2024 orders to CSV.';
if (!existsSync(database)) {
  console.error(`demo: ${database} is missing; run npm run fixtures first`);
  process.exit(2);
}
// A fresh folder for the CSV, so the demo can run again (exports never overwrite).
const workDir = mkdtempSync(join(tmpdir(), 'quarry-demo-'));
const args = [
  join(root, 'dist', 'cli.cjs'),
  '--model',
  `script:${script}`,
  '--db',
  `sales=${database}`,
  // The team's knowledge about the sample database: rules, glossary, metrics, verified queries (docs/guide/knowledge.md).
  '--knowledge',
  join(root, 'fixtures', 'knowledge'),
  '--working-dir',
  workDir,
  // The readonly profile asks before an export writes a file; --yes is the user's approval.
  '--yes',
  question,
];
console.error(
  `$ quarry --model script:fixtures/demo/analyst.json --db sales=fixtures/sample.db --knowledge fixtures/knowledge --working-dir ${workDir} --yes "${question}"\n`,
);
const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
const csv = join(workDir, 'top5_orders_2024.csv');
if (run.status === 0 && existsSync(csv)) {
  const lines = readFileSync(csv, 'utf8').trimEnd().split(/\r?\n/);
  console.error(`\n${csv}: ${lines.length - 1} rows; first lines:\n${lines.slice(0, 4).join('\n')}`);
  console.error(`${join(workDir, 'top5_spend_2024.png')}: the chart (also .svg and .vl.json)`);
  // The session as one self-contained HTML page, to open in a browser or send to someone.
  const report = join(workDir, 'report.html');
  console.error(`\n$ quarry report latest -o ${report}`);
  const made = spawnSync(process.execPath, [join(root, 'dist', 'cli.cjs'), 'report', 'latest', '-o', report], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (made.status !== 0) process.exit(made.status ?? 1);
  console.error(`${report}: the session report`);
}
process.exit(run.status ?? 1);
