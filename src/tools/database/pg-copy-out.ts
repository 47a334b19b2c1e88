import { Readable } from 'node:stream';
import type { Connection, Submittable } from 'pg';

/**
 * `COPY (...) TO STDOUT` over PostgreSQL's extended query protocol (Parse, Bind, Execute, Sync),
 * where the server accepts exactly one statement ("cannot insert multiple commands into a
 * prepared statement"). pg-copy-streams sends a simple Query instead, which runs every statement
 * in the text: there, one lexer mistake let `SELECT ... ) TO STDOUT; COMMIT; BEGIN READ WRITE;
 * DELETE ...; COPY (SELECT ...` commit a delete from a read-only export. This keeps the engine's
 * one-statement rule as a layer independent of the statement check (SPEC §11.2).
 *
 * It is a pg "submittable": pg's client parses the messages and hands this stream each CopyData
 * message; the socket is paused while the consumer is behind, so memory stays flat.
 *
 * A CopyData message is one row, and its bytes are a view into pg's parse buffer, which pg
 * reuses for the next bytes from the socket: a row kept beyond the call is overwritten (exports
 * came out with rows cut into each other). Rows are therefore copied at once into batches this
 * stream owns, which also hands the consumer a few hundred chunks instead of a million rows.
 */

/** Bytes of rows gathered before they are passed on. */
const BATCH_BYTES = 256 * 1024;

export class ExtendedCopyOut extends Readable implements Submittable {
  /** Rows COPY reported (from its command tag), known at the end. */
  rowCount = 0;
  private connection: Connection | null = null;
  private socketPaused = false;
  private failed = false;
  private batch = Buffer.allocUnsafe(BATCH_BYTES);
  private batchUsed = 0;

  constructor(private readonly text: string) {
    super();
  }

  /** Called by pg when the query reaches the connection. */
  submit(connection: Connection): void {
    this.connection = connection;
    // The unnamed statement and portal; every row in one Execute; Sync ends it (also after an error).
    connection.parse({ name: '', text: this.text, types: [] }, false);
    connection.bind({ values: [] }, false);
    connection.execute({}, false);
    connection.sync();
  }

  handleCopyData(message: { chunk: Buffer }): void {
    if (this.destroyed) return;
    const row = message.chunk;
    if (row.length > BATCH_BYTES - this.batchUsed) this.passBatch();
    if (row.length >= BATCH_BYTES) {
      this.pass(Buffer.from(row));
      return;
    }
    row.copy(this.batch, this.batchUsed);
    this.batchUsed += row.length;
  }

  private passBatch(): void {
    if (this.batchUsed === 0) return;
    const full = this.batch.subarray(0, this.batchUsed);
    this.batch = Buffer.allocUnsafe(BATCH_BYTES);
    this.batchUsed = 0;
    this.pass(full);
  }

  private pass(data: Buffer): void {
    if (!this.push(data)) this.pauseSocket();
  }

  override _read(): void {
    this.resumeSocket();
  }

  /** A consumer that stops early must not leave pg's socket paused (the ROLLBACK after it would hang). */
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.resumeSocket();
    callback(error);
  }

  handleCommandComplete(message: { text?: string }): void {
    const match = /^COPY (\d+)/.exec(message.text ?? '');
    if (match) this.rowCount = Number(match[1]);
  }

  handleError(error: Error): void {
    this.failed = true;
    this.destroy(error);
  }

  handleReadyForQuery(): void {
    if (this.failed || this.destroyed) return;
    this.passBatch();
    this.push(null);
  }

  // Messages a COPY TO STDOUT does not produce; pg may still call these on any submittable.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}

  handleCopyInResponse(): void {
    this.handleError(new Error('COPY FROM is not an export'));
  }

  private pauseSocket(): void {
    if (this.socketPaused || !this.connection) return;
    this.socketPaused = true;
    this.connection.stream.pause();
  }

  private resumeSocket(): void {
    if (!this.socketPaused || !this.connection) return;
    this.socketPaused = false;
    this.connection.stream.resume();
  }
}
