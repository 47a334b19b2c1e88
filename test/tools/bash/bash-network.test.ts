import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildToolRegistry } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import type { Profile, ShellNetwork } from '../../../src/profiles/schema.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';
import { runQuarry } from '../../support/cli.js';

/**
 * The inspector's networked commands (issue 20, item 8): docker and kubectl through their
 * argument rules with fake binaries first on PATH (no engine or cluster can run here; the fakes
 * print the argument vector they got), curl against a real loopback HTTP server, each under
 * shell_network none, loopback and all.
 */

let bin: string;
let savedPath: string | undefined;
let server: Server;
let port: number;

beforeAll(async () => {
  bin = makeTempDir('quarry-fake-bin-');
  for (const name of ['docker', 'kubectl', 'podman']) {
    writeFileSync(join(bin, name), `#!/bin/sh\necho "FAKE ${name} $*"\n`, { mode: 0o755 });
  }
  savedPath = process.env.PATH;
  process.env.PATH = `${bin}:${process.env.PATH}`;
  server = createServer((request, response) => response.end(`metric_total 7 ${request.method}\n`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => {
  process.env.PATH = savedPath;
  server.close();
});

function profile(network: ShellNetwork): Profile {
  return { ...loadProfile('readonly'), shell_network: network };
}

async function run(network: ShellNetwork, command: string): Promise<{ ok: boolean; text: string }> {
  const p = profile(network);
  const result = await buildToolRegistry(p).run('bash', { command }, makeToolContext({ workingDir: bin }));
  return { ok: result.ok, text: result.ok ? (JSON.parse(result.output) as { output: string }).output : result.output };
}

describe('shell_network', () => {
  test('the profile key is checked and defaults to none', () => {
    expect(loadProfile('readonly').shell_network).toBe('none');
  });

  test('under none, docker, kubectl and curl are refused with a message naming the setting', async () => {
    for (const command of ['docker ps', 'kubectl get pods', `curl -s http://127.0.0.1:${port}/metrics`, 'podman ps']) {
      const result = await run('none', command);
      expect(result.ok, command).toBe(false);
      expect(result.text, command).toMatch(/needs the network \(shell_network: (loopback|all)\), and this profile's shell_network is none; set shell_network/);
      expect(result.text).not.toContain('FAKE');
    }
  });

  test('under loopback, docker reads and curl to this host run; kubectl and other hosts need all', async () => {
    expect(await run('loopback', 'docker ps -a')).toEqual({ ok: true, text: 'FAKE docker ps -a\n' });
    expect(await run('loopback', 'docker logs --tail 5 web')).toEqual({ ok: true, text: 'FAKE docker logs --tail 5 web\n' });
    expect(await run('loopback', 'docker compose -f app.yml ps')).toEqual({ ok: true, text: 'FAKE docker compose -f app.yml ps\n' });
    expect(await run('loopback', 'docker stats --no-stream')).toEqual({ ok: true, text: 'FAKE docker stats --no-stream\n' });
    expect(await run('loopback', `curl -s http://127.0.0.1:${port}/metrics`)).toEqual({ ok: true, text: 'metric_total 7 GET\n' });
    expect(await run('loopback', `curl -sI http://localhost:${port}/`)).toMatchObject({ ok: true, text: expect.stringMatching(/^HTTP\/1\.1 200/) });
    for (const [command, why] of [
      ['kubectl get pods', /shell_network: all/],
      ['curl -s http://example.com/', /a host other than this one.*shell_network: all/],
      [`curl -sL http://127.0.0.1:${port}/`, /redirects/],
    ] as const) {
      const result = await run('loopback', command);
      expect(result.ok, command).toBe(false);
      expect(result.text, command).toMatch(why);
    }
  });

  test('getent: name lookups (DNS) need all, local databases run under none; an unquoted IPv6 URL is named a file pattern', async () => {
    for (const network of ['none', 'loopback'] as const) {
      for (const command of ['getent hosts data.example.org', 'getent ahosts data.example.org', 'getent ahostsv6 x', 'getent networks x']) {
        const result = await run(network, command);
        expect(result.ok, command).toBe(false);
        expect(result.text, command).toMatch(/a name lookup can send a DNS query out\) needs the network \(shell_network: all\)/);
      }
    }
    expect((await run('none', 'getent -s dns hosts x')).text).toContain('the option -s is refused');
    expect(await run('none', 'getent passwd root')).toMatchObject({ ok: true, text: expect.stringMatching(/^root:/) });
    expect(await run('all', 'getent hosts localhost')).toMatchObject({ ok: true, text: expect.stringMatching(/localhost/) });
    const unquoted = await run('loopback', 'curl -s http://[::1]:1/');
    expect(unquoted.text).toContain('is a file pattern to the shell (it holds [, ] or *); quote it, e.g. "http://[::1]:1/"');
    expect(unquoted.text).not.toContain('\u0000');
  });

  test('under all, kubectl reads run; writes stay refused whatever the network', async () => {
    expect(await run('all', 'kubectl get pods -n prod -o wide')).toEqual({ ok: true, text: 'FAKE kubectl get pods -n prod -o wide\n' });
    expect(await run('all', 'kubectl logs --tail=20 web-1')).toEqual({ ok: true, text: 'FAKE kubectl logs --tail=20 web-1\n' });
    expect(await run('all', 'kubectl config view')).toEqual({ ok: true, text: 'FAKE kubectl config view\n' });
    expect(await run('all', 'podman images')).toEqual({ ok: true, text: 'FAKE podman images\n' });
    for (const command of [
      'docker rm web',
      'docker run alpine',
      'docker exec web ls',
      'docker -H tcp://10.0.0.1 ps',
      'docker compose config -o x.yml',
      'docker stats',
      'kubectl delete pod x',
      'kubectl exec web -- ls',
      'kubectl config view --raw',
      'kubectl --kubeconfig=k get pods',
      'kubectl apply -f x.yml',
      `curl -o out http://127.0.0.1:${port}/`,
      `curl -X POST http://127.0.0.1:${port}/`,
      `curl -d x=1 http://127.0.0.1:${port}/`,
      'curl file:///etc/passwd',
    ]) {
      const result = await run('all', command);
      expect(result.ok, command).toBe(false);
      expect(result.text, command).toContain('refused');
      expect(result.text).not.toContain('FAKE');
    }
  });
});

describe("ss, ip and netstat under shell_network none (the sandbox's own network)", () => {
  async function cli(network: ShellNetwork, command: string): Promise<string> {
    const dir = makeTempDir();
    const profilePath = join(dir, `net-${network}.yaml`);
    writeFileSync(profilePath, `name: net-${network}\nshell: restricted\nshell_network: ${network}\n`);
    const result = await runQuarry(['tool', 'bash', '-p', profilePath, '-w', dir, '--args', JSON.stringify({ command }), '--format', 'json'], {
      env: { QUARRY_HOME: makeTempDir('quarry-home-') },
    });
    expect(result.code, result.stderr).toBe(0);
    const body = JSON.parse((JSON.parse(result.stdout) as { output: string }).output) as { output: string; note?: string };
    return body.note ? `${body.output}\n[note: ${body.note}]` : body.output;
  }

  test("says the view is the sandbox's and how to see the host's; under loopback the listener shows", async () => {
    const sandboxed = await cli('none', 'ss -tln');
    expect(sandboxed).not.toContain(`:${port}`);
    expect(sandboxed).toContain("show the sandbox's network (only lo, no sockets), not this host's");
    expect(sandboxed).toContain('shell_network: loopback or all');
    const host = await cli('loopback', 'ss -tln');
    expect(host).toContain(`127.0.0.1:${port}`);
    expect(host).not.toContain('this shell runs in an empty network namespace');
    // Commands that do not look at the network get no note.
    expect(await cli('none', 'echo ss')).toBe('ss\n');
  });
});
