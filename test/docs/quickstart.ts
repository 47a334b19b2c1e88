import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The README's quickstart, run as a reader would: the ```sh blocks between `<!-- quickstart -->`
 * and `<!-- /quickstart -->`, one command per line (a trailing \ continues it; # comments and
 * blank lines are skipped), `quarry` being the built CLI (node dist/cli.cjs). The test runs on a
 * built checkout: installing commands (npm ci, npm install, npm link) in a line are not run, and
 * `npm run SCRIPT` whose script starts with `npm run build && ` runs the rest. An `export` line
 * holds for the lines after it in the same block.
 */

export const QUICKSTART_START = '<!-- quickstart -->';
export const QUICKSTART_END = '<!-- /quickstart -->';
const INSTALL = /^(npm (ci|install|i|link)\b)/;

export interface QuickstartCommand {
  /** The line as the README has it. */
  line: string;
  /** What runs: the line without install steps and builds. */
  run: string;
  /** The export lines before it in its block. */
  exports: string[];
}

/** The commands of the quickstart; an Error saying what is missing when the README has no quickstart block. */
/** The line without its install steps, with `npm run SCRIPT` of a build-then-run script as the run part; '' when nothing is left. */
function withoutInstallAndBuild(line: string, scripts: Record<string, string>): string {
  return line
    .split(/\s*&&\s*/)
    .filter((part) => !INSTALL.test(part))
    .map((part) => {
      const [, name, rest = ''] = /^npm run (\S+)(.*)$/.exec(part) ?? [];
      const script = name === undefined ? undefined : scripts[name];
      return script?.startsWith('npm run build && ') ? `${script.slice('npm run build && '.length)}${rest.replace(/^\s*--/, '')}` : part;
    })
    .join(' && ');
}

export function quickstartCommands(readme: string, file = 'README.md', scripts: Record<string, string> = {}): QuickstartCommand[] {
  const start = readme.indexOf(QUICKSTART_START);
  const end = readme.indexOf(QUICKSTART_END, start + 1);
  if (start < 0 || end < 0)
    throw new Error(`${file} has no quickstart: expected a section between ${QUICKSTART_START} and ${QUICKSTART_END} holding \`\`\`sh blocks`);
  const section = readme.slice(start + QUICKSTART_START.length, end);
  const blocks = [...section.matchAll(/^```(?:sh|bash|shell)[^\n]*\n([\s\S]*?)^```/gm)].map((match) => match[1]!);
  if (blocks.length === 0) throw new Error(`${file}: the quickstart holds no \`\`\`sh block`);
  const commands: QuickstartCommand[] = [];
  for (const block of blocks) {
    const exports: string[] = [];
    const lines = block.replace(/\s*\\\n\s*/g, ' ').split('\n');
    for (const raw of lines) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      if (/^export\s/.test(line)) exports.push(line);
      else {
        const run = withoutInstallAndBuild(line, scripts);
        if (run) commands.push({ line, run, exports: [...exports] });
      }
    }
  }
  return commands;
}

export interface QuickstartResult {
  line: string;
  code: number | null;
  output: string;
}

/**
 * Runs each command with bash in `cwd`, with QUARRY_HOME=`home` and a `quarry` on PATH that is
 * `node CLI`; resolves with each command's exit code and output (a command is killed after
 * `timeoutMs`).
 */
export async function runQuickstart(
  commands: readonly QuickstartCommand[],
  options: { cli: string; cwd: string; home: string; timeoutMs?: number },
): Promise<QuickstartResult[]> {
  const bin = join(options.home, 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'quarry'), `#!/bin/sh\nexec "${process.execPath}" "${options.cli}" "$@"\n`);
  chmodSync(join(bin, 'quarry'), 0o755);
  const results: QuickstartResult[] = [];
  for (const { line, run, exports } of commands) {
    const script = [...exports, run].join('\n');
    results.push(
      await new Promise<QuickstartResult>((resolve, reject) => {
        const child = spawn('bash', ['-c', script], {
          cwd: options.cwd,
          env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, QUARRY_HOME: options.home, NO_COLOR: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        child.stdout.on('data', (chunk) => (output += chunk));
        child.stderr.on('data', (chunk) => (output += chunk));
        const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
        child.on('error', reject);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ line, code, output });
        });
      }),
    );
  }
  return results;
}
