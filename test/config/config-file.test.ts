import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readConfigFile } from '../../src/config/config-file.js';
import { loadDatabaseConfigs } from '../../src/config/databases.js';
import { configFileLocation } from '../../src/config/home.js';
import { loadMcpServers } from '../../src/config/mcp-servers.js';
import { ConfigError, exitCodeForError, ProfileError, UsageError } from '../../src/errors.js';
import { loadProfile } from '../../src/profiles/load.js';
import { makeTempDir } from '../support/context.js';

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('where config.yaml is (src/config/home.ts)', () => {
  it('--config FILE relative to the current directory, else $QUARRY_HOME/config.yaml', () => {
    expect(configFileLocation('sub/c.yaml', { QUARRY_HOME: '/h' }, '/work')).toEqual({ path: '/work/sub/c.yaml', flag: '--config' });
    expect(configFileLocation(undefined, { QUARRY_HOME: '/h' }, '/work')).toEqual({ path: '/h/config.yaml' });
  });

  it('the default file may be absent (nothing configured); a named one must exist and be a file', () => {
    const home = makeTempDir('quarry-home-');
    expect(readConfigFile(configFileLocation(undefined, { QUARRY_HOME: home }, home))).toEqual({ file: join(home, 'config.yaml'), settings: {} });
    const missing = errorOf(() => readConfigFile(configFileLocation('missing.yaml', {}, home)));
    expect(missing).toBeInstanceOf(ConfigError);
    expect(missing.message).toBe(`--config ${join(home, 'missing.yaml')}: file not found`);
    mkdirSync(join(home, 'folder.yaml'));
    expect(errorOf(() => readConfigFile(configFileLocation('folder.yaml', {}, home))).message).toBe(
      `--config ${join(home, 'folder.yaml')}: is a folder; expected a YAML file`,
    );
  });
});

describe('config.yaml is one mapping, read the same for databases and MCP servers', () => {
  it('a top level that is not a mapping is the same error for both, and for a --databases file (db list used to ignore it)', () => {
    const home = makeTempDir('quarry-home-');
    const file = join(home, 'config.yaml');
    writeFileSync(file, '- databases\n- mcp_servers\n');
    const expected = `${file}: expected a mapping of settings at the top level`;
    expect(errorOf(() => loadMcpServers(undefined, { QUARRY_HOME: home }, home)).message).toBe(expected);
    const config = errorOf(() => readConfigFile(configFileLocation(undefined, { QUARRY_HOME: home }, home)));
    expect(config.message).toBe(expected);
    expect(errorOf(() => loadDatabaseConfigs({ databasesFile: file, env: {}, cwd: home })).message).toBe(expected);
  });

  it('an empty file configures nothing', () => {
    const home = makeTempDir('quarry-home-');
    writeFileSync(join(home, 'config.yaml'), '');
    const config = readConfigFile(configFileLocation(undefined, { QUARRY_HOME: home }, home));
    expect(config.settings).toEqual({});
    expect(loadDatabaseConfigs({ config, env: {}, cwd: home })).toEqual([]);
    expect(loadMcpServers(undefined, { QUARRY_HOME: home }, home)).toEqual([]);
  });
});

describe('one error family (src/errors.ts)', () => {
  it('configuration and profile errors are usage errors: exit 2; anything else exits 1', () => {
    const config = errorOf(() => readConfigFile(configFileLocation('/nonexistent.yaml')));
    const profile = errorOf(() => loadProfile('/no/such/profile.yaml'));
    expect(profile).toBeInstanceOf(ProfileError);
    for (const error of [config, profile, new UsageError('x')]) {
      expect(error).toBeInstanceOf(UsageError);
      expect(exitCodeForError(error)).toBe(2);
    }
    expect(exitCodeForError(new Error('internal'))).toBe(1);
    expect(exitCodeForError('a string')).toBe(1);
  });

  it('a profile and config.yaml report invalid YAML and unknown keys in the same words', () => {
    const dir = makeTempDir('quarry-profiles-');
    writeFileSync(join(dir, 'bad.yaml'), 'shell: [unclosed\n');
    writeFileSync(join(dir, 'typo.yaml'), 'shel: restricted\n');
    writeFileSync(join(dir, 'config.yaml'), 'databases: [unclosed\n');
    const profileYaml = errorOf(() => loadProfile(join(dir, 'bad.yaml'))).message;
    const configYaml = errorOf(() => readConfigFile(configFileLocation(join(dir, 'config.yaml')))).message;
    expect(profileYaml).toMatch(new RegExp(`^${join(dir, 'bad.yaml')}: invalid YAML: `));
    expect(configYaml).toMatch(new RegExp(`^${join(dir, 'config.yaml')}: invalid YAML: `));
    expect(errorOf(() => loadProfile(join(dir, 'typo.yaml'))).message).toMatch(
      new RegExp(`^${join(dir, 'typo.yaml')}: unknown key "shel"; allowed keys: name, description, shell, `),
    );
  });
});
