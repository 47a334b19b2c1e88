/** What a SQLite driver (sqlite-process.ts) and its child process (sqlite-child.ts) say to each other. */

import type { DatabaseConfig } from '../types.js';

export type ChildRequest =
  | { id: number; op: 'open'; config: DatabaseConfig; readOnly: boolean }
  | { id: number; op: 'query'; sql: string; limit: number; readOnly: boolean }
  | { id: number; op: 'describe'; table: string; readOnly: boolean }
  | { id: number; op: 'catalog'; sql: string; params: unknown[]; readOnly: boolean }
  | { id: number; op: 'ping'; readOnly: boolean }
  | { id: number; op: 'export'; sql: string; readOnly: boolean; file: DirectFile };

/**
 * An export's temporary file, which the child writes itself (CsvSink.directFile): it opens the path
 * without following a link and goes on only if what it opened is the parent's empty file (same
 * device and inode), so nothing put in its place meanwhile is written.
 */
export interface DirectFile {
  path: string;
  /** fstat's dev and ino, as decimal text (bigint stat). */
  dev: string;
  ino: string;
}

/** An export's answer: what it wrote, and its first bytes after the header (for the preview). */
export interface DirectWritten {
  columns: string[];
  rows: number;
  bytes: number;
  head: Uint8Array;
}

/** An error as it crossed over: enough to rebuild the class the tool layer tells apart. */
export interface ChildError {
  message: string;
  /** A ToolError's kind. */
  kind?: string;
  metadata?: Record<string, unknown>;
  readOnlyViolation?: boolean;
  /** A system error's code (ENOSPC from an export's write). */
  code?: string;
}

export type ChildReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: ChildError }
  /** An export's progress, at most every PROGRESS_INTERVAL_MS; not an answer. */
  | { id: number; progress: { rows: number; bytes: number } };
