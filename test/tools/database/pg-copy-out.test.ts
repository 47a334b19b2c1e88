import { PassThrough } from 'node:stream';
import { parse } from 'pg-protocol';
import { describe, expect, test } from 'vitest';
import { ExtendedCopyOut } from '../../../src/tools/database/pg-copy-out.js';

/**
 * ExtendedCopyOut against pg's own wire parser (pg-protocol, the parser inside pg's Connection):
 * CopyData rows arrive as views into a parse buffer that the parser reuses when a message spans
 * two socket reads. Rows must be copied before that happens, whenever the reader gets to them.
 */

function copyDataMessage(payload: string): Buffer {
  const body = Buffer.from(payload, 'utf8');
  const header = Buffer.alloc(5);
  header.write('d', 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

describe('ExtendedCopyOut', () => {
  test('rows survive the parser reusing its buffer, however late they are read', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => `${i},${'é'.repeat(i % 37)}${'y'.repeat(i % 97)}\n`);
    const wire = Buffer.concat(rows.map(copyDataMessage));
    const copyOut = new ExtendedCopyOut('COPY (SELECT 1) TO STDOUT');
    const socket = new PassThrough();
    const parsed = parse(socket, (message) => {
      if (message.name === 'copyData') copyOut.handleCopyData(message as unknown as { chunk: Buffer });
    });
    // Socket reads that end inside a message: the parser keeps the rest and merges it with the next read.
    for (let offset = 0; offset < wire.length; offset += 1_000) socket.write(wire.subarray(offset, offset + 1_000));
    socket.end();
    await parsed;
    copyOut.handleReadyForQuery();
    // Read only now, after every socket read was parsed.
    const parts: Buffer[] = [];
    for await (const chunk of copyOut as AsyncIterable<Buffer>) parts.push(chunk);
    const received = Buffer.concat(parts).toString('utf8');
    expect(received.length).toBe(rows.join('').length);
    expect(received === rows.join('')).toBe(true);
    // Rows are passed on in batches, not one chunk per row.
    expect(parts.length).toBeLessThan(rows.length / 10);
  });
});
