import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isMap, isSeq, parseDocument } from 'yaml';
import { isMapping, parseYamlDocument } from '../../config/yaml.js';
import { UsageError } from '../../errors.js';
import { writeAtomically } from './check.js';

/**
 * `quarry knowledge import dbt PATH` (docs/guide/knowledge.md): what a dbt project already knows,
 * as files a person reviews and commits. From manifest.json (dbt's artifact, `target/` of a
 * project): model and column descriptions become notes, `accepted_values` tests glossary entries
 * and rules, `relationships` tests rules. MetricFlow semantic models and simple metrics (from the
 * manifest, or from the project's YAML files) become metrics. Entries the folder already has are
 * kept as they are; nothing is overwritten.
 */

type Json = Record<string, unknown>;

interface ImportedTerm {
  name: string;
  definition: string;
  tables: string[];
}
interface ImportedRule {
  rule: string;
  tables: string[];
}
interface ImportedMetric {
  name: string;
  entry: Json;
}
interface ImportedNote {
  name: string;
  text: string;
}

export interface DbtImport {
  notes: ImportedNote[];
  terms: ImportedTerm[];
  rules: ImportedRule[];
  metrics: ImportedMetric[];
  /** What was not imported, and why. */
  skipped: string[];
}

function object(value: unknown): Json {
  return isMapping(value) ? value : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** `ref('orders')`, `ref("pkg", "orders")`, `source('shop', 'orders')`, `{{ get_where_subquery(ref('orders')) }}` → orders. */
export function refName(text: unknown): string | undefined {
  const value = str(text);
  if (!value) return undefined;
  const match = /(?:ref|source)\(\s*(?:['"][^'"]*['"]\s*,\s*)?['"]([^'"]+)['"]\s*\)/.exec(value);
  return match ? match[1] : /^[A-Za-z_][\w.]*$/.test(value) ? value : undefined;
}

function relationOf(node: Json): string {
  return str(node.alias) ?? str(node.identifier) ?? String(node.name);
}

function quoteValue(value: unknown): string {
  return typeof value === 'string' ? `'${value.replace(/'/g, "''")}'` : String(value);
}

function modelNotes(nodes: Json): ImportedNote[] {
  const notes: ImportedNote[] = [];
  for (const node of Object.values(nodes).map(object)) {
    if (node.resource_type !== 'model' && node.resource_type !== 'seed' && node.resource_type !== 'snapshot') continue;
    const columns = Object.values(object(node.columns))
      .map(object)
      .filter((column) => str(column.description));
    const description = str(node.description);
    if (!description && columns.length === 0) continue;
    const table = relationOf(node);
    const body = [
      '---',
      `tables: [${table}]`,
      '---',
      `# ${table}`,
      '',
      description ?? '(no model description)',
      ...(columns.length ? ['', 'Columns:', ...columns.map((column) => `- \`${String(column.name)}\`: ${str(column.description)}`)] : []),
      '',
      `(imported from dbt: ${str(node.unique_id) ?? table})`,
      '',
    ];
    notes.push({ name: `dbt_${String(node.name).replace(/[^A-Za-z0-9_.-]/g, '_')}`, text: body.join('\n') });
  }
  return notes;
}

function testsOf(nodes: Json, result: DbtImport): void {
  for (const node of Object.values(nodes).map(object)) {
    if (node.resource_type !== 'test') continue;
    const meta = object(node.test_metadata);
    const kwargs = object(meta.kwargs);
    const attached = str(node.attached_node);
    const model = attached && isMapping(nodes[attached]) ? relationOf(nodes[attached] as Json) : refName(kwargs.model);
    const column = str(node.column_name) ?? str(kwargs.column_name);
    if (!model || !column) continue;
    if (meta.name === 'accepted_values') {
      const values = list(kwargs.values);
      if (values.length === 0) continue;
      const shown = values.map(quoteValue).join(', ');
      result.terms.push({
        name: `${model}.${column}`,
        definition: `${model}.${column} takes one of these values: ${shown} (dbt accepted_values test).`,
        tables: [model],
      });
      result.rules.push({ rule: `${model}.${column} is one of ${shown}; filter on these exact values.`, tables: [model] });
    } else if (meta.name === 'relationships') {
      const target = refName(kwargs.to);
      const field = str(kwargs.field);
      if (!target || !field) continue;
      result.rules.push({
        rule: `${model}.${column} references ${target}.${field}: join ${model} to ${target} on ${model}.${column} = ${target}.${field}.`,
        tables: [model, target],
      });
    }
  }
}

const AGGREGATES: Record<string, (expr: string) => string> = {
  sum: (expr) => `SUM(${expr})`,
  count: (expr) => `COUNT(${expr})`,
  count_distinct: (expr) => `COUNT(DISTINCT ${expr})`,
  average: (expr) => `AVG(${expr})`,
  avg: (expr) => `AVG(${expr})`,
  min: (expr) => `MIN(${expr})`,
  max: (expr) => `MAX(${expr})`,
  sum_boolean: (expr) => `SUM(CASE WHEN ${expr} THEN 1 ELSE 0 END)`,
};

interface SemanticModel {
  table: string;
  measures: Map<string, Json>;
  dimensions: Map<string, string>;
  timeColumn: string | undefined;
  description: string | undefined;
}

function semanticModel(raw: Json): [string, SemanticModel] {
  const relation = object(raw.node_relation);
  const table = str(relation.alias) ?? refName(raw.model) ?? String(raw.name);
  const dimensions = new Map<string, string>();
  for (const dimension of list(raw.dimensions).map(object)) dimensions.set(String(dimension.name), str(dimension.expr) ?? String(dimension.name));
  for (const entity of list(raw.entities).map(object))
    if (!dimensions.has(String(entity.name))) dimensions.set(String(entity.name), str(entity.expr) ?? String(entity.name));
  const measures = new Map(list(raw.measures).map((measure) => [String(object(measure).name), object(measure)] as const));
  const defaults = object(raw.defaults);
  const timeName = str(defaults.agg_time_dimension);
  return [
    String(raw.name),
    { table, measures, dimensions, timeColumn: timeName ? (dimensions.get(timeName) ?? timeName) : undefined, description: str(raw.description) },
  ];
}

/** `{{ Dimension('order__status') }} = 'x'` with the semantic model's column names. */
function filterSql(template: string, model: SemanticModel): string {
  return template.replace(/\{\{\s*(?:Dimension|TimeDimension|Entity)\(\s*['"]([^'"]+)['"][^)]*\)\s*\}\}/g, (_whole, name: string) => {
    const short = name.includes('__') ? name.slice(name.lastIndexOf('__') + 2) : name;
    return model.dimensions.get(short) ?? short;
  });
}

function filtersOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(filtersOf);
  const where = object(value).where_filters;
  return list(where).flatMap((filter) => (str(object(filter).where_sql_template) ? [str(object(filter).where_sql_template)!] : []));
}

function metricsOf(models: Map<string, SemanticModel>, rawMetrics: unknown[], result: DbtImport): void {
  for (const metric of rawMetrics.map(object)) {
    const name = String(metric.name);
    const type = str(metric.type) ?? 'simple';
    const params = object(metric.type_params);
    const measureRef = params.measure;
    const measureName = typeof measureRef === 'string' ? measureRef : str(object(measureRef).name);
    if (type !== 'simple' || !measureName) {
      result.skipped.push(`metric ${name}: type ${type} (only simple metrics over one measure are imported)`);
      continue;
    }
    const owner = [...models.values()].find((model) => model.measures.has(measureName));
    if (!owner) {
      result.skipped.push(`metric ${name}: no semantic model has the measure ${measureName}`);
      continue;
    }
    const measure = owner.measures.get(measureName)!;
    const agg = String(measure.agg ?? '').toLowerCase();
    const aggregate = AGGREGATES[agg];
    if (!aggregate) {
      result.skipped.push(`metric ${name}: measure ${measureName} aggregates with ${agg || 'nothing'}, which has no plain SQL form here`);
      continue;
    }
    const expr = measure.expr === undefined || measure.expr === null ? measureName : String(measure.expr);
    const filters = [...filtersOf(metric.filter), ...filtersOf(object(measureRef).filter)].map((filter) => filterSql(filter, owner));
    const description = str(metric.description) ?? str(metric.label) ?? str(measure.description) ?? `${agg} of ${expr}`;
    const dimensions = [...owner.dimensions.values()].filter((column) => column !== owner.timeColumn);
    result.metrics.push({
      name,
      entry: {
        description,
        table: owner.table,
        sql: aggregate(expr),
        ...(filters.length ? { filters } : {}),
        ...(owner.timeColumn ? { time_column: owner.timeColumn } : {}),
        ...(dimensions.length ? { dimensions } : {}),
      },
    });
  }
}

/** YAML files of a dbt project (not its target/ or packages) that hold semantic_models or metrics. */
function projectYamlFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (folder: string, depth: number) => {
    if (depth > 8) return;
    for (const name of readdirSync(folder).sort()) {
      if (name.startsWith('.') || ['target', 'dbt_packages', 'dbt_modules', 'node_modules', 'logs'].includes(name)) continue;
      const path = join(folder, name);
      const stats = statSync(path);
      if (stats.isDirectory()) walk(path, depth + 1);
      else if (/\.ya?ml$/.test(name) && /^\s*(semantic_models|metrics)\s*:/m.test(readFileSync(path, 'utf8'))) found.push(path);
    }
  };
  walk(dir, 0);
  return found;
}

