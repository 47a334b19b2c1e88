// The PostgreSQL export's COPY reader, two ways, for the database bench (README "Benchmarks"):
// quarry's own (src/tools/database/drivers/pg-copy-out.ts, which reads pg's socket itself) and
// pg-copy-streams, the field's library for COPY (a devDependency, for this comparison only), both
// on the extended protocol and writing CRLF records to a file, so that only the reader differs.
// Usage: node bench/pg-copy-reader.mjs quarry|pg-copy-streams URL SQL OUTPUT
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { ExtendedCopyOut } from '../dist/tools/database/drivers/pg-copy-out.js';

const [mode, url, sql, output] = process.argv.slice(2);

/**
 * pg-copy-streams' COPY TO on the extended protocol (one statement only, as quarry needs): Parse
 * and Bind first, then pg-copy-streams takes the socket and its query(text) becomes Execute and Sync.
 */
function libraryCopyOut(text) {
  const copy = copyTo(text);
  const submitCopy = copy.submit.bind(copy);
  copy.submit = (connection) => {
    connection.once('bindComplete', () =>
      submitCopy(
        new Proxy(connection, {
          get(target, property) {
            if (property === 'query')
              return () => {
                target.execute({}, false);
                target.sync();
              };
            const value = Reflect.get(target, property, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
      ),
    );
    connection.parse({ name: '', text, types: [] }, false);
    connection.bind({ values: [] }, false);
    connection.flush();
  };
  return copy;
}

/** COPY's LF record ends as CRLF: a quote toggles "inside a value"; only LFs outside end records. */
async function* crlfRecords(source) {
  let quoted = false;
  for await (const chunk of source) {
    const text = chunk.toString('latin1');
    let out = '';
    let position = 0;
    while (position < text.length) {
      const quote = text.indexOf('"', position);
      const end = quote < 0 ? text.length : quote;
      out += quoted ? text.slice(position, end) : text.slice(position, end).replaceAll('\n', '\r\n');
      if (quote < 0) break;
      out += '"';
      quoted = !quoted;
      position = quote + 1;
    }
    yield Buffer.from(out, 'latin1');
  }
}

const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query('BEGIN READ ONLY');
const text = `COPY (\n${sql}\n) TO STDOUT WITH (FORMAT csv, HEADER true)`;
const source = mode === 'quarry' ? client.query(new ExtendedCopyOut(text, { crlf: true })) : crlfRecords(client.query(libraryCopyOut(text)));
await pipeline(source, createWriteStream(output));
await client.query('ROLLBACK');
await client.end();
