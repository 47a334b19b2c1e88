import { ToolError } from '../core/types.js';
import type { ChartData, ColumnKind } from './data.js';

/**
 * From data and the model's choices to a Vega-Lite specification, with honest defaults: bars
 * and areas start at zero, axes are titled with the column names, dates are a time axis,
 * numbers have thousands separators, and at most a readable number of categories and series
 * (the rest summed as "other", which the description says).
 */

export const CHART_TYPES = ['bar', 'line', 'area', 'point', 'histogram', 'heatmap'] as const;
export type ChartType = (typeof CHART_TYPES)[number];

/** Bars (or heat-map rows/columns) shown at most; the smallest are summed as "other". */
export const MAX_CATEGORIES = 30;
/** Colour series shown at most; the smallest are summed as "other". */
export const MAX_SERIES = 10;
export const CHART_WIDTH = 640;
export const CHART_HEIGHT = 400;
export const OTHER = 'other';

export interface ChartRequest {
  type?: ChartType;
  x: string;
  y?: string;
  color?: string;
  title?: string;
}

export interface BuiltChart {
  type: ChartType;
  /** Why this type, when it was inferred. */
  inferred?: string;
  spec: Record<string, unknown>;
  /** Data rows actually plotted (after grouping into "other"). */
  points: number;
  notes: string[];
  describe: { x: string; y: string; series: string[] };
}

function requireColumn(data: ChartData, name: string | undefined, role: string): string {
  if (name === undefined) throw new ToolError(`chart: "${role}" is required for this chart type`, 'bad_value');
  if (!data.columns.includes(name)) throw new ToolError(`chart: ${role} column "${name}" is not in the data; columns: ${data.columns.join(', ')}`, 'not_found');
  return name;
}

export function inferType(data: ChartData, x: string, y: string | undefined, color: string | undefined): { type: ChartType; why: string } {
  const xKind = data.kinds[x];
  const yKind = y ? data.kinds[y] : undefined;
  if (!y) return xKind === 'quantitative' ? { type: 'histogram', why: 'x is a number and there is no y' } : { type: 'bar', why: 'no y: rows counted per x' };
  if (xKind === 'temporal') return { type: 'line', why: data.years.includes(x) ? 'x holds years' : 'x holds dates' };
  if (xKind === 'nominal' && yKind === 'nominal') return { type: 'heatmap', why: 'x and y are both categories' };
  if (xKind === 'nominal') return { type: 'bar', why: 'x holds categories' };
  if (yKind === 'quantitative') return { type: color && data.kinds[color] === 'quantitative' ? 'heatmap' : 'point', why: 'x and y are both numbers' };
  return { type: 'bar', why: 'y holds categories' };
}

function axisFor(kind: ColumnKind, title: string): Record<string, unknown> {
  // Vega's default number ticks already use thousands separators (d3's ",f" with the step's precision).
  return kind === 'nominal' ? { title, labelLimit: 160 } : { title };
}

const YEAR_MS = 365.25 * 86_400_000;

/**
 * A time axis that says the year: years as "1960" (whole years, UTC, a tick every 1, 2, 5, 10...
 * years), and dates over more than one calendar year as "Feb 2020" (or "2020" over three years
 * or more); Vega's own labels ("February, June, October") name a year only at its first day.
 */
function timeEncoding(data: ChartData, field: string): Record<string, unknown> {
  const index = data.columns.indexOf(field);
  const times = data.rows
    .map((row) => row[index])
    .filter((value): value is string => typeof value === 'string')
    .map((value) => Date.parse(data.years.includes(field) ? `${value}-01-01T00:00:00Z` : value))
    .filter(Number.isFinite);
  const low = Math.min(...times);
  const high = Math.max(...times);
  const span = (high - low) / YEAR_MS;
  if (data.years.includes(field)) {
    const step = [1, 2, 5, 10, 20, 25, 50, 100, 200, 500].find((candidate) => span / candidate <= 12) ?? 1000;
    return {
      field,
      type: 'temporal',
      timeUnit: 'utcyear',
      scale: { type: 'utc' },
      axis: { title: field, format: '%Y', tickCount: { interval: 'year', step } },
    };
  }
  const crossesYear = times.length > 0 && new Date(low).getUTCFullYear() !== new Date(high).getUTCFullYear();
  return { field, type: 'temporal', axis: { title: field, ...(crossesYear ? { format: span >= 3 ? '%Y' : '%b %Y' } : {}) } };
}

