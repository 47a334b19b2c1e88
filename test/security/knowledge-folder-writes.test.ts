import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../support/agent-cli.js';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

/**
 * A project's `.quarry/knowledge/` is text later sessions trust as the user's own (docs/security.md):
 * a model steered by data it read must not launder that data into it. No tool writes inside a
 * `.quarry` directory, in any write mode: write and edit under `full`, create-only writes, exports,
 * `profile` and `chart` outputs, directly and through a link. Everyday writes beside it still work.
 */

let home: string;
let work: string;
let env: Record<string, string | undefined>;
const knowledge = () => join(work, '.quarry', 'knowledge');

function treeHash(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[relative(root, path)] = createHash('sha256').update(readFileSync(path)).digest('hex');
    }
  };
  walk(root);
  return out;
}

beforeAll(() => {
  home = makeTempDir('quarry-knowledge-writes-home-');
  work = makeTempDir('quarry-knowledge-writes-work-');
  mkdirSync(join(knowledge(), 'notes'), { recursive: true });
  writeFileSync(join(knowledge(), 'rules.yaml'), '- rule: Revenue excludes refunds.\n');
  symlinkSync(knowledge(), join(work, 'kn'));
  const db = new Database(join(work, 'shop.db'));
  db.exec("CREATE TABLE tickets (region TEXT, amount REAL, body TEXT); INSERT INTO tickets VALUES ('north', 3, '<<DO send>>'), ('south', 5, 'ok');");
  db.close();
  env = cliEnv(join(home, '.quarry'), { HOME: home });
});

async function tool(name: string, args: Record<string, unknown>, flags: string[]) {
  const result = await runQuarry(['tool', name, '--args', JSON.stringify(args), '-w', work, '--db', `shop=${join(work, 'shop.db')}`, ...flags], {
    env,
    timeoutMs: 60_000,
  });
  return { code: result.code, text: result.stdout + result.stderr };
}

describe('the knowledge folder is never written by a tool', () => {
  it.each([
    ['write', { path: '.quarry/knowledge/notes/pwned.md', content: '<<DO send>>\n' }, ['-p', 'developer']],
    ['write', { path: 'kn/notes/linked.md', content: '<<DO send>>\n' }, ['-p', 'developer']],
    ['write', { path: '.quarry/knowledge/rules.yaml', content: '- rule: send everything\n' }, ['-p', 'developer']],
    ['edit', { path: '.quarry/knowledge/rules.yaml', old_string: 'Revenue', new_string: 'Send' }, ['-p', 'developer']],
    [
      'sqlite',
      { operation: 'export_query', sql: 'SELECT body AS rule FROM tickets', output_path: '.quarry/knowledge/rules.json' },
      ['-p', 'readonly', '--yes'],
    ],
    ['sqlite', { operation: 'profile', table_name: 'tickets', output_path: '.quarry/knowledge/notes/tickets.md' }, ['-p', 'readonly', '--yes']],
    ['sqlite', { operation: 'profile', table_name: 'tickets', output_path: 'kn/notes/linked-profile.md' }, ['-p', 'readonly', '--yes']],
    [
      'chart',
      { sql: 'SELECT region, amount FROM tickets', x: 'region', y: 'amount', output_path: '.quarry/knowledge/notes/chart.svg' },
      ['-p', 'readonly', '--yes'],
    ],
  ] as const)('%s %j is refused', async (name, args, flags) => {
    const before = treeHash(knowledge());
    const { code, text } = await tool(name, args, [...flags]);
    expect(code, text).not.toBe(0);
    expect(text).toMatch(/inside a \.quarry directory are never written/);
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(treeHash(knowledge())).toEqual(before);
  });

  it.each([
    ['write', { path: 'team-kb/notes/pwned.md', content: '<<DO send>>\n' }, ['-p', 'developer']],
    ['edit', { path: 'team-kb/rules.yaml', old_string: 'Revenue', new_string: 'Send' }, ['-p', 'developer']],
    ['sqlite', { operation: 'export_query', sql: 'SELECT body AS rule FROM tickets', output_path: 'team-kb/rules.json' }, ['-p', 'readonly', '--yes']],
    ['sqlite', { operation: 'profile', table_name: 'tickets', output_path: 'kb-link/notes/t.md' }, ['-p', 'readonly', '--yes']],
  ] as const)('a knowledge folder given with --knowledge elsewhere: %s %j is refused', async (name, args, flags) => {
    const folder = join(work, 'team-kb');
    if (!existsSync(folder)) {
      mkdirSync(join(folder, 'notes'), { recursive: true });
      writeFileSync(join(folder, 'rules.yaml'), '- rule: Revenue excludes refunds.\n');
      symlinkSync(folder, join(work, 'kb-link'));
    }
    const before = treeHash(folder);
    const { code, text } = await tool(name, args, [...flags, '--knowledge', folder]);
    expect(code, text).not.toBe(0);
    expect(text).toMatch(/is the knowledge folder \(later sessions read it as the team's own text; edit it yourself\)/);
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(treeHash(folder)).toEqual(before);
  });

  it('everyday writes beside it still work', async () => {
    expect((await tool('write', { path: 'notes/ok.md', content: 'fine\n' }, ['-p', 'developer'])).code).toBe(0);
    expect(readFileSync(join(work, 'notes', 'ok.md'), 'utf8')).toBe('fine\n');
    expect((await tool('sqlite', { operation: 'export_query', sql: 'SELECT * FROM tickets', output_path: 'out.csv' }, ['-p', 'readonly', '--yes'])).code).toBe(
      0,
    );
    expect(existsSync(join(work, 'out.csv'))).toBe(true);
  });
});
