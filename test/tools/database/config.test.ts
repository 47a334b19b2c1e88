import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError, describeDatabase, loadDatabaseConfigs } from '../../../src/tools/database/config.js';
import { makeTempDir } from '../../support/context.js';

const dir = makeTempDir();
writeFileSync(join(dir, 'sales.db'), '');

describe('database configuration', () => {
  test('--db takes URLs, sqlite:PATH and plain paths, with default or explicit aliases', () => {
    const configs = loadDatabaseConfigs({
      dbFlags: ['sales.db', 'copy=sqlite:sales.db', 'postgres://ann:p%40ss@db.example.com:5433/warehouse?statement_timeout=30', 'mariadb://bob@localhost/shop', 'ora=oracle://scott:tiger@orahost:1522/ORCLPDB1', 'vertica://v@vhost/analytics?connect_timeout=3'],
      env: {},
      cwd: dir,
    });
    expect(configs.map((c) => [c.alias, c.engine])).toEqual([['sales', 'sqlite'], ['copy', 'sqlite'], ['warehouse', 'postgres'], ['shop', 'mysql'], ['ora', 'oracle'], ['analytics', 'vertica']]);
    expect(configs[0]).toMatchObject({ path: join(dir, 'sales.db'), connectTimeoutMs: 10_000, statementTimeoutMs: 120_000 });
    expect(configs[2]).toMatchObject({ host: 'db.example.com', port: 5433, user: 'ann', password: 'p@ss', database: 'warehouse', statementTimeoutMs: 30_000 });
    expect(configs[4]).toMatchObject({ dsn: 'orahost:1522/ORCLPDB1', user: 'scott', password: 'tiger' });
    expect(configs[5]).toMatchObject({ connectTimeoutMs: 3000 });
    expect(configs.map(describeDatabase).join('\n')).not.toMatch(/p@ss|tiger/);
  });

  test('environment variables', () => {
    const configs = loadDatabaseConfigs({
      env: { SQLITE_DB: ' sales.db ', POSTGRES_HOST: 'pg', POSTGRES_DATABASE: 'dw', POSTGRES_USER: 'u', POSTGRES_PASSWORD: 'pw', MYSQL_HOST: 'my', MYSQL_PORT: '3307', ORACLE_DSN: 'o:1521/X', VERTICA_DATABASE: 'vdb' },
      cwd: dir,
    }).slice(1);
    expect(configs.map((c) => [c.alias, c.engine, c.host ?? c.dsn])).toEqual([['dw', 'postgres', 'pg'], ['mysql', 'mysql', 'my'], ['vdb', 'vertica', 'localhost'], ['X', 'oracle', 'o:1521/X']]);
  });

  test('duplicate aliases are an error naming both sources', () => {
    expect(() => loadDatabaseConfigs({ dbFlags: ['sales.db'], env: { SQLITE_DB: 'sales.db' }, cwd: dir })).toThrow(
      'database alias "sales" is configured twice (--db sales.db and env SQLITE_DB); give one of them another name with --db ALIAS=TARGET',
    );
  });

  test('YAML with ${VAR} interpolation; an unset variable is an error naming it', () => {
    const file = join(dir, 'dbs.yaml');
    writeFileSync(file, 'databases:\n  wh:\n    type: postgres\n    host: ${PGHOST_X}\n    port: 5432\n    database: dw\n    user: me\n    password: ${PGPASS_X}\n    statement_timeout: 5\n  local:\n    type: sqlite\n    path: sales.db\n');
    const configs = loadDatabaseConfigs({ databasesFile: file, env: { PGHOST_X: 'h', PGPASS_X: 'secret' }, cwd: dir });
    expect(configs[0]).toMatchObject({ alias: 'wh', host: 'h', password: 'secret', statementTimeoutMs: 5000 });
    expect(configs[1]).toMatchObject({ alias: 'local', path: join(dir, 'sales.db') });
    expect(() => loadDatabaseConfigs({ databasesFile: file, env: { PGHOST_X: 'h' }, cwd: dir })).toThrow(`${file}: databases.wh.password: environment variable PGPASS_X is not set (referenced as \${PGPASS_X})`);
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
    expect(() => loadDatabaseConfigs({ databasesFile: yaml, env: {}, cwd: dir })).toThrow('databases.a.type must be one of sqlite, postgres, mysql, oracle, vertica, duckdb (got "nosql")');
  });
});