/** Years as ordered categories (bars, heat-map cells): one label per year, in time order. */
function yearCategories(field: string, labels: number): Record<string, unknown> {
  return { field, type: 'ordinal', sort: 'ascending', axis: { title: field, labelAngle: labels <= 12 ? 0 : -45, labelOverlap: 'greedy' } };
}

/** Numbers in the SVG's descriptions and legends as a person reads them (5.94, never 5.9399999999999995). */
function measureFormat(rows: readonly Row[], field: string): string {
  const largest = Math.max(0, ...rows.map((row) => Math.abs(Number(row[field] ?? 0))).filter(Number.isFinite));
  const decimals = largest >= 1 || largest === 0 ? 4 : Math.min(12, 3 - Math.floor(Math.log10(largest)));
  return `,.${decimals}~f`;
}

type Row = Record<string, number | string | null>;

/** Keeps the `limit - 1` largest groups of `field` (by total of `measure`, or by count) and sums the rest as "other". */
function capGroups(rows: Row[], field: string, measure: string | undefined, keyFields: readonly string[], limit: number): { rows: Row[]; grouped: number } {
  const totals = new Map<string, number>();
  for (const row of rows) {
    const key = String(row[field]);
    totals.set(key, (totals.get(key) ?? 0) + (measure ? Number(row[measure] ?? 0) : 1));
  }
  if (totals.size <= limit) return { rows, grouped: 0 };
  const kept = new Set(
    [...totals.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit - 1)
      .map(([key]) => key),
  );
  const out: Row[] = [];
  const others = new Map<string, Row>();
  for (const row of rows) {
    if (kept.has(String(row[field]))) {
      out.push(row);
      continue;
    }
    const key = JSON.stringify(keyFields.map((name) => (name === field ? OTHER : row[name])));
    let other = others.get(key);
    if (!other) {
      other = Object.fromEntries(keyFields.map((name) => [name, name === field ? OTHER : (row[name] ?? null)]));
      if (measure) other[measure] = 0;
      else other.__count = 0;
      others.set(key, other);
    }
    if (measure) other[measure] = Number(other[measure]) + Number(row[measure] ?? 0);
    else other.__count = Number(other.__count) + 1;
  }
  return { rows: [...out, ...others.values()], grouped: totals.size - kept.size };
}

/** Categories largest first when there is a measure (else in their own order), with "other" always last. */
function categoryOrder(rows: readonly Row[], field: string, measure: string | undefined): string[] {
  const totals = new Map<string, number>();
  for (const row of rows) totals.set(String(row[field]), (totals.get(String(row[field])) ?? 0) + (measure ? Number(row[measure] ?? 0) : 0));
  const names = [...totals.keys()];
  if (measure) names.sort((a, b) => totals.get(b)! - totals.get(a)!);
  else names.sort((a, b) => a.localeCompare(b));
  return [...names.filter((name) => name !== OTHER), ...names.filter((name) => name === OTHER)];
}

