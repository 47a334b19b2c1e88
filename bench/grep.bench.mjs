// grep tool against the search engine run directly with the same flags on the same tree (docs/development/benchmarks.md:
// within 1.3x of ripgrep). The tree is a copy of this repo's node_modules (tens of thousands of
// files), made once under bench/.work; the pattern is a rare literal planted in one file, so
// both sides do a full scan and print one line.
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const NEEDLE = 'quarry-bench-needle-7f3a';
const RUNS = 5;

function ensureTree(root, workDir) {
  const tree = join(workDir, 'grep-tree');
  const marker = join(tree, 'pkgs', 'zz-bench-marker.txt');
  if (existsSync(marker)) return tree;
  process.stderr.write('bench: grep: copying node_modules into bench/.work/grep-tree (once) ...\n');
  rmSync(tree, { recursive: true, force: true });
  // Renamed, since the tool (like the reference run) never descends into directories named node_modules.
  cpSync(join(root, 'node_modules'), join(tree, 'pkgs'), { recursive: true, verbatimSymlinks: true });
  writeFileSync(marker, `${NEEDLE}\n`); // written last: its presence means the copy is complete
  return tree;
}

export async function run({ root, workDir, measure, median }) {
  const tree = ensureTree(root, workDir);
  const { ripgrepArgv, grepArgv } = await import(join(root, 'dist', 'tools', 'grep.js'));
  const { rgPath } = await import('@vscode/ripgrep');
  const plan = { cwd: tree, operand: '.', glob: null };
  const args = { pattern: NEEDLE };
  const cli = [process.execPath, join(root, 'dist', 'cli.cjs'), 'tool', 'grep', '--args', JSON.stringify({ pattern: NEEDLE, path: tree })];

  const rg = measure(ripgrepArgv(rgPath, args, plan), { runs: RUNS, cwd: tree });
  const quarry = measure(cli, { runs: RUNS, cwd: root });
  const rows = [
    {
      name: 'grep tool, whole `quarry tool grep` process',
      quarry: quarry.ms,
      referenceName: 'rg, same flags',
      reference: rg.ms,
      unit: 'ms',
      note: `${RUNS} runs; target ratio <= 1.3; includes CLI start-up`,
    },
  ];

  // The tool alone, inside one process: what grep itself adds to ripgrep (no CLI start-up).
  const { buildToolRegistry } = await import(join(root, 'dist', 'agent', 'toolset.js'));
  const { loadProfile } = await import(join(root, 'dist', 'profiles', 'load.js'));
  const { LocalBackend } = await import(join(root, 'dist', 'backends', 'local.js'));
  const profile = loadProfile('readonly');
  const registry = buildToolRegistry(profile);
  const context = { workingDir: root, backend: new LocalBackend(), profile, signal: new AbortController().signal };
  const inProcess = [];
  for (let i = 0; i <= RUNS; i++) {
    const started = performance.now();
    const result = await registry.run('grep', { pattern: NEEDLE, path: tree }, context);
    if (!result.ok || result.metadata.matches !== 1) throw new Error(`grep tool: unexpected result: ${result.output.slice(0, 300)}`);
    if (i > 0) inProcess.push(performance.now() - started); // the first run warms up
  }
  rows.push({
    name: 'grep tool, in process (registry.run)',
    quarry: median(inProcess),
    referenceName: 'rg, same flags',
    reference: rg.ms,
    unit: 'ms',
    note: 'the tool without CLI start-up',
  });

  // The fallback for backends without ripgrep, against GNU grep run directly with its flags.
  const gnu = measure(grepArgv(args, plan, '-P'), { runs: 3, cwd: tree });
  const fallback = measure(cli, { runs: 3, cwd: root, env: { ...process.env, QUARRY_NO_RIPGREP: '1' } });
  rows.push({
    name: 'grep tool, GNU grep fallback (process)',
    quarry: fallback.ms,
    referenceName: 'grep -r, same flags',
    reference: gnu.ms,
    unit: 'ms',
    note: 'QUARRY_NO_RIPGREP=1; 3 runs',
  });
  return rows;
}
