import type { Readable } from 'node:stream';
import type { DownloadStreamOptions, Sandbox } from '@daytonaio/sdk';
import { BackendUnavailableError } from './types.js';

/**
 * The only file that talks to `@daytonaio/sdk`. The backend uses nothing of a sandbox but the
 * surface below, so tests can put a fake behind it; the SDK is imported lazily (it takes about
 * half a second to load) when the first sandbox is created.
 */

/** The part of an SDK `Sandbox` the backend uses; the real class is checked against it below. */
export interface SandboxSurface {
  id: string;
  process: {
    /** Runs a command line in the sandbox; `timeout` in seconds, 0 = none. */
    executeCommand(command: string, cwd?: string, env?: Record<string, string>, timeout?: number): Promise<{ exitCode: number; result: string }>;
  };
  fs: {
    uploadFile(file: Buffer, remotePath: string, timeout?: number): Promise<void>;
    downloadFile(remotePath: string, timeout?: number): Promise<Buffer>;
    downloadFileStream(remotePath: string, options?: DownloadStreamOptions): Promise<Readable>;
  };
  /** `timeout` in seconds. */
  delete(timeout?: number): Promise<void>;
}

// Compile-time proof that a real SDK sandbox offers this surface with these signatures.
const realSandboxFitsSurface: (sandbox: Sandbox) => SandboxSurface = (sandbox) => sandbox;
void realSandboxFitsSurface;

/** What to create: from the DAYTONA_* environment variables (docs/guide/databases.md). */
export interface SandboxSpec {
  apiKey: string;
  apiUrl: string | undefined;
  image: string;
  cpu: number | undefined;
  /** GiB, as the SDK wants it (the environment gives MB). */
  memoryGiB: number | undefined;
  diskGiB: number | undefined;
}

export type SandboxFactory = (spec: SandboxSpec) => Promise<SandboxSurface>;

export const DEFAULT_SANDBOX_IMAGE = 'ubuntu:latest';
/**
 * Minutes without activity after which Daytona stops the sandbox; with auto-delete at 0 a
 * stopped sandbox is then deleted, so a crashed quarry never leaves one running or stored.
 */
export const SANDBOX_AUTO_STOP_MINUTES = 15;
/** Seconds to wait for the sandbox to be created and started (building an image takes a while). */
export const SANDBOX_CREATE_TIMEOUT_SECONDS = 180;
const SANDBOX_LABELS = { 'created-by': 'quarry' };

function positiveNumber(env: NodeJS.ProcessEnv, name: string, unit: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new BackendUnavailableError(`${name} must be a positive number (${unit}), got ${JSON.stringify(raw)}`);
  return value;
}

/** Reads the DAYTONA_* variables; a missing key or a bad number is a clear error (at the first remote call). */
export function sandboxSpecFromEnv(env: NodeJS.ProcessEnv): SandboxSpec {
  const apiKey = env.DAYTONA_API_KEY?.trim();
  if (!apiKey) {
    throw new BackendUnavailableError(
      'the daytona backend needs DAYTONA_API_KEY (create a key at https://app.daytona.io/dashboard/keys and export it); ' +
        'or use a profile with backend: local',
    );
  }
  const memoryMb = positiveNumber(env, 'DAYTONA_SANDBOX_MEMORY', 'MB');
  return {
    apiKey,
    apiUrl: env.DAYTONA_API_URL?.trim() || undefined,
    image: env.DAYTONA_SANDBOX_IMAGE?.trim() || DEFAULT_SANDBOX_IMAGE,
    cpu: positiveNumber(env, 'DAYTONA_SANDBOX_CPU', 'cores'),
    memoryGiB: memoryMb === undefined ? undefined : Math.max(1, Math.ceil(memoryMb / 1024)),
    diskGiB: positiveNumber(env, 'DAYTONA_SANDBOX_DISK', 'GB'),
  };
}

/**
 * `@daytonaio/sdk` is an optional dependency (with OpenTelemetry and the AWS SDK it is about
 * 55 MB that only Daytona users need): installed by default, left out by
 * `npm install --omit=optional`. Without it the daytona backend says how to add it.
 */
export async function loadDaytonaSdk(
  load: () => Promise<typeof import('@daytonaio/sdk')> = () => import('@daytonaio/sdk'),
): Promise<typeof import('@daytonaio/sdk')> {
  try {
    return await load();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(
      'the daytona backend needs the optional package @daytonaio/sdk, which is not installed (quarry was installed with --omit=optional?): run `npm install ' +
        "@daytonaio/sdk@^0.218` in quarry's folder, or reinstall quarry without --omit=optional",
    );
  }
}

/** Creates a real Daytona sandbox. */
export const createSdkSandbox: SandboxFactory = async (spec) => {
  const { Daytona } = await loadDaytonaSdk();
  const daytona = new Daytona({ apiKey: spec.apiKey, ...(spec.apiUrl ? { apiUrl: spec.apiUrl } : {}) });
  const resources = {
    ...(spec.cpu !== undefined ? { cpu: spec.cpu } : {}),
    ...(spec.memoryGiB !== undefined ? { memory: spec.memoryGiB } : {}),
    ...(spec.diskGiB !== undefined ? { disk: spec.diskGiB } : {}),
  };
  try {
    return await daytona.create(
      {
        image: spec.image,
        ...(Object.keys(resources).length > 0 ? { resources } : {}),
        autoStopInterval: SANDBOX_AUTO_STOP_MINUTES,
        autoDeleteInterval: 0,
        labels: SANDBOX_LABELS,
      },
      { timeout: SANDBOX_CREATE_TIMEOUT_SECONDS },
    );
  } catch (error) {
    throw new BackendUnavailableError(`could not create a Daytona sandbox (image ${spec.image}): ${(error as Error).message ?? String(error)}`);
  }
};
