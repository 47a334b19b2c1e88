import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { classifyFile, classifyTestFiles, TIERS } from '../support/tiers.js';

/**
 * The test tiers (test/support/tiers.ts, vitest.config.ts). This file is itself a unit-tier file,
 * so it also proves the unit tier's guard: starting the built CLI, a server or a browser throws.
 * The names the classifier looks for (the build folder, the servers' URL variables, the browser)
 * are assembled from pieces here, or this file would be classified out of the unit tier.
 */
const BUILD = ['di', 'st'].join('');
const BUILT_CLI = join(REPO_ROOT, BUILD, 'cli.cjs');
const BROWSER = ['chro', 'mium'].join('');
const DYNAMIC_IMPORT = ['im', 'port'].join('');
const PG_URL_VARIABLE = ['QUARRY', 'TEST', 'PG', 'URL'].join('_');

function sampleRoot(files: Record<string, string>): string {
  const root = makeTempDir('quarry-tiers-');
  for (const [path, text] of Object.entries({ 'test/support/cli.ts': '', 'test/support/servers.ts': '', ...files })) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

function tierOf(source: string, helpers: Record<string, string> = {}): string {
  const root = sampleRoot({ 'test/a/x.test.ts': source, ...helpers });
  return classifyFile(join(root, 'test/a/x.test.ts'), root).tier;
}

describe('the tier classifier', () => {
  it('puts every test file in exactly one tier, the known ones where they belong', () => {
    const tiers = classifyTestFiles(REPO_ROOT);
    const all = TIERS.flatMap((tier) => tiers[tier]);
    expect(new Set(all).size).toBe(all.length);
    expect(tiers.unit).toContain('test/core/test-tiers.test.ts');
    expect(tiers.unit).toContain('test/tools/database/sqlite.test.ts');
    expect(tiers.integration).toContain('test/cli/tools-snapshot.test.ts');
    expect(tiers.database).toContain('test/tools/database/postgres.test.ts');
    expect(tiers.database).toContain('test/tools/database/mysql.test.ts');
  });

  it('classifies a file by the helpers it imports, by name', () => {
    expect(tierOf("import { REPO_ROOT } from '../support/cli.js';\n")).toBe('unit');
    expect(tierOf("import { REPO_ROOT, runQuarry } from '../support/cli.js';\n")).toBe('integration');
    expect(tierOf("import { runQuarry as run } from '../support/cli.js';\n")).toBe('integration');
    expect(tierOf("import * as cli from '../support/cli.js';\n")).toBe('integration');
    expect(tierOf("import type { RunningServer } from '../support/servers.js';\n")).toBe('unit');
    expect(tierOf("import { TEST_DB_PASSWORD } from '../support/servers.js';\n")).toBe('database');
    expect(tierOf(`const servers = await ${DYNAMIC_IMPORT}('../support/servers.js');\n`)).toBe('database');
  });

  it('classifies a file by what its code names, not its comments', () => {
    expect(tierOf(`const url = process.env.${PG_URL_VARIABLE};\n`)).toBe('database');
    expect(tierOf(`// not ${PG_URL_VARIABLE}\n/* nor ${BUILD}/cli.cjs */\nconst x = 1;\n`)).toBe('unit');
    expect(tierOf(`const cli = join(REPO_ROOT, '${BUILD}', 'cli.cjs');\n`)).toBe('integration');
    expect(tierOf(`import { ${BROWSER} } from '${['play', 'wright-core'].join('')}';\n`)).toBe('integration');
  });

  it('follows test-local helpers, through cycles', () => {
    const helpers = {
      'test/a/helper.ts': "import { runQuarry } from '../support/cli.js';\nimport './other.js';\n",
      'test/a/other.ts': "import './helper.js';\n",
    };
    expect(tierOf("import { run } from './other.js';\n", helpers)).toBe('integration');
    expect(tierOf("import { run } from './plain.js';\n", { 'test/a/plain.ts': 'export const run = 1;\n' })).toBe('unit');
  });
});

describe('the unit tier guard', () => {
  it('is installed in this worker', () => {
    expect(process.env.QUARRY_TEST_TIER).toBe('unit');
  });

  it('refuses to start the built CLI, in this process and in the Node processes it starts', () => {
    expect(() => spawnSync(process.execPath, [BUILT_CLI, '--version'])).toThrow(/unit tier: this test starts the built CLI/);
    expect(() => spawn(process.execPath, [BUILT_CLI, '--version'])).toThrow(/unit tier/);
    // (The path goes by the environment: on the command line, this process would refuse it.)
    const child = spawnSync(process.execPath, ['-e', "require('node:child_process').spawnSync(process.execPath, [process.env.CLI])"], {
      encoding: 'utf8',
      env: { ...process.env, CLI: BUILT_CLI },
    });
    expect(child.status).not.toBe(0);
    expect(child.stderr).toMatch(/unit tier: this test starts the built CLI/);
    // Started directly (node dist/cli.cjs), the CLI refuses to run before doing anything.
    const direct = spawnSync('/bin/sh', ['-c', '"$NODE" "$CLI" --version'], {
      encoding: 'utf8',
      env: { ...process.env, NODE: process.execPath, CLI: BUILT_CLI },
    });
    expect(direct.status).toBe(70);
    expect(direct.stdout).toBe('');
  });

  it('refuses database servers, sshd and a browser', () => {
    expect(() => spawn('/usr/lib/postgresql/15/bin/postgres', ['-D', '/nowhere'])).toThrow(/unit tier: this test starts postgres/);
    expect(() => execFile('mariadbd', [])).toThrow(/starts mariadbd/);
    expect(() => spawnSync('/usr/sbin/sshd', ['-D'])).toThrow(/starts sshd/);
    expect(() => spawn(`/usr/bin/${BROWSER}`, ['--headless'])).toThrow(new RegExp(`starts ${BROWSER}`));
  });

  it('lets everything else run', () => {
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write("ok")'], { encoding: 'utf8' });
    expect(child.stdout).toBe('ok');
    expect(spawnSync('/bin/sh', ['-c', 'echo postgres'], { encoding: 'utf8' }).stdout).toBe('postgres\n');
  });
});
