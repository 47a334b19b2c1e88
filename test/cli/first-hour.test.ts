import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { REPO_ROOT } from '../support/cli.js';

/**
 * Issue 12, "the first hour of a new user": each behaviour through the built CLI, the way the
 * user ran it.
 */

let home: string;
let work: string;
beforeAll(() => {
  home = makeTempDir('quarry-home-');
  work = makeTempDir('quarry-work-');
  cpSync(join(REPO_ROOT, 'fixtures', 'sample.db'), join(work, 'sample.db'));
  writeFileSync(join(work, 'app.log'), 'INFO start\nERROR one\nINFO x\nERROR two\nERROR three\n');
});
const env = (extra: Record<string, string | undefined> = {}) => cliEnv(home, extra);
const run = (args: string[], extra: Record<string, string | undefined> = {}, input = '') => runCli(args, { cwd: work, env: env(extra), input });

function script(turns: unknown[]): string {
  const path = join(makeTempDir('quarry-script-'), 'script.json');
  writeFileSync(path, JSON.stringify({ turns }));
  return path;
}

function userMessages(): string[] {
  // The newest session by its creation time (two runs in one second get ids in random order).
  const created = (id: string) => (JSON.parse(readFileSync(join(home, 'sessions', id, 'meta.json'), 'utf8')) as { created_at: string }).created_at;
  const ids = readdirSync(join(home, 'sessions')).sort((a, b) => created(a).localeCompare(created(b)));
  const trace = readFileSync(join(home, 'sessions', ids.at(-1)!, 'trace.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { type: string; message?: { role: string; content: string } });
  return trace.filter((e) => e.type === 'message' && e.message?.role === 'user').map((e) => e.message!.content);
}

describe('set-up and packaging', () => {
  it('has a prepare script that builds, an MIT LICENSE in the package, and a README that stands alone', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      license: string;
      files: string[];
      optionalDependencies?: Record<string, string>;
      dependencies: Record<string, string>;
    };
    expect(pkg.scripts.prepare).toBe('npm run build');
    expect(pkg.license).toBe('MIT');
    expect(pkg.files).toContain('LICENSE');
    expect(readFileSync(join(REPO_ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) 2026 quarry contributors\n/);
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme).not.toMatch(/\.\.\/shared|SPEC\.md/);
    expect(readme).toContain('npm ci && npm link');
    expect(pkg.optionalDependencies?.['@daytonaio/sdk']).toBeDefined();
    expect(pkg.dependencies['@daytonaio/sdk']).toBeUndefined();
  });

  it('an installed package (no fixtures/, no optional Daytona SDK) hints --model script:FILE and says how to add the SDK', async () => {
    // What `npm install -g --omit=optional quarry-VERSION.tgz` lays out: the package's files and its dependencies.
    const pkg = makeTempDir('quarry-installed-');
    const { files } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    for (const entry of [...files, 'package.json']) cpSync(join(REPO_ROOT, entry), join(pkg, entry), { recursive: true });
    mkdirSync(join(pkg, 'node_modules'));
    for (const entry of readdirSync(join(REPO_ROOT, 'node_modules'))) {
      if (entry !== '@daytonaio') symlinkSync(join(REPO_ROOT, 'node_modules', entry), join(pkg, 'node_modules', entry));
    }
    const cli = join(pkg, 'dist', 'cli.cjs');
    const node = (args: string[], extra: Record<string, string> = {}) => {
      try {
        return {
          code: 0,
          out: execFileSync(process.execPath, [cli, ...args], {
            cwd: work,
            env: env(extra) as NodeJS.ProcessEnv,
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'pipe'],
          }),
        };
      } catch (error) {
        const e = error as { status: number; stderr: string };
        return { code: e.status, out: e.stderr };
      }
    };
    const noModel = node(['what is in sample.db?']);
    expect(noModel.code).toBe(2);
    expect(noModel.out).toContain('--model script:FILE');
    expect(noModel.out).not.toContain('npm run demo');
    const daytona = node(['tool', 'bash', '-p', 'daytona', '--args', '{"command":"ls"}'], { DAYTONA_API_KEY: 'k' });
    expect(daytona.code).toBe(1);
    expect(daytona.out).toContain('needs the optional package @daytonaio/sdk, which is not installed');
    expect(daytona.out).not.toMatch(/\n\s+at /);
    // In the checkout the hint is the demo.
    const checkout = await run(['what is in sample.db?']);
    expect(checkout.code).toBe(2);
    expect(checkout.stderr).toContain('npm run demo');
  });
});

