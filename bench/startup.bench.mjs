// `quarry --version` against `node -e 0`: start-up must not pay for modules a command does not use.
import { join } from 'node:path';

export async function run({ root, measure }) {
  const runs = 15;
  const node = measure([process.execPath, '-e', '0'], { runs });
  const version = measure([process.execPath, join(root, 'dist', 'cli.js'), '--version'], { runs });
  const help = measure([process.execPath, join(root, 'dist', 'cli.js'), 'profiles'], { runs: 5 });
  return [
    { name: 'quarry --version (wall)', quarry: version.ms, referenceName: 'node -e 0', reference: node.ms, unit: 'ms', note: `difference ${(version.ms - node.ms).toFixed(1)} ms (target < 100 ms)` },
    { name: 'quarry profiles (wall, loads yargs)', quarry: help.ms, referenceName: 'node -e 0', reference: node.ms, unit: 'ms', note: 'for scale: a command that parses flags' },
  ];
}
