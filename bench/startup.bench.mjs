// Start-up against `node -e 0`, each command measured in alternation with it: commands must not
// pay for modules they do not use (goal: node + 100 ms for every command).
import { join } from 'node:path';
import { measurePair } from './support.mjs';

export async function run({ root }) {
  const runs = 11;
  const node = [process.execPath, '-e', '0'];
  const cli = (...args) => [process.execPath, join(root, 'dist', 'cli.cjs'), ...args];
  const commands = [
    ['quarry --version', cli('--version')],
    ['quarry profiles', cli('profiles')],
    ['quarry tools', cli('tools')],
    ['quarry tool read', cli('tool', 'read', '--args', JSON.stringify({ path: join(root, 'package.json'), end_line: 5 }))],
    ['quarry --help', cli('--help')],
    ['quarry db list', cli('db', 'list')],
  ];
  return commands.map(([name, argv]) => {
    const pair = measurePair(argv, node, { runs });
    const difference = pair.a.ms - pair.b.ms;
    const cpu = pair.a.cpuMs !== undefined ? `; CPU ${pair.a.cpuMs.toFixed(0)} vs ${pair.b.cpuMs.toFixed(0)} ms` : '';
    return {
      name: `${name} (wall)`,
      quarry: pair.a.ms,
      referenceName: 'node -e 0',
      reference: pair.b.ms,
      ratio: pair.ratio,
      unit: 'ms',
      note: `difference ${difference.toFixed(1)} ms (goal < 100 ms)${cpu}`,
    };
  });
}
