/** What a SQLite driver (sqlite-process.ts) and its child process (sqlite-child.ts) say to each other. */

import type { DatabaseConfig } from '../types.js';

export type ChildRequest =
  | { id: number; op: 'open'; config: DatabaseConfig; readOnly: boolean }
  | { id: number; op: 'query'; sql: string; limit: number; readOnly: boolean }
  | { id: number; op: 'describe'; table: string; readOnly: boolean }
  | { id: number; op: 'catalog'; sql: string; params: unknown[]; readOnly: boolean }
  | { id: number; op: 'ping'; readOnly: boolean }
  | { id: number; op: 'export'; sql: string; readOnly: boolean };

/** An error as it crossed over: enough to rebuild the class the tool layer tells apart. */
export interface ChildError {
  message: string;
  /** A ToolError's kind. */
  kind?: string;
  metadata?: Record<string, unknown>;
  readOnlyViolation?: boolean;
}

export type ChildReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: ChildError };

/**
 * An export's output goes through its own pipe (fd EXPORT_FD in the child) as frames: a header of
 * FRAME_HEADER_BYTES (four little-endian uint32: request id, frame type, payload bytes, rows),
 * then the payload. The export is over when its END frame has been read.
 */
export const EXPORT_FD = 3;
export const FRAME_HEADER_BYTES = 16;
/** Payload: JSON `{ columns, header? }`, before any CSV. */
export const FRAME_COLUMNS = 1;
/** Payload: encoded CSV lines; rows: how many. */
export const FRAME_CSV = 2;
/** No payload; rows: the total. */
export const FRAME_END = 3;
