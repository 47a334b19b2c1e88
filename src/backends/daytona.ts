import type { Backend } from './types.js';
import { BackendUnavailableError } from './types.js';

const NOT_AVAILABLE = 'the Daytona backend is not available yet in this build of quarry: file and shell tools of the "daytona" profile cannot run. Use the "developer" or "readonly" profile to work on this machine.';

/**
 * Placeholder until the Daytona backend lands: every call fails with one clear message, so the
 * daytona profile loads and its tools answer instead of crashing.
 */
export function createDaytonaBackend(): Backend {
  const unavailable = () => Promise.reject(new BackendUnavailableError(NOT_AVAILABLE));
  return {
    name: 'daytona',
    homeDir: unavailable,
    tempDir: unavailable,
    execFile: unavailable,
    which: unavailable,
    ripgrepPath: unavailable,
    lstat: unavailable,
    stat: unavailable,
    realpath: unavailable,
    readFile: unavailable,
    readStream: () => ({
      [Symbol.asyncIterator]: () => ({ next: unavailable }),
    }),
    writeFileAtomic: unavailable,
    listDir: unavailable,
    glob: unavailable,
  };
}
