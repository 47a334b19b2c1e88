import { describe, expect, test } from 'vitest';
import { FRAME_HEADER_BYTES } from '../../../../src/tools/database/drivers/sqlite-child-protocol.js';
import { frameReader } from '../../../../src/tools/database/drivers/sqlite-process.js';

/**
 * The SQLite export's frames (sqlite-child-protocol.ts) as the parent reads them from the pipe:
 * whole and in order wherever the pipe's reads cut the bytes (inside a header, inside a payload,
 * one byte at a time, many frames at once), and each payload a buffer of its own.
 */

function random(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
}

function frame(id: number, type: number, payload: Buffer, rows: number): Buffer {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  header.writeUInt32LE(id, 0);
  header.writeUInt32LE(type, 4);
  header.writeUInt32LE(payload.length, 8);
  header.writeUInt32LE(rows, 12);
  return Buffer.concat([header, payload]);
}

describe('frameReader', () => {
  test('frames come out whole, in order and copied, wherever the reads are cut', () => {
    const seed = Number(process.env.QUARRY_TEST_SEED ?? 33012);
    console.log(`frameReader seed ${seed}`);
    const pick = random(seed);
    for (let round = 0; round < 24; round++) {
      const sent = Array.from({ length: 1 + pick(40) }, (_, index) => {
        const size = [0, 1, 15, 16, 17, 1000, 70_000][pick(7)]!;
        const payload = Buffer.alloc(size);
        for (let i = 0; i < size; i++) payload[i] = pick(256);
        return { id: index + 1, type: 1 + pick(3), payload, rows: pick(100_000) };
      });
      const wire = Buffer.concat(sent.map((each) => frame(each.id, each.type, each.payload, each.rows)));
      const received: { id: number; type: number; payload: Buffer; rows: number }[] = [];
      const read = frameReader((id, type, payload, rows) => received.push({ id, type, payload, rows }));
      const maxRead = [1, 3, 17, 4096, 65_536, 1 << 20][round % 6]!;
      for (let offset = 0; offset < wire.length; ) {
        const size = 1 + pick(maxRead);
        const chunk = Buffer.from(wire.subarray(offset, offset + size));
        read(chunk);
        chunk.fill(0xff); // nothing may be kept by reference to the pipe's chunk
        offset += size;
      }
      expect(received.length, `seed ${seed} round ${round}`).toBe(sent.length);
      for (const [index, each] of sent.entries()) {
        const got = received[index]!;
        expect([got.id, got.type, got.rows]).toEqual([each.id, each.type, each.rows]);
        expect(got.payload.equals(each.payload), `seed ${seed} round ${round} frame ${index}`).toBe(true);
      }
    }
  });
});
