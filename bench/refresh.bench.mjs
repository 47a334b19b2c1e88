// `quarry refresh` of a 20-step session (docs/guide/sessions.md "Refreshing a session") beside the session's own
// original run: 20 queries over fixtures/sample.db (counts, sums, group-bys, joins), first run
// by the scripted model (model time zero, so the original's time is its tools and quarry's own
// work; a real model adds its latency and tokens per turn), then re-run by `quarry refresh` with no
// model. Measured in alternation, through the built CLI.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { measurePair } from './support.mjs';

const QUERIES = [
  'SELECT count(*) AS n FROM customers',
  'SELECT count(*) AS n FROM orders',
  'SELECT count(*) AS n FROM order_items',
  'SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status',
  'SELECT shipping_country, count(*) AS n FROM orders GROUP BY shipping_country ORDER BY n DESC LIMIT 10',
  'SELECT substr(ordered_at, 1, 4) AS year, count(*) AS n FROM orders GROUP BY year ORDER BY year',
  'SELECT round(sum(quantity * unit_price), 2) AS revenue FROM order_items',
  'SELECT substr(o.ordered_at, 1, 4) AS year, round(sum(i.quantity * i.unit_price), 2) AS revenue FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY year ORDER BY year',
  'SELECT substr(o.ordered_at, 1, 7) AS month, count(*) AS n FROM orders o GROUP BY month ORDER BY month DESC LIMIT 12',
  'SELECT product_id, sum(quantity) AS units FROM order_items GROUP BY product_id ORDER BY units DESC LIMIT 10',
  'SELECT customer_id, count(*) AS orders FROM orders GROUP BY customer_id ORDER BY orders DESC LIMIT 10',
  'SELECT round(avg(quantity), 3) AS mean_quantity, max(quantity) AS max_quantity FROM order_items',
  'SELECT count(DISTINCT customer_id) AS buyers FROM orders',
  'SELECT count(*) AS n FROM products',
  'SELECT round(avg(unit_price), 2) AS mean_price FROM order_items',
  "SELECT count(*) AS cancelled FROM orders WHERE status = 'cancelled'",
  'SELECT round(sum(discount), 2) AS discounts FROM order_items',
  'SELECT * FROM order_totals ORDER BY 1 LIMIT 20',
  'SELECT min(ordered_at) AS first, max(ordered_at) AS last FROM orders',
  'SELECT shipping_country, round(sum(i.quantity * i.unit_price), 2) AS revenue FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY shipping_country ORDER BY revenue DESC LIMIT 5',
];

export async function run({ root }) {
  const dir = join(root, 'bench', '.work', 'refresh');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'home'), { recursive: true });
  const script = join(dir, 'script.json');
  writeFileSync(
    script,
    JSON.stringify({
      turns: [...QUERIES.map((sql) => ({ tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql } }] })), { text: 'There are 600 customers.' }],
    }),
  );
  const cli = [process.execPath, join(root, 'dist', 'cli.cjs')];
  const previous = process.env.QUARRY_HOME;
  process.env.QUARRY_HOME = join(dir, 'home');
  try {
    const original = [...cli, '-m', `script:${script}`, '--db', `sample=${join(root, 'fixtures', 'sample.db')}`, '-w', dir, 'bench'];
    const refresh = [...cli, 'refresh', 'latest'];
    // The session to refresh exists before the first refresh; each original run makes a new one (refresh latest takes it).
    const first = spawnSync(original[0], original.slice(1), { encoding: 'utf8' });
    if (first.status !== 0) throw new Error(`the original run exited ${first.status}: ${first.stderr.slice(-300)}`);
    const pair = measurePair(refresh, original, { runs: 5 });
    return [
      {
        name: 'refresh: 20-step session (20 queries, sample.db)',
        quarry: pair.a.ms,
        reference: pair.b.ms,
        referenceName: 'its original run (scripted model)',
        unit: 'ms',
        ratio: pair.ratio,
        note: 'in alternation; 0 tokens; the original with a real model adds its latency per turn (21 turns)',
      },
    ];
  } finally {
    if (previous === undefined) delete process.env.QUARRY_HOME;
    else process.env.QUARRY_HOME = previous;
    rmSync(dir, { recursive: true, force: true });
  }
}
