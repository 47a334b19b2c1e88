import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { CLI_PATH } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { cancelStopsOnServer, type ServedQuarry, serveQuarryMcp, toolText } from '../support/mcp-served.js';

/**
 * `quarry mcp` over stdio with the SDK's own Client, against a real SQLite file and the real
 * PostgreSQL and MariaDB servers: the tools listed per profile, calls through the guarded path,
 * mutation attempts refused with no effect, cancellation that stops a running query, progress
 * for exports, and quarry itself as a client of `quarry mcp`.
 */

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the database servers did not start`);
  return value;
}

let home: string;
let work: string;
let sqlitePath: string;
let pgUrl: string;
let mysqlUrl: string;
let pgAdmin: pg.Client;
const openClients: ServedQuarry[] = [];

async function serve(args: string[]): Promise<ServedQuarry> {
  const served = await serveQuarryMcp(home, work, args);
  openClients.push(served);
  return served;
}

const text = toolText;

beforeAll(async () => {
  home = makeTempDir('quarry-mcp-serve-home-');
  work = makeTempDir('quarry-mcp-serve-work-');
  sqlitePath = join(work, 'shop.db');
  const db = new Database(sqlitePath);
  db.exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items (name) VALUES ('apple'), ('pear'), ('plum');");
  db.close();
  writeFileSync(join(work, 'notes.txt'), 'hello from the working directory\n');
  pgUrl = requireEnv('QUARRY_TEST_PG_URL');
  mysqlUrl = requireEnv('QUARRY_TEST_MYSQL_URL');
  pgAdmin = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_ADMIN_URL') });
  await pgAdmin.connect();
  await pgAdmin.query(`DROP TABLE IF EXISTS mcp_items; CREATE TABLE mcp_items (id int PRIMARY KEY, name text);
    INSERT INTO mcp_items VALUES (1, 'a'), (2, 'b'); ALTER TABLE mcp_items OWNER TO quarry_test;`);
  const my = await mysql.createConnection(requireEnv('QUARRY_TEST_MYSQL_ADMIN_URL'));
  await my.query('DROP TABLE IF EXISTS mcp_items');
  await my.query('CREATE TABLE mcp_items (id int PRIMARY KEY, name varchar(20))');
  await my.query("INSERT INTO mcp_items VALUES (1, 'a'), (2, 'b')");
  await my.end();
});

afterAll(async () => {
  await Promise.allSettled(openClients.map(({ client }) => client.close()));
  await pgAdmin?.end();
});

describe('quarry mcp over stdio', () => {
  it("serves the readonly profile's tools with truthful annotations, and exits when the client closes", async () => {
    const served = await serve(['--db', `shop=${sqlitePath}`, '--db', `pg=${pgUrl}`, '--db', `my=${mysqlUrl}`]);
    const { tools } = await served.client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['bash', 'glob', 'grep', 'list', 'mysql', 'postgres', 'read', 'read_excel', 'sqlite']);
    const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
    expect(byName.read!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    // Restricted bash is read-only because of the profile's guard.
    expect(byName.bash!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    // Without --yes the readonly profile's export_query is refused (it writes a file): as served, every database tool only
    // reads, and the configured databases are not an open world.
    for (const engine of ['sqlite', 'postgres', 'mysql'])
      expect(byName[engine]!.annotations, engine).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    expect(byName.sqlite!.inputSchema).toMatchObject({ type: 'object', required: ['operation'] });
    expect(served.client.getInstructions()).toContain('profile "readonly"');

    const read = await served.client.callTool({ name: 'read', arguments: { path: 'notes.txt' } });
    expect(read.isError).toBeFalsy();
    expect(text(read)).toContain('hello from the working directory');

    const badArgs = await served.client.callTool({ name: 'read', arguments: { nope: 1 } });
    expect(badArgs.isError).toBe(true);
    expect(text(badArgs)).toMatch(/read: .*path/);

    await served.client.close();
    await expect(Promise.race([served.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000))])).resolves.toBe(0);
  });

  it('refuses mutation attempts on every engine with no effect, the same message as agent runs', async () => {
    const served = await serve(['--db', `shop=${sqlitePath}`, '--db', `pg=${pgUrl}`, '--db', `my=${mysqlUrl}`]);
    const attempts: Array<[string, string]> = [
      ['sqlite', 'DELETE FROM items'],
      ['sqlite', "WITH x AS (SELECT 1) INSERT INTO items (name) SELECT 'evil' FROM x"],
      ['postgres', 'DELETE FROM mcp_items'],
      ['postgres', 'SELECT 1; DELETE FROM mcp_items'],
      ['postgres', 'WITH d AS (DELETE FROM mcp_items RETURNING *) SELECT * FROM d'],
      ['mysql', 'DELETE FROM mcp_items'],
      ['mysql', "UPDATE mcp_items SET name = 'x'"],
    ];
    for (const [tool, sql] of attempts) {
      const result = await served.client.callTool({ name: tool, arguments: { operation: 'query', sql } });
      expect(result.isError, `${tool}: ${sql}`).toBe(true);
      expect(text(result)).toMatch(/^refused: /);
    }
    const reads = await served.client.callTool({ name: 'postgres', arguments: { operation: 'query', sql: 'SELECT count(*) AS n FROM mcp_items' } });
    expect(text(reads)).toMatch(/│ 2 +│/);
    expect((await pgAdmin.query('SELECT count(*)::int AS n FROM mcp_items')).rows[0].n).toBe(2);
    const my = await mysql.createConnection(mysqlUrl);
    const [rows] = await my.query('SELECT count(*) AS n, group_concat(name ORDER BY id) AS names FROM mcp_items');
    await my.end();
    expect(rows).toEqual([{ n: 2, names: 'a,b' }]);
    const db = new Database(sqlitePath, { readonly: true });
    expect(db.prepare('SELECT group_concat(name) AS names FROM items').get()).toEqual({ names: 'apple,pear,plum' });
    db.close();
  });

  it('refuses calls the profile would ask about unless started with --yes, then exports with progress', async () => {
    const plain = await serve(['--db', `pg=${pgUrl}`]);
    const refused = await plain.client.callTool({ name: 'postgres', arguments: { operation: 'export_query', sql: 'SELECT 1', output_path: 'one.csv' } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('--yes');
    expect(existsSync(join(work, 'one.csv'))).toBe(false);

    const approved = await serve(['--yes', '--db', `pg=${pgUrl}`]);
    // With --yes export_query is served: the tool can write a new file (never overwrite), still closed-world.
    const approvedTools = Object.fromEntries((await approved.client.listTools()).tools.map((tool) => [tool.name, tool]));
    expect(approvedTools.postgres!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: false });
    const progress: number[] = [];
    const result = await approved.client.callTool(
      {
        name: 'postgres',
        arguments: { operation: 'export_query', sql: 'SELECT i, md5(i::text) AS h FROM generate_series(1, 1500000) AS i', output_path: 'big.csv' },
      },
      undefined,
      { onprogress: (event) => progress.push(event.progress), timeout: 120_000 },
    );
    expect(result.isError, text(result)).toBeFalsy();
    expect(text(result)).toContain('Exported 1,500,000 rows');
    const lines = readFileSync(join(work, 'big.csv'), 'utf8').split(/\r?\n/);
    expect(lines[0]).toBe('i,h');
    expect(lines[1500000]).toMatch(/^1500000,[0-9a-f]{32}$/);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((value, index) => index === 0 || value >= progress[index - 1]!)).toBe(true);
    expect(readdirSync(work).filter((name) => name.includes('.quarry-'))).toEqual([]);
  }, 120_000);

  it('a SQLite export reports progress to the client, and its preview and counts are what the file holds', async () => {
    const served = await serve(['--yes', '--db', `shop=${sqlitePath}`]);
    const progress: number[] = [];
    // Two seconds or so of rows: progress comes every 500 ms.
    const sql = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000000) SELECT i, i % 7 AS w, \'say "hi", \' || i AS t FROM n';
    const result = await served.client.callTool({ name: 'sqlite', arguments: { operation: 'export_query', sql, output_path: 'sqlite-big.csv' } }, undefined, {
      onprogress: (event) => progress.push(event.progress),
      timeout: 120_000,
    });
    expect(result.isError, text(result)).toBeFalsy();
    const bytes = readFileSync(join(work, 'sqlite-big.csv'));
    const lines = bytes.toString('utf8').split('\r\n');
    // Header, 4,000,000 records, and the empty text after the last CRLF.
    expect(lines).toHaveLength(4_000_002);
    expect(lines.slice(0, 3)).toEqual(['i,w,t', '1,1,"say ""hi"", 1"', '2,2,"say ""hi"", 2"']);
    expect(lines[4_000_000]).toBe('4000000,4,"say ""hi"", 4000000"');
    expect(text(result)).toContain(`Exported 4,000,000 rows (${(bytes.length / 1024 / 1024).toFixed(1)} MB`);
    expect(text(result)).toMatch(/│ 5 +│ 5 +│ say "hi", 5 +│/);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((value, index) => index === 0 || value >= progress[index - 1]!)).toBe(true);
    expect(progress.at(-1)).toBeLessThanOrEqual(4_000_000);
    expect(readdirSync(work).filter((name) => name.includes('.quarry-'))).toEqual([]);
  }, 120_000);

  it("a client's cancellation stops a running PostgreSQL query on the server", async () => {
    const served = await serve(['--db', `pg=${pgUrl}`]);
    const sleeping = async () =>
      (
        await pgAdmin.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' AND state = 'active' AND pid <> pg_backend_pid()",
        )
      ).rows[0].n as number;
    await cancelStopsOnServer(served.client, { name: 'postgres', arguments: { operation: 'query', sql: 'SELECT pg_sleep(60), 42 AS answer' } }, sleeping);
    // The server still answers afterwards.
    const after = await served.client.callTool({ name: 'postgres', arguments: { operation: 'query', sql: 'SELECT 7 AS seven' } });
    expect(text(after)).toMatch(/│ 7 +│/);
  }, 60_000);

  it("lists each database's tables as a resource", async () => {
    const served = await serve(['--db', `shop=${sqlitePath}`, '--db', `pg=${pgUrl}`]);
    const { resources } = await served.client.listResources();
    expect(resources.map((resource) => resource.uri).sort()).toEqual(['quarry://databases/pg/tables', 'quarry://databases/shop/tables']);
    const shop = await served.client.readResource({ uri: 'quarry://databases/shop/tables' });
    expect((shop.contents[0] as { text: string }).text).toMatch(/│ main +│ items +│ table │/);
    await expect(served.client.readResource({ uri: 'quarry://databases/nope/tables' })).rejects.toThrow(/unknown resource/);
  });

  it('developer profile: write and edit served with --yes only for database tools asked about; a custom profile limits the list', async () => {
    const developer = await serve(['-p', 'developer', '--db', `shop=${sqlitePath}`]);
    const devNames = (await developer.client.listTools()).tools.map((tool) => tool.name).sort();
    // granular approval lists the database tools: not served without --yes; delegate never.
    expect(devNames).toEqual(['bash', 'chart', 'edit', 'glob', 'grep', 'list', 'read', 'read_excel', 'write']);
    const devTools = Object.fromEntries((await developer.client.listTools()).tools.map((tool) => [tool.name, tool]));
    // Unrestricted bash can change anything and reach anywhere; edit overwrites; read only reads.
    expect(devTools.bash!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
    expect(devTools.edit!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: false });
    expect(devTools.read!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false });
    const wrote = await developer.client.callTool({ name: 'write', arguments: { path: 'made-by-mcp.txt', content: 'written over MCP\n' } });
    expect(wrote.isError, text(wrote)).toBeFalsy();
    expect(readFileSync(join(work, 'made-by-mcp.txt'), 'utf8')).toBe('written over MCP\n');

    const withYes = await serve(['-p', 'developer', '--yes', '--db', `shop=${sqlitePath}`]);
    const yesNames = (await withYes.client.listTools()).tools.map((tool) => tool.name);
    expect(yesNames).toContain('sqlite');
    expect(yesNames).not.toContain('delegate');

    const custom = join(home, 'analyst.yaml');
    writeFileSync(custom, 'name: analyst\ndescription: reads and sqlite only\ntools: [read, sqlite]\n');
    const analyst = await serve(['-p', custom, '--db', `shop=${sqlitePath}`]);
    expect((await analyst.client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['read', 'sqlite']);
    const count = await analyst.client.callTool({ name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT count(*) AS n FROM items' } });
    expect(text(count)).toMatch(/│ 3 +│/);
  });
});

describe('quarry as an MCP client of quarry mcp', () => {
  it('configured in mcp_servers, its tools run end to end through quarry tool', async () => {
    const clientHome = makeTempDir('quarry-mcp-client-home-');
    writeFileSync(
      join(clientHome, 'config.yaml'),
      `mcp_servers:\n  inner: {type: stdio, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(CLI_PATH)}, mcp, -w, ${JSON.stringify(work)}, ` +
        `--db, ${JSON.stringify(`shop=${sqlitePath}`)}]}\n`,
    );
    const listed = await runCli(['tools', '--format', 'json'], { env: cliEnv(clientHome) });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('mcp__inner__sqlite');
    // MCP tools are asked about under readonly (their hints come from another process): --yes.
    const ok = await runCli(
      ['tool', 'mcp__inner__sqlite', '--yes', '--args', JSON.stringify({ operation: 'query', sql: 'SELECT name FROM items ORDER BY id' })],
      { env: cliEnv(clientHome) },
    );
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/apple[\s\S]*pear[\s\S]*plum/);
    const refused = await runCli(['tool', 'mcp__inner__sqlite', '--yes', '--args', JSON.stringify({ operation: 'query', sql: 'DROP TABLE items' })], {
      env: cliEnv(clientHome),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr + refused.stdout).toContain('refused: DROP');
    const db = new Database(sqlitePath, { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM items').get()).toEqual({ n: 3 });
    db.close();
  }, 60_000);
});
