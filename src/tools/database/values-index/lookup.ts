import type { DatabaseConfig, DatabaseDriver, RunOptions } from '../types.js';
import { byTable, matchValues, type CandidateColumn, type ColumnMatch, type FindValuesRequest, type IndexAnswer } from '../catalog/find-values.js';
import { catalogueFingerprint, indexPath, IndexReader } from './store.js';

/**
 * find_values from the value index (store.ts): the candidate text columns the index holds whole
 * are answered from it; the rest (number and date columns, columns over the limit, tables the
 * index did not cover) are left to the scan. An index whose catalogue fingerprint differs from the
 * database's is not used, and the answer says so.
 */

export function indexLookup(
  config: DatabaseConfig,
  driver: DatabaseDriver,
  options: RunOptions,
  request: FindValuesRequest,
): (columns: CandidateColumn[]) => Promise<IndexAnswer | null> {
  return async (columns) => {
    const reader = IndexReader.open(indexPath(config));
    if (!reader) return null;
    try {
      const current = await catalogueFingerprint(config.engine, driver, options);
      if (current !== reader.meta.fingerprint)
        return {
          matches: [],
          remaining: columns,
          tables: 0,
          note: `the value index (built ${reader.meta.builtAt}) is out of date: the tables or columns changed since; rebuild it with quarry db index ${config.alias}`,
        };
      return answer(reader, columns, request);
    } finally {
      reader.close();
    }
  };
}

export function answer(reader: IndexReader, columns: readonly CandidateColumn[], request: FindValuesRequest): IndexAnswer {
  const held = new Map<number, CandidateColumn>();
  const remaining: CandidateColumn[] = [];
  const indexed = new Map<number, { rows: number; distinct: number }>();
  for (const column of columns) {
    const entry = column.kind === 'text' ? reader.column(column.schema, column.table, column.column) : undefined;
    if (entry && entry.distinct !== null) {
      held.set(entry.id, column);
      indexed.set(entry.id, { rows: entry.rows, distinct: entry.distinct });
    } else remaining.push(column);
  }
  const lower = request.value.toLowerCase();
  const how = request.match === 'exact' ? 'equal' : request.match === 'prefix' ? 'prefix' : 'all';
  const values = new Map<number, [string, number][]>();
  for (const [id, value, n] of reader.values([...held.keys()], lower, how)) {
    const list = values.get(id);
    if (list) list.push([value, n]);
    else values.set(id, [[value, n]]);
  }
  const matches: ColumnMatch[] = [];
  for (const [id, list] of values) {
    const found = matchValues(list, request);
    const column = held.get(id)!;
    const figures = indexed.get(id)!;
    if (found)
      matches.push({
        ...found,
        schema: column.schema,
        table: column.table,
        column: column.column,
        type: column.type,
        tableRows: figures.rows,
        distinct: figures.distinct,
        source: 'index',
      });
  }
  const remainingTables = new Set(byTable(remaining).map((group) => JSON.stringify([group[0]!.schema, group[0]!.table])));
  const tables = byTable([...held.values()]).filter((group) => !remainingTables.has(JSON.stringify([group[0]!.schema, group[0]!.table]))).length;
  return {
    matches,
    remaining,
    tables,
    note: `${held.size.toLocaleString('en-US')} of them from the value index built ${reader.meta.builtAt} (counts as of then)`,
  };
}