describe('profiles and approvals', () => {
  it('readonly runs restricted bash without asking, also with no terminal; it still refuses writes', async () => {
    const s = script([{ tool_calls: [{ name: 'bash', arguments: { command: 'grep -c ERROR app.log' } }] }, { text: 'Three errors.' }]);
    const result = await run(['--model', `script:${s}`, '--format', 'json', 'how many ERROR lines?']);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toMatch(/refused/);
    const trace = readdirSync(join(home, 'sessions')).sort().at(-1)!;
    const events = readFileSync(join(home, 'sessions', trace, 'trace.jsonl'), 'utf8');
    expect(events).toMatch(/"type":"tool_end","id":"[^"]+","name":"bash","ok":true/);
    const write = await run(['tool', 'write', '-p', profileAt('create.yaml', 'file_write: create-only\n'), '--args', '{"path":"new.txt","content":"x"}']);
    expect(write.code).toBe(1);
    expect(write.stderr).toMatch(/refused: write can change things/);
    expect(existsSync(join(work, 'new.txt'))).toBe(false);
  });

  it('quarry profiles lists what loads and reports each broken file; typos are errors; an empty file is valid', async () => {
    const dir = join(home, 'profiles');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'empty.yaml'), '');
    writeFileSync(join(dir, 'typo.yaml'), 'tools: [nonexistent_tool]\n');
    writeFileSync(join(dir, 'shel.yaml'), 'shel: restricted\n');
    const listed = await run(['profiles']);
    expect(listed.code).toBe(2);
    expect(listed.stdout.split('\n').map((line) => line.split(' ')[0])).toEqual(['readonly', 'developer', 'eval', 'daytona', 'empty', '']);
    expect(listed.stderr).toContain(`profile "shel" is broken: ${join(dir, 'shel.yaml')}: unknown key "shel"; allowed keys: name,`);
    expect(listed.stderr).toContain(
      `profile "typo" is broken: ${join(dir, 'typo.yaml')}: "tools" names an unknown tool "nonexistent_tool"; known tools: read, read_excel, grep,`,
    );
    const empty = await run(['profiles', 'show', 'empty']);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toMatch(/shell: +restricted\nfile_write: +off\ndatabase: +readonly\napproval: +dangerous/);
    const tools = await run(['tools', '-p', 'typo']);
    expect(tools.code).toBe(2);
    for (const name of ['empty', 'typo', 'shel']) execFileSync('rm', [join(dir, `${name}.yaml`)]);
  });

  it('an unknown key in config.yaml (mcp_server:) is an error naming it and the allowed keys, for every command', async () => {
    const config = join(work, 'typo-config.yaml');
    writeFileSync(config, 'mcp_server:\n  files: {type: stdio, command: [x]}\n');
    for (const args of [['tools'], ['tool', 'read', '--args', '{"path":"app.log"}'], ['db', 'list']]) {
      const result = await run([...args, '--config', config]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toBe(`quarry: ${config}: unknown key "mcp_server"; allowed keys: databases, mcp_servers, knowledge\n`);
    }
  });
});

function profileAt(name: string, body: string): string {
  const path = join(work, name);
  writeFileSync(path, body);
  return path;
}

