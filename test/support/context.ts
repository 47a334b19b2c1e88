import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalBackend } from '../../src/backends/local.js';
import type { Backend } from '../../src/backends/types.js';
import { loadProfile } from '../../src/profiles/load.js';
import type { Profile } from '../../src/profiles/schema.js';
import { FileReadLedger } from '../../src/tools/file-read-ledger.js';
import type { ToolContext } from '../../src/tools/types.js';

/** A fresh temporary directory (realpath'd, so comparisons with resolved paths hold). */
export function makeTempDir(prefix = 'quarry-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

export interface ContextOptions {
  workingDir: string;
  profile?: string | Profile;
  backend?: Backend;
  /** true: an agent session (read-before-write applies); false: `quarry tool` (it does not). */
  session?: boolean;
  signal?: AbortSignal;
}

export function makeToolContext(options: ContextOptions): ToolContext {
  const profile = typeof options.profile === 'object' ? options.profile : loadProfile(options.profile ?? 'readonly');
  return {
    workingDir: options.workingDir,
    backend: options.backend ?? new LocalBackend(),
    profile,
    signal: options.signal ?? new AbortController().signal,
    ...(options.session ? { fileReads: new FileReadLedger() } : {}),
  };
}
