import { homedir, tmpdir } from 'node:os';
import { createDaytonaBackend } from '../../src/backends/daytona.js';
import { LocalBackend } from '../../src/backends/local.js';
import { describeBackendContract } from '../support/backend-contract.js';
import { makeTempDir } from '../support/context.js';
import { fakeDaytona } from '../support/fake-daytona.js';

describeBackendContract('local', async () => ({
  backend: new LocalBackend(),
  home: homedir(),
  temp: tmpdir(),
  makeDir: (prefix) => makeTempDir(prefix),
  hostPath: (path) => path,
  dispose: async () => undefined,
}));

describeBackendContract('daytona over a fake sandbox', async () => {
  const fake = fakeDaytona();
  const backend = createDaytonaBackend(fake.env, fake.factory);
  // The sandbox exists once the first call made it; its home and temp are the fake's.
  await backend.which('sh');
  const sandbox = fake.sandboxes[0]!;
  return {
    backend,
    home: sandbox.home,
    temp: sandbox.temp,
    makeDir: (prefix) => fake.makeDir(prefix),
    hostPath: (path) => fake.hostPath(path),
    dispose: () => backend.dispose(),
  };
});
