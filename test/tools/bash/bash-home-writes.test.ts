import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { bashToolOptions } from '../../../src/agent/toolset.js';
import { loadProfile } from '../../../src/profiles/load.js';
import { createBashTool } from '../../../src/tools/bash/tool.js';
import { ToolRegistry } from '../../../src/tools/core/registry.js';
import { makeTempDir, makeToolContext } from '../../support/context.js';

/**
 * Programs that keep state under the home directory (red team, last round): without bubblewrap
 * `top -b` created ~/.config/procps and `kubectl get` wrote ~/.kube/cache. The restricted shell
 * now points XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_STATE_HOME and KUBECACHEDIR below /dev/null
 * (src/tools/bash/environment.ts): the commands still answer, and the home stays as it was.
 */

let home: string;
let savedHome: string | undefined;
let savedQuarryHome: string | undefined;
let server: Server;
let port: number;

beforeAll(async () => {
  savedHome = process.env.HOME;
  savedQuarryHome = process.env.QUARRY_HOME;
  // quarry's own state (the bubblewrap probe's memory) lives elsewhere, so the home holds only what commands write.
  process.env.QUARRY_HOME = makeTempDir('quarry-own-home-');
  // Just enough of the Kubernetes API for `kubectl get pods` to discover and list.
  server = createServer((request, response) => {
    const url = request.url ?? '';
    response.setHeader('content-type', 'application/json');
    if (/^\/api(\?|$)/.test(url)) return response.end(JSON.stringify({ kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] }));
    if (url.startsWith('/apis')) return response.end(JSON.stringify({ kind: 'APIGroupList', apiVersion: 'v1', groups: [] }));
    if (/^\/api\/v1(\?|$)/.test(url))
      return response.end(
        JSON.stringify({
          kind: 'APIResourceList',
          groupVersion: 'v1',
          resources: [{ name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list'] }],
        }),
      );
    if (url.startsWith('/api/v1/namespaces/default/pods')) return response.end(JSON.stringify({ kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [] }));
    response.statusCode = 404;
    response.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

/** A fresh home for each test, holding only a kubeconfig for the API above. */
beforeEach(() => {
  home = makeTempDir('quarry-home-');
  process.env.HOME = home;
  mkdirSync(join(home, '.kube'));
  writeFileSync(join(home, '.kube', 'config'), kubeconfig(port));
});

function kubeconfig(serverPort: number): string {
  return `apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "http://127.0.0.1:${serverPort}"}}]
contexts: [{name: local, context: {cluster: local, user: me}}]
users: [{name: me, user: {}}]
current-context: local
`;
}

/** Every path under the home directory. */
function tree(dir: string = home, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => [
    `${prefix}${entry.name}`,
    ...(entry.isDirectory() ? tree(join(dir, entry.name), `${prefix}${entry.name}/`) : []),
  ]);
}

afterAll(() => {
  process.env.HOME = savedHome;
  process.env.QUARRY_HOME = savedQuarryHome;
  server.close();
});

async function run(command: string, osLayer: boolean): Promise<string> {
  const profile = { ...loadProfile('readonly'), shell_network: 'all' as const };
  const registry = new ToolRegistry();
  registry.register(createBashTool({ ...bashToolOptions(profile), osSandbox: osLayer }));
  const result = await registry.run('bash', { command }, makeToolContext({ workingDir: home }));
  expect(result.ok, result.output).toBe(true);
  return (JSON.parse(result.output) as { output: string }).output;
}

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;

describe.each([false, true])('restricted shell, OS layer %s: nothing written under the home directory', (osLayer) => {
  test('top -b prints its table and creates no ~/.config/procps', async () => {
    const output = await run('top -b -n 1', osLayer);
    expect(output).toMatch(/^top - /);
    expect(output).toContain('Tasks:');
    expect(tree()).toEqual(['.kube', '.kube/config']);
  });

  test.skipIf(!hasKubectl)('kubectl get pods answers from the API and writes no ~/.kube/cache', async () => {
    const output = await run('kubectl get pods', osLayer);
    expect(output).toContain('No resources found in default namespace.');
    expect(tree()).toEqual(['.kube', '.kube/config']);
  });
});