function hasDuplicates(rows: readonly Row[], fields: readonly string[]): boolean {
  const seen = new Set<string>();
  for (const row of rows) {
    const key = JSON.stringify(fields.map((field) => row[field]));
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
}

export function buildChart(data: ChartData, request: ChartRequest): BuiltChart {
  const x = requireColumn(data, request.x, 'x');
  const color = request.color !== undefined ? requireColumn(data, request.color, 'color') : undefined;
  const y = request.y !== undefined ? requireColumn(data, request.y, 'y') : undefined;
  const inferred = request.type ? undefined : inferType(data, x, y, color);
  const type = request.type ?? inferred!.type;
  const notes: string[] = [];
  let rows: Row[] = data.rows.map((row) => Object.fromEntries(data.columns.map((column, index) => [column, row[index] ?? null])));
  const kind = (field: string) => data.kinds[field]!;
  const needY = type === 'line' || type === 'area' || type === 'point';
  if (needY && !y) throw new ToolError(`chart: a ${type} chart needs "y"`, 'bad_value');
  if ((type === 'line' || type === 'area' || type === 'point' || type === 'histogram') && y && kind(y) !== 'quantitative' && type !== 'histogram') {
    throw new ToolError(
      `chart: y column "${y}" holds ${kind(y) === 'temporal' ? 'dates' : 'text'}, not numbers; a ${type} chart needs numbers on y`,
      'bad_value',
    );
  }
  if (type === 'histogram' && kind(x) !== 'quantitative')
    throw new ToolError(`chart: a histogram needs numbers on x; "${x}" holds ${kind(x) === 'temporal' ? 'dates' : 'text'}`, 'bad_value');

  // Readable numbers of categories and series.
  const keyFields = [x, ...(color ? [color] : []), ...(type === 'heatmap' && y && kind(y) !== 'quantitative' ? [y] : [])];
  const measure = type === 'heatmap' ? (color && kind(color) === 'quantitative' ? color : undefined) : y && kind(y) === 'quantitative' ? y : undefined;
  if ((type === 'bar' || type === 'heatmap') && kind(x) === 'nominal') {
    const capped = capGroups(rows, x, measure, keyFields, MAX_CATEGORIES);
    rows = capped.rows;
    if (capped.grouped) notes.push(`${capped.grouped} smallest categories of ${x} summed as "${OTHER}" (at most ${MAX_CATEGORIES} shown)`);
  }
  if (type === 'heatmap' && y && kind(y) === 'nominal') {
    const capped = capGroups(rows, y, measure, keyFields, MAX_CATEGORIES);
    rows = capped.rows;
    if (capped.grouped) notes.push(`${capped.grouped} smallest categories of ${y} summed as "${OTHER}"`);
  }
  if (color && type !== 'heatmap' && kind(color) !== 'quantitative') {
    const capped = capGroups(rows, color, measure, keyFields, MAX_SERIES);
    rows = capped.rows;
    if (capped.grouped) notes.push(`${capped.grouped} smallest series of ${color} summed as "${OTHER}" (at most ${MAX_SERIES} series)`);
  }

  const countField = rows.some((row) => '__count' in row);
  // Vega-Lite leaves out rows whose plotted number or date is empty: counted, and said.
  let omitted = 0;
  const leftOut = (fields: string[]) => {
    omitted = rows.filter((row) => fields.some((field) => row[field] === null)).length;
    if (omitted) notes.push(`${omitted} row${omitted === 1 ? '' : 's'} with an empty ${fields.join(' or ')} left out (not plotted)`);
  };
  const title = request.title;
  const encoding: Record<string, unknown> = {};
  let mark: Record<string, unknown>;
  let yTitle = y ?? 'count';
  const xOrder = kind(x) === 'nominal' ? categoryOrder(rows, x, type === 'bar' ? measure : undefined) : [];
  // Few categories read best level; many are slanted so their labels fit.
  const xAxis = kind(x) === 'nominal' ? { ...axisFor('nominal', x), labelAngle: xOrder.length <= 8 ? 0 : -45 } : axisFor(kind(x), x);
  const years = (field: string) => data.years.includes(field);
  const distinct = (field: string) => new Set(rows.map((row) => row[field])).size;
  const xEncoding: Record<string, unknown> =
    kind(x) === 'temporal'
      ? years(x) && (type === 'bar' || type === 'heatmap')
        ? yearCategories(x, distinct(x))
        : timeEncoding(data, x)
      : { field: x, type: kind(x), axis: xAxis, ...(kind(x) === 'nominal' ? { sort: xOrder } : {}) };
  switch (type) {
    case 'bar': {
      mark = { type: 'bar' };
      encoding.x = xEncoding;
      if (y && kind(y) === 'quantitative') {
        const summed = hasDuplicates(rows, keyFields);
        if (summed) notes.push(`${y} summed per ${[x, ...(color ? [color] : [])].join(' and ')} (the data has several rows for one bar)`);
        encoding.y = {
          field: y,
          type: 'quantitative',
          aggregate: 'sum',
          scale: { zero: true },
          axis: axisFor('quantitative', y),
          format: measureFormat(rows, y),
        };
      } else if (y) {
        // y holds categories: horizontal bars counting rows.
        encoding.y = years(y) ? yearCategories(y, distinct(y)) : { field: y, type: kind(y), axis: axisFor(kind(y), y) };
        encoding.x = {
          aggregate: countField ? 'sum' : 'count',
          ...(countField ? { field: '__count' } : {}),
          type: 'quantitative',
          scale: { zero: true },
          axis: axisFor('quantitative', 'count'),
        };
        yTitle = y;
      } else {
        encoding.y = {
          aggregate: countField ? 'sum' : 'count',
          ...(countField ? { field: '__count' } : {}),
          type: 'quantitative',
          scale: { zero: true },
          axis: axisFor('quantitative', 'count'),
        };
      }
      break;
    }
    case 'line':
    case 'area':
    case 'point': {
      mark =
        type === 'point'
          ? { type: 'point', filled: true, size: 30 }
          : type === 'line'
            ? { type: 'line', point: rows.length <= 60 }
            : { type: 'area', opacity: 0.8 };
      encoding.x = { ...xEncoding, ...(kind(x) === 'quantitative' && type !== 'point' ? { scale: { zero: false } } : {}) };
      encoding.y = { field: y, type: 'quantitative', axis: axisFor('quantitative', y!), scale: { zero: type !== 'point' }, format: measureFormat(rows, y!) };
      leftOut([x, y!]);
      if (type === 'line' || type === 'area') {
        if (hasDuplicates(rows, keyFields)) notes.push(`${y} summed per ${[x, ...(color ? [color] : [])].join(' and ')} (several rows share an x)`);
        encoding.y = { ...(encoding.y as object), aggregate: 'sum' };
      }
      break;
    }
    case 'histogram': {
      mark = { type: 'bar' };
      encoding.x = { field: x, type: 'quantitative', bin: { maxbins: 30 }, axis: axisFor('quantitative', x) };
      encoding.y = { aggregate: 'count', type: 'quantitative', scale: { zero: true }, axis: axisFor('quantitative', 'count') };
      yTitle = 'count';
      leftOut([x]);
      break;
    }
    case 'heatmap': {
      mark = { type: 'rect' };
      const yField = requireColumn(data, y, 'y');
      const cells = (field: string) =>
        years(field)
          ? yearCategories(field, distinct(field))
          : kind(field) === 'quantitative'
            ? { field, type: 'quantitative', bin: { maxbins: 30 }, axis: axisFor('quantitative', field) }
            : { field, type: kind(field), axis: axisFor(kind(field), field) };
      encoding.x = cells(x);
      encoding.y = cells(yField);
      encoding.color =
        color && kind(color) === 'quantitative'
          ? { field: color, type: 'quantitative', aggregate: 'sum', legend: { title: color }, format: measureFormat(rows, color) }
          : { aggregate: countField ? 'sum' : 'count', ...(countField ? { field: '__count' } : {}), type: 'quantitative', legend: { title: 'count' } };
      yTitle = yField;
      break;
    }
  }
  if (color && type !== 'heatmap')
    encoding.color = { field: color, type: kind(color) === 'quantitative' ? 'quantitative' : 'nominal', legend: { title: color } };

  const spec: Record<string, unknown> = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    ...(title ? { title } : {}),
    width: CHART_WIDTH,
    height: CHART_HEIGHT,
    background: 'white',
    data: { values: rows },
    mark,
    encoding,
    config: { font: 'DejaVu Sans, Liberation Sans, Arial, sans-serif', axis: { labelFontSize: 11, titleFontSize: 12 }, title: { fontSize: 15 } },
  };
  // Series are the colour's groups; a heat map's colour (or any numeric colour) is a scale, not series.
  const series = color && type !== 'heatmap' && kind(color) !== 'quantitative' ? [...new Set(rows.map((row) => String(row[color])))] : [];
  return { type, ...(inferred ? { inferred: inferred.why } : {}), spec, points: rows.length - omitted, notes, describe: { x, y: yTitle, series } };
}

function numberText(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString('en-US') : value.toLocaleString('en-US', { maximumFractionDigits: 4 });
}

/** "from A to B" of a column's plotted values, as a person would read the axis. */
export function rangeText(data: ChartData, field: string): string | undefined {
  const index = data.columns.indexOf(field);
  if (index === -1) return undefined;
  const values = data.rows.map((row) => row[index]).filter((value): value is number | string => value !== null && value !== undefined);
  if (values.length === 0) return 'no values';
  const kind = data.kinds[field];
  if (kind === 'quantitative') {
    const numbers = values.map(Number);
    return `from ${numberText(Math.min(...numbers))} to ${numberText(Math.max(...numbers))}`;
  }
  if (kind === 'temporal') {
    const sorted = values.map(String).sort();
    return `from ${sorted[0]} to ${sorted[sorted.length - 1]}`;
  }
  const distinct = new Set(values.map(String));
  return `${distinct.size} categor${distinct.size === 1 ? 'y' : 'ies'}`;
}
