import { describe, expect, test } from 'vitest';
import { ClickhouseCsv } from '../../../src/tools/database/drivers/clickhouse.js';
import { crlfRecords } from '../../support/engine-truth.js';
import { seededRandom, testSeed } from '../../support/random.js';

/**
 * The conversion of ClickHouse's CSVWithNames to quarry's CSV (README "ClickHouse": CRLF, NULL
 * empty), cut into chunks anywhere (inside a quoted field, between `\` and `N`, inside a UTF-8
 * character), against the test's own record-by-record conversion. The byte-exact comparison with
 * the real server's output is in clickhouse.test.ts and the agent-run and MCP tests.
 */

const SEED = testSeed(20261128);

/** A field as ClickHouse writes it: strings quoted (quotes doubled), numbers bare, NULL as \N. */
function field(random: () => number): string {
  const kind = random();
  if (kind < 0.2) return '\\N';
  if (kind < 0.45) return String(Math.floor(random() * 1e6) - 5e5);
  if (kind < 0.5) return random() < 0.5 ? `\\x${Math.floor(random() * 10)}` : `${Math.floor(random() * 10)}\\N`;
  const palette = ['a', 'N', ',', '""', '\n', '\\', '\\N', ' ', 'é', '東', '🚀', '\r'];
  let text = '';
  for (let i = Math.floor(random() * 12); i > 0; i--) text += palette[Math.floor(random() * palette.length)];
  return `"${text}"`;
}

function convert(text: string, chunks: () => number): { out: string; records: number } {
  const bytes = Buffer.from(text, 'utf8');
  const csv = new ClickhouseCsv();
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const size = chunks();
    parts.push(Buffer.from(csv.convert(bytes.subarray(at, at + size))));
    at += size;
  }
  return { out: Buffer.concat(parts).toString('utf8'), records: csv.records };
}

describe('ClickHouse CSV to quarry CSV', () => {
  test(`random records cut into random chunks convert as record by record (seed ${SEED})`, () => {
    console.log(`clickhouse-csv seed ${SEED}`);
    const random = seededRandom(SEED);
    for (let round = 0; round < 300; round++) {
      const rows = 1 + Math.floor(random() * 20);
      const width = 1 + Math.floor(random() * 5);
      let text = `${Array.from({ length: width }, (_, i) => `"c${i}"`).join(',')}\n`;
      for (let row = 0; row < rows; row++) text += `${Array.from({ length: width }, () => field(random)).join(',')}\n`;
      const expected = crlfRecords(text, '\\N');
      const maxChunk = 1 + Math.floor(random() * 40);
      const { out, records } = convert(text, () => 1 + Math.floor(random() * maxChunk));
      expect(out, `round ${round}: ${JSON.stringify(text)}`).toBe(expected);
      expect(records).toBe(rows + 1);
    }
  });

  test('NULL at a record end, at a chunk end, and backslashes that are not NULL', () => {
    const text = '"a","b"\n\\N,\\N\n1,\\x\n\\Nx,"\\N"\n5\\N,6\n';
    for (let size = 1; size <= text.length; size++)
      expect(convert(text, () => size).out, `chunks of ${size}`).toBe('"a","b"\r\n,\r\n1,\\x\r\n\\Nx,"\\N"\r\n5\\N,6\r\n');
  });
});