export function readDbt(path: string): DbtImport {
  const result: DbtImport = { notes: [], terms: [], rules: [], metrics: [], skipped: [] };
  const stats = statSync(path, { throwIfNoEntry: false });
  if (!stats) throw new UsageError(`${path}: not found; give a manifest.json or a dbt project folder`);
  const manifestFile = stats.isDirectory() ? join(path, 'target', 'manifest.json') : path;
  const models = new Map<string, SemanticModel>();
  const rawMetrics: unknown[] = [];
  let read = false;
  if (existsSync(manifestFile) && (!stats.isDirectory() || existsSync(manifestFile))) {
    if (!/\.json$/.test(manifestFile)) throw new UsageError(`${manifestFile}: expected dbt's manifest.json (or a project folder with target/manifest.json)`);
    let manifest: Json;
    try {
      manifest = object(JSON.parse(readFileSync(manifestFile, 'utf8')));
    } catch (error) {
      throw new UsageError(`${manifestFile}: not valid JSON: ${(error as Error).message.split('\n')[0]}`);
    }
    const schema = str(object(manifest.metadata).dbt_schema_version);
    if (!schema?.includes('/manifest/') || !isMapping(manifest.nodes))
      throw new UsageError(`${manifestFile}: not a dbt manifest (metadata.dbt_schema_version should name a manifest schema, and "nodes" be a mapping)`);
    const nodes = object(manifest.nodes);
    result.notes.push(...modelNotes(nodes));
    testsOf(nodes, result);
    for (const raw of Object.values(object(manifest.semantic_models))) {
      const [name, model] = semanticModel(object(raw));
      models.set(name, model);
    }
    rawMetrics.push(...Object.values(object(manifest.metrics)));
    read = true;
  }
  if (stats.isDirectory()) {
    for (const file of projectYamlFiles(path)) {
      const document = object(parseYamlDocument(readFileSync(file, 'utf8'), file, UsageError));
      for (const raw of list(document.semantic_models)) {
        const [name, model] = semanticModel(object(raw));
        if (!models.has(name)) models.set(name, model);
      }
      const known = new Set(rawMetrics.map((metric) => object(metric).name));
      rawMetrics.push(...list(document.metrics).filter((metric) => !known.has(object(metric).name)));
      read = true;
    }
  }
  if (!read) throw new UsageError(`${path}: no target/manifest.json and no YAML file with semantic_models or metrics in it`);
  metricsOf(models, rawMetrics, result);
  return result;
}

export interface ImportSummary {
  written: string[];
  /** Entries the folder already had (kept as they were). */
  kept: string[];
  skipped: string[];
}

function mergeMapping(file: string, entries: Array<{ name: string; value: Json }>, summary: ImportSummary, what: string): void {
  if (entries.length === 0) return;
  const document = parseDocument(existsSync(file) ? readFileSync(file, 'utf8') : '');
  if (document.contents === null) document.contents = document.createNode({}) as never;
  if (!isMap(document.contents)) throw new UsageError(`${file}: expected a mapping; nothing was imported into it`);
  let added = 0;
  for (const { name, value } of entries) {
    if (document.has(name)) summary.kept.push(`${what} ${name}`);
    else {
      document.set(name, document.createNode(value));
      added++;
    }
  }
  if (added) {
    writeAtomically(file, document.toString({ lineWidth: 0 }));
    summary.written.push(`${basename(file)}: ${added} ${what}${added === 1 ? '' : 's'} added`);
  }
}

/** Writes what readDbt found into the folder (created when missing). */
export function writeDbtImport(dir: string, found: DbtImport): ImportSummary {
  const summary: ImportSummary = { written: [], kept: [], skipped: found.skipped };
  mkdirSync(dir, { recursive: true });
  if (found.notes.length) mkdirSync(join(dir, 'notes'), { recursive: true });
  for (const note of found.notes) {
    const file = join(dir, 'notes', `${note.name}.md`);
    if (existsSync(file)) summary.kept.push(`note ${note.name}`);
    else {
      writeFileSync(file, note.text, { flag: 'wx' });
      summary.written.push(`notes/${note.name}.md`);
    }
  }
  mergeMapping(
    join(dir, 'glossary.yaml'),
    found.terms.map((term) => ({ name: term.name, value: { definition: term.definition, tables: term.tables } })),
    summary,
    'term',
  );
  mergeMapping(
    join(dir, 'metrics.yaml'),
    found.metrics.map((metric) => ({ name: metric.name, value: metric.entry })),
    summary,
    'metric',
  );
  if (found.rules.length) {
    const file = join(dir, 'rules.yaml');
    const document = parseDocument(existsSync(file) ? readFileSync(file, 'utf8') : '');
    if (document.contents === null) document.contents = document.createNode([]) as never;
    if (!isSeq(document.contents)) throw new UsageError(`${file}: expected a list of rules; nothing was imported into it`);
    const existing = new Set((document.toJS() as Json[]).map((rule) => object(rule).rule));
    let added = 0;
    for (const rule of found.rules) {
      if (existing.has(rule.rule)) summary.kept.push(`rule "${rule.rule}"`);
      else {
        (document.contents as { add(value: unknown): void }).add(document.createNode({ rule: rule.rule, tables: rule.tables }));
        existing.add(rule.rule);
        added++;
      }
    }
    if (added) {
      writeAtomically(file, document.toString({ lineWidth: 0 }));
      summary.written.push(`rules.yaml: ${added} rule${added === 1 ? '' : 's'} added`);
    }
  }
  return summary;
}