describe('configuration and databases', () => {
  it('db list never shows a password, also one with a space or "@"', async () => {
    for (const url of ['postgres://ann:pa ss word@db.example.com/dw', 'postgres://ann:p@ss@db.example.com/dw', 'postgres://ann:a@db.example.com/dw']) {
      const result = await run(['db', 'list', '--db', url, '--format', 'json']);
      expect(result.code).toBe(0);
      const [entry] = (JSON.parse(result.stdout) as { databases: { source: string; target: string }[] }).databases;
      expect(entry!.source).toBe('--db postgres://ann:***@db.example.com/dw');
      expect(entry!.target).toBe('postgres ann@db.example.com:5432/dw');
    }
  });

  it('the same database from SQLITE_DB and --db is one; POSTGRES_* and MYSQL_* naming one database both work; POSTGRES_DB is read', async () => {
    const same = await run(['db', 'list', '--db', 'sample.db'], { SQLITE_DB: 'sample.db' });
    expect(same).toMatchObject({ code: 0, stdout: `sample  sqlite ${join(work, 'sample.db')}  (from --db sample.db and env SQLITE_DB)\n` });
    const both = await run(['db', 'list'], { POSTGRES_HOST: 'pg', POSTGRES_DB: 'shop', MYSQL_HOST: 'my', MYSQL_DATABASE: 'shop' });
    expect(both.code).toBe(0);
    expect(both.stdout).toBe('shop        postgres pg:5432/shop  (from env POSTGRES_*)\nshop_mysql  mysql my:3306/shop  (from env MYSQL_*)\n');
    cpSync(join(work, 'sample.db'), join(work, 'other.db'));
    const clash = await run(['db', 'list', '--db', 'x=sample.db', '--db', 'x=other.db']);
    expect(clash.code).toBe(2);
    expect(clash.stderr).toContain(
      `database alias "x" names two different databases (sqlite ${join(work, 'sample.db')} from --db x=sample.db, and sqlite ${join(work, 'other.db')} from ` +
        `--db x=other.db)`,
    );
  });

  it('db list does not need password variables; db check does', async () => {
    const file = join(work, 'dbs.yaml');
    writeFileSync(
      file,
      'databases:\n  wh: {type: postgres, host: h, database: dw, user: me, password: "${WH_PASSWORD_UNSET}"}\n  local: {type: sqlite, path: sample.db}\n',
    );
    const list = await run(['db', 'list', '--databases', file]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('wh     postgres me@h:5432/dw');
    expect(list.stdout).toContain(`local  sqlite ${join(work, 'sample.db')}`);
    const check = await run(['db', 'check', '--databases', file]);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain('environment variable WH_PASSWORD_UNSET is not set');
  });

  it('malformed URLs, folders and missing files given with a flag are usage errors naming the flag, on every command', async () => {
    const bad = await run(['db', 'list', '--db', 'postgres://u:100%@h/db']);
    expect(bad).toMatchObject({ code: 2 });
    expect(bad.stderr).toBe(
      'quarry: --db postgres://u:***@h/db: the URL\'s password has a malformed %-escape; write a "%" as %25 (expected e.g. ' +
        'postgres://user:password@host:port/database)\n',
    );
    for (const args of [['db', 'list'], ['tools'], ['tool', 'read', '--args', '{"path":"app.log"}'], ['-m', 'script:x', 'question']]) {
      const missing = await run([...args, '--config', 'missing.yaml']);
      expect(missing, args.join(' ')).toMatchObject({ code: 2, stderr: `quarry: --config ${join(work, 'missing.yaml')}: file not found\n` });
      const folder = await run([...args, '--config', '.']);
      expect(folder).toMatchObject({ code: 2, stderr: `quarry: --config ${work}: is a folder; expected a YAML file\n` });
    }
    const databases = await run(['db', 'list', '--databases', '.']);
    expect(databases).toMatchObject({ code: 2, stderr: `quarry: --databases ${work}: is a folder; expected a YAML file\n` });
  });

  describe('connect timeouts', () => {
    let server: Server;
    let port: number;
    const sockets: Socket[] = [];
    beforeAll(async () => {
      // Accepts connections and never answers: the client's connect timeout fires.
      server = createServer((socket) => sockets.push(socket));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('name the host, port and seconds (PostgreSQL and MariaDB)', async () => {
      for (const engine of ['postgres', 'mysql']) {
        const result = await run(['db', 'check', '--db', `${engine}://u:hunter22@127.0.0.1:${port}/db?connect_timeout=1`]);
        expect(result.code).toBe(1);
        expect(result.stderr).toBe(
          `err db: could not connect to ${engine} at 127.0.0.1:${port}: no answer within 1 s (connect_timeout; raise it with ?connect_timeout=SECONDS or ` +
            `connect_timeout: in the databases YAML)\n`,
        );
      }
    });
  });

  it('quarry tool sqlite without a database says how to add one; SELEC 1 is a syntax error', async () => {
    const none = await run(['tool', 'sqlite', '--args', '{"operation":"list_tables"}']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^quarry: no sqlite database is configured, so there is no sqlite tool; add one with --db FILE\.db/);
    const typo = await run(['tool', 'sqlite', '--db', 'sample.db', '--args', '{"operation":"query","sql":"SELEC 1"}']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('syntax error: "SELEC" at character 1 does not begin any SQL statement');
    expect(typo.stderr).not.toContain('not allowed in read-only mode');
  });

  it.each(['duckdb', 'clickhouse', 'postgres'])('quarry tool %s without a database names a real --db form', async (engine) => {
    const none = await run(['tool', engine, '--args', '{"operation":"list_tables"}']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(new RegExp(`^quarry: no ${engine} database is configured, so there is no ${engine} tool; add one with --db [A-Za-z]`));
    expect(none.stderr).not.toContain('undefined');
  });
});

describe('runs', () => {
  it('-o into a missing folder and --max-turns abc are usage errors before any model call', async () => {
    const s = script([{ text: 'never used' }]);
    const out = await run(['--model', `script:${s}`, '-o', 'nodir/answer.md', 'question']);
    expect(out).toMatchObject({
      code: 2,
      stdout: '',
      stderr: `quarry: --output nodir/answer.md: the folder ${join(work, 'nodir')} does not exist; nothing was run\n`,
    });
    const before = existsSync(join(home, 'sessions')) ? readdirSync(join(home, 'sessions')).length : 0;
    const turns = await run(['--model', `script:${s}`, '--max-turns', 'abc', 'question']);
    expect(turns).toMatchObject({ code: 2, stderr: 'quarry: --max-turns must be a positive whole number, got "abc"\n' });
    expect(existsSync(join(home, 'sessions')) ? readdirSync(join(home, 'sessions')).length : 0).toBe(before);
  });

  it('piped text follows the prompt', async () => {
    const s = script([{ text: 'Summarised.' }]);
    const result = await run(['--model', `script:${s}`, 'summarise this csv'], {}, 'a,b\n1,2\n');
    expect(result.code).toBe(0);
    expect(userMessages()).toEqual(['summarise this csv\n\na,b\n1,2']);
    const alone = await run(['--model', `script:${script([{ text: 'ok' }])}`], {}, 'just piped\n');
    expect(alone.code).toBe(0);
    expect(userMessages()).toEqual(['just piped']);
  });

  it('-m llama3 prints one message', async () => {
    const result = await run(['-m', 'llama3', 'question']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'quarry: cannot tell which provider serves "llama3": write PROVIDER/llama3 (openai, anthropic, ollama, deepseek, openrouter, groq, mistral, gemini, ' +
        'xai, together, fireworks, moonshot, lmstudio, vllm), or give --base-url URL for an OpenAI-compatible server (quarry --help lists the options)\n',
    );
  });

  it('with --format json, usage errors print a JSON error object on stdout', async () => {
    for (const args of [
      ['--format', 'json', '--bogus', 'q'],
      ['--format=json', '-m', 'llama3', 'q'],
      ['tool', 'read', '--format', 'json', '--args', 'nope'],
      ['db', 'list', '--format', 'json', '--config', 'missing.yaml'],
    ]) {
      const result = await run(args);
      expect(result.code, args.join(' ')).toBe(2);
      const parsed = JSON.parse(result.stdout) as { status: string; error: string; exit_code: number };
      expect(parsed).toMatchObject({ status: 'error', exit_code: 2 });
      expect(result.stderr).toBe(`quarry: ${parsed.error}\n`);
    }
    const stream = await run(['--format', 'stream-json', '--max-turns', '0', 'q']);
    expect(JSON.parse(stream.stdout)).toMatchObject({ type: 'result', status: 'error', exit_code: 2 });
  });
});
