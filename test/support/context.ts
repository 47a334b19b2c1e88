import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalBackend } from '../../src/backends/local.js';
import type { Backend } from '../../src/backends/types.js';
import { FileReadLedger } from '../../src/tools/core/file-read-ledger.js';
import type { ToolContext } from '../../src/tools/core/types.js';

/** A fresh temporary directory (realpath'd, so comparisons with resolved paths hold). */
export function makeTempDir(prefix = 'quarry-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

export interface ContextOptions {
  workingDir: string;
  backend?: Backend;
  /** true: an agent session (read-before-write applies); false: `quarry tool` (it does not). */
  session?: boolean;
  signal?: AbortSignal;
}

/** What one call gets; what the profile decides is in the tools the toolset built (buildToolRegistry). */
export function makeToolContext(options: ContextOptions): ToolContext {
  return {
    workingDir: options.workingDir,
    backend: options.backend ?? new LocalBackend(),
    signal: options.signal ?? new AbortController().signal,
    ...(options.session ? { fileReads: new FileReadLedger() } : {}),
  };
}
