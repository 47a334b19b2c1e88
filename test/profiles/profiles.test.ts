import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '../../src/agent/toolset.js';
import { approvalReason } from '../../src/agent/approval.js';
import { listProfileNames, loadProfile } from '../../src/profiles/load.js';
import { ProfileError } from '../../src/errors.js';
import { ENGINES, loadDatabaseConfigs } from '../../src/config/databases.js';
import { DATABASE_TOOL_NAMES } from '../../src/profiles/schema.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

let home: string;
const savedHome = process.env.QUARRY_HOME;
beforeEach(() => {
  home = makeTempDir('quarry-home-');
  process.env.QUARRY_HOME = home;
});
afterEach(() => {
  if (savedHome === undefined) delete process.env.QUARRY_HOME;
  else process.env.QUARRY_HOME = savedHome;
});

function writeUserProfile(name: string, text: string): string {
  mkdirSync(join(home, 'profiles'), { recursive: true });
  const path = join(home, 'profiles', `${name}.yaml`);
  writeFileSync(path, text);
  return path;
}

describe('built-in profiles', () => {
  it('match the table of docs/guide/profiles.md', () => {
    const table = ['readonly', 'developer', 'eval', 'daytona'].map((name) => {
      const p = loadProfile(name);
      return [p.name, p.shell, p.file_write, p.database, p.approval.mode, p.backend, p.shell_timeout];
    });
    expect(table).toEqual([
      ['readonly', 'restricted', 'off', 'readonly', 'dangerous', 'local', 120],
      ['developer', 'unrestricted', 'full', 'readonly', 'granular', 'local', 300],
      ['eval', 'unrestricted', 'full', 'mutations', 'none', 'local', 300],
      ['daytona', 'unrestricted', 'full', 'readonly', 'none', 'daytona', 300],
    ]);
    expect(loadProfile('developer').approval.tools).toEqual(['sqlite', 'postgres', 'mysql', 'oracle', 'vertica']);
  });

  it('readonly is the default', () => {
    expect(loadProfile().name).toBe('readonly');
  });
});

describe('user profiles and paths', () => {
  it('loads a user profile from $QUARRY_HOME/profiles, with safe defaults for what it leaves out', () => {
    writeUserProfile('analyst', 'description: exports allowed\nfile_write: create-only\nwrite_roots: [/srv/exports]\n');
    const p = loadProfile('analyst');
    expect(p).toMatchObject({
      name: 'analyst',
      shell: 'restricted',
      file_write: 'create-only',
      database: 'readonly',
      backend: 'local',
      write_roots: ['/srv/exports'],
    });
    expect(p.approval).toEqual({ mode: 'dangerous', tools: [], patterns: [] });
    expect(listProfileNames()).toEqual(['readonly', 'developer', 'eval', 'daytona', 'analyst']);
  });

  it('loads a profile from a path relative to the given directory', () => {
    const dir = makeTempDir();
    writeFileSync(join(dir, 'mine.yml'), 'shell: unrestricted\napproval: {mode: granular, patterns: ["rm\\\\s+-rf", "DROP\\\\s+TABLE"]}\n');
    const p = loadProfile('./mine.yml', dir);
    expect(p.name).toBe('mine');
    expect(p.approval.patterns).toEqual(['rm\\s+-rf', 'DROP\\s+TABLE']);
  });

  it('never lets a user file shadow a built-in profile', () => {
    writeUserProfile('readonly', 'shell: unrestricted\nfile_write: full\n');
    expect(loadProfile('readonly').shell).toBe('restricted');
  });
});

