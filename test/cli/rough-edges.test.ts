import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { runQuarry } from '../support/cli.js';

/** Small things a new user met through the CLI (docs/guide/profiles.md, "Databases"). */

const env = () => ({ QUARRY_HOME: makeTempDir('quarry-home-'), QUARRY_PROFILE: undefined });

/** A loopback port that nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address !== 'object') throw new Error('no port');
  return address.port;
}

describe('quarry profiles show', () => {
  it('prints the query guard, the shell network and the profile budget', async () => {
    const result = await runQuarry(['profiles', 'show', 'readonly'], { env: env() });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^shell_network: none$/m);
    expect(result.stdout).toMatch(/^query_guard: +ask above [\d,]+ estimated rows$/m);
    expect(result.stdout).toMatch(/^profile_budget_seconds: 10 s$/m);
  });

  it('says off for a profile without a query guard', async () => {
    const home = makeTempDir('quarry-home-');
    const dir = makeTempDir();
    const path = `${dir}/loose.yaml`;
    writeFileSync(path, 'name: loose\nquery_guard: off\nshell_network: loopback\nprofile_budget_seconds: 30\n');
    const result = await runQuarry(['profiles', 'show', path], { env: { QUARRY_HOME: home } });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^query_guard: +off$/m);
    expect(result.stdout).toMatch(/^shell_network: loopback$/m);
    expect(result.stdout).toMatch(/^profile_budget_seconds: 30 s$/m);
  });
});

describe('--help', () => {
  it("names CSV, Parquet and JSON files in the run command's --db", async () => {
    const result = await runQuarry(['--help'], { env: env() });
    expect(result.code).toBe(0);
    const db = result.stdout.slice(result.stdout.indexOf('--db'), result.stdout.indexOf('--databases'));
    expect(db.replace(/\s+/g, ' ')).toMatch(/CSV\/Parquet\/JSON file/);
  });
});

describe('a database server that is not running', () => {
  for (const [engine, url] of [
    ['postgres', (port: number) => `postgres://u:secretpw@127.0.0.1:${port}/db`],
    ['mysql', (port: number) => `mysql://u:secretpw@127.0.0.1:${port}/db`],
  ] as const) {
    it(`${engine}: says "cannot connect to HOST:PORT (connection refused)", without the password`, async () => {
      const port = await closedPort();
      const result = await runQuarry(['tool', engine, '--db', url(port), '--args', '{"operation":"list_tables"}'], { env: env() });
      expect(result.code).toBe(1);
      expect(result.stdout + result.stderr).toContain(`cannot connect to 127.0.0.1:${port} (connection refused`);
      expect(result.stdout + result.stderr).not.toMatch(/connect ECONNREFUSED|secretpw|\n\s+at /);
    });
  }

  it('quarry db check says the same', async () => {
    const port = await closedPort();
    const result = await runQuarry(['db', 'check', '--db', `pg=postgres://u:secretpw@127.0.0.1:${port}/db`], { env: env() });
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toContain(`err pg: cannot connect to 127.0.0.1:${port} (connection refused`);
  });
});
