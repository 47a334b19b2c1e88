import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { describeDatabase, loadDatabaseConfigs } from '../../src/config/databases.js';
import { ConfigError } from '../../src/errors.js';
import { makeTempDir } from '../support/context.js';

const dir = makeTempDir();
writeFileSync(join(dir, 'sales.db'), '');

describe('database configuration', () => {
  test('--db takes URLs, sqlite:PATH and plain paths, with default or explicit aliases', () => {
    const configs = loadDatabaseConfigs({
      dbFlags: [
        'sales.db',
        'copy=sqlite:sales.db',
        'postgres://ann:p%40ss@db.example.com:5433/warehouse?statement_timeout=30',
        'mariadb://bob@localhost/shop',
        'ora=oracle://scott:tiger@orahost:1522/ORCLPDB1',
        'vertica://v@vhost/analytics?connect_timeout=3',
      ],
      env: {},
      cwd: dir,
    });
    expect(configs.map((c) => [c.alias, c.engine])).toEqual([
      ['sales', 'sqlite'],
      ['copy', 'sqlite'],
      ['warehouse', 'postgres'],
      ['shop', 'mysql'],
      ['ora', 'oracle'],
      ['analytics', 'vertica'],
    ]);
    expect(configs[0]).toMatchObject({ path: join(dir, 'sales.db'), connectTimeoutMs: 10_000, statementTimeoutMs: 120_000 });
    expect(configs[2]).toMatchObject({ host: 'db.example.com', port: 5433, user: 'ann', password: 'p@ss', database: 'warehouse', statementTimeoutMs: 30_000 });
    expect(configs[4]).toMatchObject({ dsn: 'orahost:1522/ORCLPDB1', user: 'scott', password: 'tiger' });
    expect(configs[5]).toMatchObject({ connectTimeoutMs: 3000 });
    expect(configs.map(describeDatabase).join('\n')).not.toMatch(/p@ss|tiger/);
  });

  test('environment variables', () => {
    const configs = loadDatabaseConfigs({
      env: {
        SQLITE_DB: ' sales.db ',
        POSTGRES_HOST: 'pg',
        POSTGRES_DATABASE: 'dw',
        POSTGRES_USER: 'u',
        POSTGRES_PASSWORD: 'pw',
        MYSQL_HOST: 'my',
        MYSQL_PORT: '3307',
        ORACLE_DSN: 'o:1521/X',
        VERTICA_DATABASE: 'vdb',
      },
      cwd: dir,
    }).slice(1);
    expect(configs.map((c) => [c.alias, c.engine, c.host ?? c.dsn])).toEqual([
      ['dw', 'postgres', 'pg'],
      ['mysql', 'mysql', 'my'],
      ['vdb', 'vertica', 'localhost'],
      ['X', 'oracle', 'o:1521/X'],
    ]);
  });

  test('the same database from two sources is one; two databases under one explicit alias are an error naming both sources', () => {
    const one = loadDatabaseConfigs({ dbFlags: ['sales.db'], env: { SQLITE_DB: join(dir, 'sales.db') }, cwd: dir });
    expect(one.map((c) => [c.alias, c.path, c.source])).toEqual([['sales', join(dir, 'sales.db'), '--db sales.db and env SQLITE_DB']]);
    writeFileSync(join(dir, 'other.db'), readFileSync(join(dir, 'sales.db')));
    expect(() => loadDatabaseConfigs({ dbFlags: ['x=sales.db', 'x=other.db'], env: {}, cwd: dir })).toThrow(
      `database alias "x" names two different databases (sqlite ${join(dir, 'sales.db')} from --db x=sales.db, and sqlite ${join(dir, 'other.db')} from ` +
        `--db x=other.db); give one of them another name with --db ALIAS=TARGET`,
    );
    // Derived aliases that collide get the engine appended, so both databases stay usable.
    const both = loadDatabaseConfigs({ env: { POSTGRES_HOST: 'h', POSTGRES_DB: 'shop', MYSQL_HOST: 'h', MYSQL_DATABASE: 'shop' }, cwd: dir });
    expect(both.map((c) => [c.alias, c.engine, c.database])).toEqual([
      ['shop', 'postgres', 'shop'],
      ['shop_mysql', 'mysql', 'shop'],
    ]);
    const [clickhouse] = loadDatabaseConfigs({
      env: { CLICKHOUSE_HOST: 'ch', CLICKHOUSE_DB: 'events', CLICKHOUSE_USER: 'u', CLICKHOUSE_PASSWORD: 'p' },
      cwd: dir,
    });
    expect(clickhouse).toMatchObject({
      alias: 'events',
      engine: 'clickhouse',
      host: 'ch',
      database: 'events',
      user: 'u',
      password: 'p',
      source: 'env CLICKHOUSE_*',
    });
    expect(describeDatabase(clickhouse!)).toBe('clickhouse u@ch:8123/events');
    expect(() => loadDatabaseConfigs({ env: { POSTGRES_DB: 'a', POSTGRES_DATABASE: 'b' }, cwd: dir })).toThrow(
      'POSTGRES_DATABASE and POSTGRES_DB are both set, to different databases; set one of them',
    );
  });

  test('YAML with ${VAR} interpolation; an unset variable is an error naming it', () => {
    const file = join(dir, 'dbs.yaml');
    writeFileSync(
      file,
      'databases:\n  wh:\n    type: postgres\n    host: ${PGHOST_X}\n    port: 5432\n    database: dw\n    user: me\n    password: ${PGPASS_X}\n    ' +
        'statement_timeout: 5\n  local:\n    type: sqlite\n    path: sales.db\n',
    );
    const configs = loadDatabaseConfigs({ databasesFile: file, env: { PGHOST_X: 'h', PGPASS_X: 'secret' }, cwd: dir });
    expect(configs[0]).toMatchObject({ alias: 'wh', host: 'h', password: 'secret', statementTimeoutMs: 5000 });
    expect(configs[1]).toMatchObject({ alias: 'local', path: join(dir, 'sales.db') });
    expect(() => loadDatabaseConfigs({ databasesFile: file, env: { PGHOST_X: 'h' }, cwd: dir })).toThrow(
      `${file}: databases.wh.password: environment variable PGPASS_X is not set (referenced as \${PGPASS_X})`,
    );
  });

  test('bad input is a ConfigError that says what to fix, without the password', () => {
    const cases: [string[], RegExp][] = [
      [['redis://x'], /unsupported database URL scheme "redis:\/\/"/],
      [['missing.db'], /no such SQLite database file: .*missing\.db/],
      [['postgres://u:hunter2@h/d?sslmode=require'], /unknown URL parameter "sslmode"/],
      [['x='], /missing target/],
    ];
    for (const [flags, message] of cases) {
      let error: unknown;
      try {
        loadDatabaseConfigs({ dbFlags: flags, env: {}, cwd: dir });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain('hunter2');
    }
    const yaml = join(dir, 'bad.yaml');
    writeFileSync(yaml, 'databases:\n  a:\n    type: nosql\n');
    expect(() => loadDatabaseConfigs({ databasesFile: yaml, env: {}, cwd: dir })).toThrow(
      '"databases.a.type" is "nosql"; allowed values: sqlite, sqlite3, duckdb, postgres, postgresql, mysql, mariadb, oracle, vertica, clickhouse',
    );
  });
});

describe('passwords in messages', () => {
  test('are scrubbed as values, never garbling the rest, never hiding the user', async () => {
    const { scrubSecrets } = await import('../../src/tools/database/secrets.js');
    const message = 'password authentication failed for user "postgres"';
    expect(scrubSecrets(message, { password: 'a', user: 'postgres' })).toBe(message);
    expect(scrubSecrets('password authentication failed for user "alice"', { password: 'alice', user: 'alice' })).toBe(
      'password authentication failed for user "alice"',
    );
    expect(scrubSecrets('cannot connect: postgres://u:a@h/db', { password: 'a' })).toBe('cannot connect: postgres://u:***@h/db');
    expect(scrubSecrets('conn "host=h password=a user=u" failed', { password: 'a' })).toBe('conn "host=h password=*** user=u" failed');
    expect(scrubSecrets('{"password":"s3cr3t!x"} and s3cr3t!x alone', { password: 's3cr3t!x' })).toBe('{"password":"***"} and *** alone');
    // Randomised: a password never survives in a URL or after password=, and the surrounding text is intact.
    for (let i = 0; i < 200; i++) {
      const alphabet = 'abcXYZ019 @:/%!#';
      const password = Array.from({ length: 1 + (i % 12) }, (_, k) => alphabet[(i * 7 + k * 13) % alphabet.length]).join('');
      const text = `failed: password=${password}; retrying`;
      expect(scrubSecrets(text, { password })).toBe('failed: password=***; retrying');
    }
  });

  test('db URLs are parsed once: a password with a space or "@" is never shown, whole or in part', () => {
    for (const [flag, user] of [
      ['postgres://u:pa ss@h/db', 'u'],
      ['postgres://u:p@ss@h/db', 'u'],
      ['mysql://me:a:b@c@h:3307/shop', 'me'],
    ] as const) {
      const [config] = loadDatabaseConfigs({ dbFlags: [flag], env: {}, cwd: dir });
      expect(config!.user).toBe(user);
      expect(config!.source).toMatch(/^--db (postgres|mysql):\/\/\w+:\*\*\*@h(:3307)?\/\w+$/);
      expect(describeDatabase(config!)).not.toContain('ss');
    }
    expect(() => loadDatabaseConfigs({ dbFlags: ['postgres://u:p%zz@h/db'], env: {}, cwd: dir })).toThrow(
      /^--db postgres:\/\/u:\*\*\*@h\/db: the URL's password has a malformed %-escape/,
    );
  });
});