describe('profile errors name the key and the allowed values', () => {
  const cases: Array<[string, RegExp]> = [
    ['shel: restricted\n', /unknown key "shel"; allowed keys: name, description, shell, file_write/],
    ['shell: sometimes\n', /"shell" is "sometimes"; allowed values: restricted, unrestricted/],
    ['file_write: true\n', /"file_write" is true; allowed values: off, create-only, full/],
    ['database: rw\n', /"database" is "rw"; allowed values: readonly, mutations/],
    ['approval: {mode: ask}\n', /"approval.mode" is "ask"; allowed values: all, dangerous, granular, none/],
    ['approval: {mode: granular, tool: [bash]}\n', /approval: unknown key "tool"; allowed keys: mode, tools, patterns/],
    ['approval: {patterns: ["(unclosed"]}\n', /"approval.patterns" entry "\(unclosed" is not a valid regular expression/],
    ['shell_timeout: 900\n', /"shell_timeout" must be a whole number of seconds from 1 to 600, got 900/],
    ['backend: docker\n', /"backend" is "docker"; allowed values: local, daytona/],
    ['tools: bash\n', /"tools" must be a list of strings, got "bash"/],
    ['shell_timeout: "5"\n', /"shell_timeout" must be a whole number, got "5"/],
    ['- just\n- a list\n', /a profile must be a YAML mapping/],
    ['shell: [unclosed\n', /invalid YAML/],
  ];
  for (const [text, expected] of cases) {
    it(`rejects ${JSON.stringify(text.trim())}`, () => {
      const path = writeUserProfile('bad', text);
      expect(() => loadProfile('bad')).toThrow(ProfileError);
      expect(() => loadProfile('bad')).toThrow(expected);
      expect(() => loadProfile('bad')).toThrow(path);
    });
  }

  it('names the available profiles for an unknown name, and the path for a missing file', () => {
    expect(() => loadProfile('nosuch')).toThrow('unknown profile "nosuch"; available: readonly, developer, eval, daytona');
    expect(() => loadProfile('/no/such/profile.yaml')).toThrow('profile file not found: /no/such/profile.yaml');
  });
});

describe('tools per profile', () => {
  it('registers write and edit only where file_write allows them', () => {
    expect(buildToolRegistry(loadProfile('readonly')).names()).not.toContain('write');
    expect(buildToolRegistry(loadProfile('readonly')).names()).not.toContain('edit');
    writeUserProfile('creator', 'file_write: create-only\n');
    const creator = buildToolRegistry(loadProfile('creator')).names();
    expect(creator).toContain('write');
    expect(creator).not.toContain('edit');
    expect(buildToolRegistry(loadProfile('developer')).names()).toEqual(expect.arrayContaining(['read', 'grep', 'glob', 'list', 'write', 'edit']));
  });

  it('every database engine is a tool name a profile may list', () => {
    expect([...DATABASE_TOOL_NAMES].sort()).toEqual([...ENGINES].sort());
    writeUserProfile('columnar', 'tools: [read, clickhouse, duckdb]\n');
    expect(loadProfile('columnar').tools).toEqual(['read', 'clickhouse', 'duckdb']);
  });

  it('honours the tools allow-list', () => {
    writeUserProfile('narrow', 'file_write: full\ntools: [read, edit]\n');
    expect(buildToolRegistry(loadProfile('narrow')).names().sort()).toEqual(['edit', 'read']);
  });
});

describe('approval rules', () => {
  const registry = buildToolRegistry(loadProfile('eval'));
  const read = registry.get('read')!;
  const write = registry.get('write')!;

  it('dangerous asks before tools that can change things and not before reads', () => {
    const p = loadProfile('readonly');
    expect(approvalReason(p, read, { path: 'x' })).toBeNull();
    expect(approvalReason(p, write, { path: 'x', content: '' })).toMatch(/write can change things/);
    const databases = loadDatabaseConfigs({ dbFlags: [join(REPO_ROOT, 'fixtures', 'sample.db')], env: {}, cwd: REPO_ROOT });
    const database = buildToolRegistry(p, { databases }).get('sqlite')!;
    expect(approvalReason(p, database, { operation: 'profile', table_name: 't', output_path: 'p.md' })).toBe(
      'sqlite profile writes a new file (p.md), and profile "readonly" asks before such calls',
    );
    expect(approvalReason(p, database, { operation: 'profile', table_name: 't' })).toBeNull();
  });

  it('granular asks for listed tools and for arguments matching a pattern', () => {
    writeUserProfile('careful', 'file_write: full\napproval: {mode: granular, tools: [read], patterns: ["rm\\\\s+-rf"]}\n');
    const p = loadProfile('careful');
    expect(approvalReason(p, read, { path: 'x' })).toMatch(/asks before every read call/);
    expect(approvalReason(p, write, { path: 'a.sh', content: 'echo hi' })).toBeNull();
    expect(approvalReason(p, write, { path: 'a.sh', content: 'sudo RM  -RF /' })).toMatch(/match the approval pattern/);
  });

  it('all asks for everything and none for nothing', () => {
    writeUserProfile('asker', 'approval: {mode: all}\n');
    expect(approvalReason(loadProfile('asker'), read, { path: 'x' })).not.toBeNull();
    expect(approvalReason(loadProfile('eval'), write, { path: 'x', content: '' })).toBeNull();
  });
});
