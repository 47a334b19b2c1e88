import pg from 'pg';
import { PassThrough } from 'node:stream';
import { parse } from 'pg-protocol';
import { describe, expect, test } from 'vitest';
import { ExtendedCopyOut } from '../../../../src/tools/database/drivers/pg-copy-out.js';
import { requireEnv } from '../helpers.js';

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

function message(code: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(code, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

describe('ExtendedCopyOut reading the socket itself', () => {
  test('rows come out whole and in order, and pg gets exactly the other messages, wherever the reads are cut', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => `${i},${'x'.repeat(i === 150 ? 20_000 : i % 61)}\n`);
    const before = message('H', Buffer.from([0, 0, 2, 0, 0, 0, 0]));
    const after = Buffer.concat([message('c', Buffer.alloc(0)), message('C', Buffer.from('COPY 300\0')), message('Z', Buffer.from('I'))]);
    const wire = Buffer.concat([message('1', Buffer.alloc(0)), before, ...rows.map(copyDataMessage), after]);
    let seed = 5;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 12; round++) {
      const copyOut = new ExtendedCopyOut('COPY (SELECT 1) TO STDOUT');
      const socket = new PassThrough();
      const toPg: Buffer[] = [];
      const pgParser = (data: Buffer) => toPg.push(Buffer.from(data));
      socket.on('data', pgParser);
      const connection = { stream: socket, parse: () => {}, bind: () => {}, execute: () => {}, sync: () => {} };
      copyOut.submit(connection as unknown as pg.Connection);
      expect(copyOut.readSocketItself).toBe(true);
      const collected: Buffer[] = [];
      copyOut.on('data', (chunk: Buffer) => collected.push(chunk));
      // Reads cut anywhere: inside headers, inside rows, one byte long, or across many messages.
      const maxRead = [2, 3, 7, 64, 1000, 70_000][round % 6]!;
      for (let offset = 0; offset < wire.length; ) {
        const size = 1 + random(maxRead);
        const chunk = Buffer.from(wire.subarray(offset, offset + size));
        socket.emit('data', chunk);
        chunk.fill(0); // pg reuses its buffers: nothing may be kept by reference
        offset += size;
      }
      copyOut.handleReadyForQuery();
      await new Promise((resolve) => copyOut.on('end', resolve));
      expect(Buffer.concat(collected).toString('utf8')).toBe(rows.join(''));
      expect(Buffer.concat(toPg).equals(Buffer.concat([message('1', Buffer.alloc(0)), before, after]))).toBe(true);
      expect(socket.listeners('data')).toEqual([pgParser]);
    }
  });
});

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

  describe('on a real PostgreSQL connection, reading the socket itself during the COPY', () => {
    async function withClient(work: (client: pg.Client) => Promise<void>): Promise<void> {
      const client = new pg.Client({ connectionString: requireEnv('QUARRY_TEST_PG_URL') });
      await client.connect();
      try {
        await work(client);
      } finally {
        await client.end();
      }
    }

    async function readAll(stream: ExtendedCopyOut): Promise<string> {
      const parts: Buffer[] = [];
      for await (const chunk of stream as AsyncIterable<Buffer>) parts.push(chunk);
      return Buffer.concat(parts).toString('utf8');
    }

    test('rows, notices between them, the row count, and pg takes the connection back', async () => {
      await withClient(async (client) => {
        await client.query(
          `CREATE OR REPLACE FUNCTION pg_temp.noisy(i int) RETURNS int AS $$ BEGIN IF i % 1000 = 0 THEN RAISE NOTICE 'at %', i; END IF; RETURN i; END $$ ` +
            `LANGUAGE plpgsql`,
        );
        const notices: string[] = [];
        client.on('notice', (notice) => notices.push(notice.message ?? ''));
        const stream = client.query(
          new ExtendedCopyOut("COPY (SELECT pg_temp.noisy(i), repeat('z', i % 300) FROM generate_series(1, 50000) AS i) TO STDOUT WITH (FORMAT csv)"),
        );
        const text = await readAll(stream);
        expect(stream.readSocketItself).toBe(true);
        expect(stream.rowCount).toBe(50_000);
        const expected = Array.from({ length: 50_000 }, (_, k) => `${k + 1},${(k + 1) % 300 ? 'z'.repeat((k + 1) % 300) : '""'}\n`).join('');
        expect(text === expected).toBe(true);
        expect(notices).toEqual(Array.from({ length: 50 }, (_, k) => `at ${(k + 1) * 1000}`));
        // The connection is pg's again: a plain query works.
        expect((await client.query('SELECT 41 + 1 AS n')).rows).toEqual([{ n: 42 }]);
      });
    });

    test('an error part-way ends the stream with the error and leaves the connection usable', async () => {
      await withClient(async (client) => {
        const stream = client.query(new ExtendedCopyOut('COPY (SELECT 1 / (30000 - i) FROM generate_series(1, 40000) AS i) TO STDOUT WITH (FORMAT csv)'));
        await expect(readAll(stream)).rejects.toThrow('division by zero');
        expect((await client.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
      });
    });
  });
});
