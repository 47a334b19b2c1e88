import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH, REPO_ROOT, runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { brokenLinks, markdownFiles, readMarkdown, slugger } from './markdown-links.js';
import { quickstartCommands, runQuickstart } from './quickstart.js';

/**
 * The documentation holds (README "Tests"): every relative link and #anchor in README.md and
 * docs/ resolves; docs/reference/ is what scripts/gen-reference.mjs makes from the code now;
 * every command of the README's quickstart runs and exits 0.
 */

const DOCS = [join(REPO_ROOT, 'README.md'), ...markdownFiles(join(REPO_ROOT, 'docs'))];

/** A folder that reads like the checkout (its entries linked), with its own copy of fixtures/, so that commands may write into it. */
function scratchCheckout(): string {
  const dir = makeTempDir('quarry-quickstart-');
  for (const entry of readdirSync(REPO_ROOT)) {
    if (entry === '.git') continue;
    if (entry === 'fixtures') cpSync(join(REPO_ROOT, entry), join(dir, entry), { recursive: true });
    else symlinkSync(join(REPO_ROOT, entry), join(dir, entry));
  }
  return dir;
}

function genReference(args: string[]) {
  return spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'gen-reference.mjs'), ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
}

describe('links', () => {
  it("follow GitHub's anchor rules", () => {
    const slug = slugger();
    expect(slug('quarry tool NAME --args JSON')).toBe('quarry-tool-name---args-json');
    expect(slug('Team knowledge: rules, glossary, metrics and verified queries')).toBe('team-knowledge-rules-glossary-metrics-and-verified-queries');
    expect(slug('quarry tool NAME --args JSON')).toBe('quarry-tool-name---args-json-1');
    const page = readMarkdown('# `ask_user` *tool*\n\n## Über (a/b)\n\n```md\n[not](a-link.md)\n```\n\n| a |\n|---|\n| [x](y.md#z) |\n');
    expect([...page.anchors]).toEqual(['ask_user-tool', 'über-ab']);
    expect(page.links).toEqual(['y.md#z']);
  });

  it('find broken files and anchors', () => {
    const dir = makeTempDir('quarry-links-');
    writeFileSync(
      join(dir, 'a.md'),
      '# A\n\n## Two words\n\n[ok](#two-words) [ok](b.md#b) [bad](#nope) [bad](b.md#nope) [bad](missing.md) [web](https://x.org/#y)\n',
    );
    writeFileSync(join(dir, 'b.md'), '# B\n');
    expect(brokenLinks(join(dir, 'a.md'), dir)).toEqual([
      'a.md: #nope (no heading with that anchor in a.md)',
      'a.md: b.md#nope (no heading with that anchor in b.md)',
      'a.md: missing.md (no such file)',
    ]);
  });

  it('in README.md and docs/ all resolve', () => {
    expect(DOCS.length).toBeGreaterThan(7);
    expect(DOCS.flatMap((file) => brokenLinks(file, REPO_ROOT))).toEqual([]);
  });
});

describe('docs/reference', () => {
  it('is what the code says now (npm run docs writes it)', () => {
    const result = genReference(['--check']);
    expect(result.stderr, 'run npm run docs').toBe('');
    expect(result.status).toBe(0);
  });

  it('--check lists a page that differs and one that is missing, exit 1', () => {
    const out = makeTempDir('quarry-reference-');
    expect(genReference(['--out', out]).status).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['cli.md', 'config.md', 'environment.md', 'events.md', 'exit-codes.md', 'profiles.md', 'tools.md']);
    // What the CLI prints is on the page.
    const help = spawnSync(process.execPath, [CLI_PATH, 'db', 'list', '--help'], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } }).stdout;
    expect(readFileSync(join(out, 'cli.md'), 'utf8')).toContain(help.split('\n').slice(0, 3).join('\n'));
    writeFileSync(join(out, 'tools.md'), 'edited by hand\n');
    rmSync(join(out, 'events.md'));
    const result = genReference(['--check', '--out', out]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/tools\.md\n.*events\.md \(missing\)/);
    expect(readFileSync(join(out, 'tools.md'), 'utf8')).toBe('edited by hand\n');
    expect(existsSync(join(out, 'events.md'))).toBe(false);
  });
});

