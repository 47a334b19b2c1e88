// A knowledge folder of 2,000 verified queries (docs/guide/knowledge.md): `quarry tool knowledge`
// reads and checks every file, ranks and answers, against a bare `quarry tool read`, in
// alternation (goal: within 0.3 s of it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePair } from './support.mjs';

const QUERIES = 2000;
const SUBJECTS = ['revenue', 'orders', 'customers', 'refunds', 'signups', 'products', 'discounts', 'shipments', 'returns', 'payments'];
const SPLITS = ['country', 'segment', 'category', 'month', 'year', 'status', 'channel', 'city', 'week', 'product'];

/** A seeded folder that looks like a team's: rules, a glossary, metrics and 2,000 multi-line verified queries. */
function makeFolder(dir) {
  let seed = 28;
  const random = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  mkdirSync(join(dir, 'queries'), { recursive: true });
  writeFileSync(
    join(dir, 'rules.yaml'),
    SUBJECTS.map((subject) => `- rule: ${subject} excludes test accounts (is_test = 1).\n  tables: [${subject}]\n`).join(''),
  );
  writeFileSync(
    join(dir, 'glossary.yaml'),
    SUBJECTS.map((subject) => `${subject}:\n  definition: What the team calls ${subject}.\n  synonyms: [${subject}_total]\n`).join(''),
  );
  for (let i = 0; i < QUERIES; i++) {
    const subject = SUBJECTS[random(SUBJECTS.length)];
    const split = SPLITS[random(SPLITS.length)];
    const year = 2020 + random(6);
    writeFileSync(
      join(dir, 'queries', `q${String(i).padStart(4, '0')}_${subject}_by_${split}.yaml`),
      `question: How did ${subject} develop by ${split} in ${year} (report ${i})?\nsql: |\n  SELECT ${split}, COUNT(*) AS n, SUM(amount) AS total\n` +
        `  FROM ${subject}\n  WHERE created_at >= '${year}-01-01' AND created_at < '${year + 1}-01-01' AND is_test = 0\n  GROUP BY ${split}\n  ORDER BY total DESC\n` +
        `database: warehouse\nverified_by: Analyst ${random(20)}\nverified_at: 2025-0${1 + random(9)}-1${random(10)}\nexpect:\n  rows: ${random(500)}\n` +
        `  digest: sha256:${i.toString(16).padStart(32, '0')}\n`,
    );
  }
}

export async function run({ root }) {
  const dir = mkdtempSync(join(tmpdir(), 'quarry-bench-knowledge-'));
  try {
    makeFolder(dir);
    const cli = (...args) => [process.execPath, join(root, 'dist', 'cli.cjs'), ...args];
    const knowledge = cli('tool', 'knowledge', '--knowledge', dir, '--args', JSON.stringify({ query: 'refunds by country in 2024', limit: 5 }));
    const check = spawnSync(knowledge[0], knowledge.slice(1), { encoding: 'utf8' });
    if (check.status !== 0 || !check.stdout.startsWith('query ')) throw new Error(`knowledge bench: the tool did not answer: ${check.stderr || check.stdout}`);
    const read = cli('tool', 'read', '--args', JSON.stringify({ path: join(root, 'package.json'), end_line: 5 }));
    const pair = measurePair(knowledge, read, { runs: 9 });
    const difference = pair.a.ms - pair.b.ms;
    const cpu = pair.a.cpuMs !== undefined ? `; CPU ${pair.a.cpuMs.toFixed(0)} vs ${pair.b.cpuMs.toFixed(0)} ms` : '';
    return [
      {
        name: `tool knowledge, ${QUERIES} verified queries`,
        quarry: pair.a.ms,
        referenceName: 'quarry tool read',
        reference: pair.b.ms,
        ratio: pair.ratio,
        unit: 'ms',
        note: `difference ${difference.toFixed(0)} ms (goal < 300 ms)${cpu}; alternating; the folder read through its cache (docs/guide/knowledge.md)`,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
