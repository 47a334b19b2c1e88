// The reference side of bench/duckdb.bench.mjs: DuckDB's own COPY ... TO CSV through the same
// library quarry uses (@duckdb/node-api), in one process: node bench/duckdb-copy.mjs SQL OUT.
import { DuckDBInstance } from '@duckdb/node-api';

const [sql, out] = process.argv.slice(2);
const instance = await DuckDBInstance.create(':memory:');
const connection = await instance.connect();
await connection.run(`COPY (${sql}) TO '${out.replaceAll("'", "''")}' (HEADER, FORMAT csv)`);
connection.closeSync();
instance.closeSync();