/** The documented fields of each event type in one table of docs/reference/events.md. */
function documentedEvents(section: string): Map<string, Set<string>> {
  const page = readFileSync(join(REPO_ROOT, 'docs', 'reference', 'events.md'), 'utf8');
  const table = page.split('\n## ').find((part) => part.startsWith(section))!;
  const events = new Map<string, Set<string>>();
  for (const match of table.matchAll(/^\| `(\w+)` \| (.*?) \|/gm)) {
    const fields = events.get(match[1]!) ?? new Set(['type']);
    for (const field of match[2]!.matchAll(/`(\w+)\??`: /g)) fields.add(field[1]!);
    events.set(match[1]!, fields);
  }
  return events;
}

describe('docs/reference/events.md', () => {
  it("documents every event and field of a real run's stream-json output and trace", async () => {
    const dir = makeTempDir('quarry-events-');
    const home = makeTempDir('quarry-events-home-');
    const script = join(dir, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          {
            text: 'Counting.',
            tool_calls: [
              { name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT COUNT(*) AS n FROM customers' } },
              { name: 'nope', arguments: {} },
            ],
          },
          { text: 'There are some customers.' },
        ],
      }),
    );
    const result = await runQuarry(
      ['--format', 'stream-json', '-m', `script:${script}`, '--db', `sales=${join(REPO_ROOT, 'fixtures', 'sample.db')}`, 'How many customers?'],
      {
        cwd: dir,
        env: { QUARRY_HOME: home },
      },
    );
    expect(result.code, result.stderr).toBe(0);
    const check = (events: Record<string, unknown>[], documented: Map<string, Set<string>>, extra: string[]) => {
      expect(events.length).toBeGreaterThan(5);
      for (const event of events) {
        const fields = documented.get(String(event.type));
        expect(fields, `event type ${String(event.type)} is not in events.md`).toBeDefined();
        for (const key of Object.keys(event)) if (!extra.includes(key)) expect(fields!.has(key), `${String(event.type)}.${key} is not in events.md`).toBe(true);
      }
    };
    const streamed = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    check(streamed, documentedEvents('Stream lines'), []);
    expect(new Set(streamed.map((event) => event.type))).toEqual(
      new Set(['run_start', 'turn_start', 'text', 'assistant_message', 'tool_start', 'tool_end', 'result']),
    );
    const [session] = readdirSync(join(home, 'sessions'));
    const trace = readFileSync(join(home, 'sessions', session!, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    check(trace, documentedEvents('Trace events'), ['ts']);
  });
});

describe('the quickstart', () => {
  it('runner: takes the sh blocks between the markers, skips installs and comments, keeps exports, and reports each exit code', async () => {
    const readme = [
      '# x',
      '```sh',
      'quarry --never-run',
      '```',
      '<!-- quickstart -->',
      '```sh',
      'npm ci && npm link',
      'npm ci && npm run hello -- from the script',
      '# a comment',
      'quarry --version',
      'export GREETING=hello',
      'echo "$GREETING" > greeting.txt',
      'quarry tool read --args \\',
      '  \'{"path": "greeting.txt"}\'',
      'quarry --no-such-flag',
      '```',
      '<!-- /quickstart -->',
    ].join('\n');
    const commands = quickstartCommands(readme, 'README.md', { hello: 'npm run build && echo' });
    expect(commands.map((command) => command.run)).toEqual([
      'echo from the script',
      'quarry --version',
      'echo "$GREETING" > greeting.txt',
      'quarry tool read --args \'{"path": "greeting.txt"}\'',
      'quarry --no-such-flag',
    ]);
    const cwd = scratchCheckout();
    const results = await runQuickstart(commands, { cli: CLI_PATH, cwd, home: makeTempDir('quarry-quickstart-home-') });
    expect(results.map((result) => result.code)).toEqual([0, 0, 0, 0, 2]);
    expect(results[0]!.output).toBe('from the script\n');
    expect(results[3]!.output).toContain('hello');
    expect(readFileSync(join(cwd, 'greeting.txt'), 'utf8')).toBe('hello\n');
    expect(existsSync(join(REPO_ROOT, 'greeting.txt'))).toBe(false);
    expect(() => quickstartCommands('# no quickstart here\n')).toThrow(
      /README.md has no quickstart: expected a section between <!-- quickstart --> and <!-- \/quickstart -->/,
    );
  });

  it('of README.md: every command exits 0', async () => {
    const { scripts } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const commands = quickstartCommands(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'), 'README.md', scripts);
    expect(commands.length).toBeGreaterThan(0);
    const results = await runQuickstart(commands, { cli: CLI_PATH, cwd: scratchCheckout(), home: makeTempDir('quarry-quickstart-home-') });
    for (const result of results) expect(result.code, `${result.line}\n${result.output}`).toBe(0);
  }, 600_000);
});
