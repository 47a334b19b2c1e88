import { rm } from 'node:fs/promises';
import { extname } from 'node:path';
import type { Backend } from '../../backends/types.js';
import type { DatabaseConfig } from '../database/types.js';
import { plural } from '../core/file-write-support.js';
import { formatCount } from '../core/long-lines.js';
import { displayPath, formatBytes, resolveToolPath, shownPath } from '../core/paths.js';
import { refuseSecrets } from '../core/existing-path.js';
import { knownSecretValues, redactJsonSecrets, redactPlainSecrets } from '../../security/secret-values.js';
import { effects } from '../core/effects.js';
import { success, ToolError, type ToolContext, type Tool } from '../core/types.js';
import { defineTool, toolParameters, type ArgsOf } from '../core/define.js';
import { checkCreateOnlyTarget } from '../core/write-policy.js';
import { csvData, MAX_CHART_CSV_BYTES, MAX_CHART_ROWS, queryData, type ChartData } from './data.js';
import { renderChart } from './render.js';
import { buildChart, CHART_HEIGHT, CHART_TYPES, CHART_WIDTH, MAX_CATEGORIES, MAX_SERIES, rangeText } from './spec.js';

/**
 * The chart tool (docs/guide/charts-and-reports.md "chart"): a read-only query or a CSV file drawn as a Vega-Lite chart,
 * written as SVG, PNG and the specification (.vl.json) beside them. Writing follows the export
 * rules: new files only, atomic, inside the working directory, the temporary directory or the
 * profile's write_roots, and the same approval as export_query.
 */

const DESCRIPTION =
  `Draw a chart and write it as SVG and PNG (with its Vega-Lite specification, .vl.json, beside them).
Data: "sql", one read-only statement on a configured database ("database" is the alias; optional when there is one), or "csv_path", a CSV file with a ` +
  `header row (e.g. an earlier export_query). At most ${formatCount(MAX_CHART_ROWS)} rows: aggregate in SQL first (GROUP BY, date buckets).
Types: bar, line, area, point (scatter), histogram (x numbers, no y), heatmap (x and y categories, color an optional number). Without "type": dates on x → ` +
  `line, categories on x → bar, numbers on x and y → point, numbers on x only → histogram.
x, y, color are column names; bars and areas start at zero; several rows for one bar or x are summed (said in the result); at most ${MAX_CATEGORIES} ` +
  `categories and ${MAX_SERIES} color series, the smallest summed as "other".
output_path: the file to write, NAME.png or NAME.svg (NAME.svg, NAME.png and NAME.vl.json are all written); never overwrites.
The result describes the chart in words (type, series, x and y ranges, points, files), so you can report it without seeing the image.`;

const OUTPUT_EXTENSIONS = ['.png', '.svg', ''];

function outputBase(outputPath: string): string {
  const lower = outputPath.toLowerCase();
  if (lower.endsWith('.vl.json')) return outputPath.slice(0, -'.vl.json'.length);
  const extension = extname(outputPath);
  if (!OUTPUT_EXTENSIONS.includes(extension.toLowerCase()))
    throw new ToolError(`chart: output_path must end in .png or .svg (got "${extension}"); NAME.svg, NAME.png and NAME.vl.json are written`, 'bad_value');
  return extension ? outputPath.slice(0, -extension.length) : outputPath;
}

function pickDatabase(configs: readonly DatabaseConfig[], alias: string | undefined): DatabaseConfig {
  if (configs.length === 0) throw new ToolError('chart: no database is configured for "sql"; use csv_path, or start quarry with --db', 'not_found');
  if (alias === undefined) {
    if (configs.length === 1) return configs[0]!;
    throw new ToolError(`chart: several databases are configured; pass "database" as one of: ${configs.map((config) => config.alias).join(', ')}`, 'ambiguous');
  }
  const config = configs.find((candidate) => candidate.alias === alias);
  if (!config) throw new ToolError(`chart: no database "${alias}"; configured: ${configs.map((candidate) => candidate.alias).join(', ')}`, 'not_found');
  return config;
}

async function loadData(args: ChartArgs, configs: readonly DatabaseConfig[], backend: Backend, context: ToolContext): Promise<ChartData> {
  if ((args.sql === undefined) === (args.csv_path === undefined))
    throw new ToolError('chart: give exactly one of "sql" (a read-only query) or "csv_path" (a CSV file)', 'bad_value');
  if (args.sql !== undefined) {
    const config = pickDatabase(configs, args.database);
    // Charts only read, whatever the profile's database mode.
    return queryData(config, args.sql, true, context.signal);
  }
  const path = await resolveToolPath(backend, context.workingDir, args.csv_path!);
  const found = await backend.stat(path);
  if (!found) throw new ToolError(`chart: ${args.csv_path} does not exist`, 'not_found');
  if (found.type !== 'file') throw new ToolError(`chart: ${args.csv_path} is not a file`, 'not_a_file');
  if (found.size > MAX_CHART_CSV_BYTES)
    throw new ToolError(
      `chart: ${args.csv_path} is ${formatBytes(found.size)}; charts read CSV files up to ${formatBytes(MAX_CHART_CSV_BYTES)}: aggregate first`,
      'too_large',
    );
  // Kernel pseudo-files (/proc/self/environ holds quarry's API keys; sizes there read as 0) are no CSV, and
  // an error naming the header's "columns" would show their contents to the model.
  const real = await backend.realpath(path);
  if (/^\/(proc|sys)(\/|$)/.test(real))
    throw new ToolError(
      `chart: ${args.csv_path} is a kernel pseudo-file under ${real.split('/')[1] === 'proc' ? '/proc' : '/sys'}, not a CSV file`,
      'not_a_file',
    );
  // Credential files (~/.pgpass, $QUARRY_HOME/config.yaml): the header would come back as "columns".
  if (backend.name === 'local') await refuseSecrets(path, real, args.csv_path!, false);
  const bytes = await backend.readFile(path);
  if (bytes.length > MAX_CHART_CSV_BYTES)
    throw new ToolError(
      `chart: ${args.csv_path} is over ${formatBytes(MAX_CHART_CSV_BYTES)}; charts read CSV files up to ${formatBytes(MAX_CHART_CSV_BYTES)}: aggregate first`,
      'too_large',
    );
  if (bytes.includes(0)) throw new ToolError(`chart: ${args.csv_path} holds NUL bytes: a binary file, not CSV`, 'binary');
  return csvData(bytes.toString('utf8'), displayPath(context.workingDir, path));
}

/** What the toolset builds chart with (src/agent/toolset.ts). */
export interface ChartToolOptions {
  /** Extra directories where the files may go (the profile's write_roots). */
  writeRoots: readonly string[];
  /** Where the CSV is read and the files are written: this machine, as for exports, whatever the backend. */
  exportFiles: Backend;
}

/** The schema; "database" only when databases are configured (an optional string to the handler either way). */
function chartParameters(aliases: readonly string[]) {
  return toolParameters(
    {
      ...((aliases.length ? { database: { type: 'string', enum: aliases, description: `Alias of the database for sql: ${aliases.join(', ')}` } } : {}) as {
        database?: { type: 'string' };
      }),
      sql: { type: 'string', description: 'One read-only statement whose rows are drawn' },
      csv_path: { type: 'string', description: 'A CSV file with a header row (instead of sql)' },
      type: { type: 'string', enum: [...CHART_TYPES], description: 'Chart type (default: chosen from the column types)' },
      x: { type: 'string', description: 'Column on the x axis' },
      y: { type: 'string', description: 'Column on the y axis (none for a histogram, or to count rows)' },
      color: { type: 'string', description: 'Column that splits the data into coloured series (heatmap: the value)' },
      title: { type: 'string', description: 'Chart title' },
      output_path: { type: 'string', description: 'New file NAME.png or NAME.svg; NAME.svg, NAME.png and NAME.vl.json are written' },
    },
    ['x', 'output_path'],
  );
}
export type ChartArgs = ArgsOf<ReturnType<typeof chartParameters>>;

export function createChartTool(configs: readonly DatabaseConfig[], options: ChartToolOptions): Tool {
  const aliases = configs.map((config) => config.alias);
  return defineTool({
    name: 'chart',
    description: DESCRIPTION,
    parameters: chartParameters(aliases),
    // It writes files: approval and concurrency as for export_query.
    readOnly: false,
    effects: effects({ reads: true, writesFiles: true }),
    async run(args, context) {
      const started = Date.now();
      const backend = options.exportFiles;
      const base = outputBase(args.output_path);
      // The targets are checked before any query runs (the final exclusive link stays the guard).
      const targets: Array<{ kind: string; path: string }> = [];
      for (const extension of ['.svg', '.png', '.vl.json']) {
        const requested = await resolveToolPath(backend, context.workingDir, `${base}${extension}`);
        targets.push({
          kind: extension,
          path: await checkCreateOnlyTarget(backend, requested, { workingDir: context.workingDir, writeRoots: options.writeRoots }),
        });
      }
      const data = await loadData(args, configs, backend, context);
      if (data.rows.length === 0) throw new ToolError('chart: the data has no rows; nothing to draw', 'no_data');
      const chart = buildChart(data, {
        ...(args.type ? { type: args.type } : {}),
        x: args.x,
        ...(args.y !== undefined ? { y: args.y } : {}),
        ...(args.color !== undefined ? { color: args.color } : {}),
        ...(args.title !== undefined ? { title: args.title } : {}),
      });
      // No known secret (an API key, a configured password or token) is drawn or written, whatever the data or the title held.
      const secrets = knownSecretValues();
      const spec = redactJsonSecrets(chart.spec, secrets);
      const renderStarted = Date.now();
      const rendered = await renderChart(spec);
      const renderMs = Date.now() - renderStarted;
      const contents: Record<string, Buffer> = {
        '.svg': Buffer.from(rendered.svg, 'utf8'),
        '.png': rendered.png,
        '.vl.json': Buffer.from(`${JSON.stringify(spec, null, 2)}\n`, 'utf8'),
      };
      const written: string[] = [];
      try {
        for (const target of targets) {
          await backend.writeFileAtomic(target.path, contents[target.kind]!, { exclusive: true });
          written.push(target.path);
        }
      } catch (error) {
        await Promise.all(written.map((path) => rm(path, { force: true })));
        if ((error as NodeJS.ErrnoException).code === 'EEXIST')
          throw new ToolError(
            `chart: ${args.output_path} (or its .svg/.png/.vl.json) appeared while drawing; nothing was written (choose a new name)`,
            'exists',
          );
        throw error;
      }
      const shown = (path: string) => shownPath(context.workingDir, path);
      const [svgPath, pngPath, specPath] = targets.map((target) => target.path) as [string, string, string];
      const series = chart.describe.series;
      const lines = [
        `Drew a ${chart.type} chart${chart.inferred ? ` (type chosen: ${chart.inferred})` : ''}${args.title ? ` titled "${args.title}"` : ''} from ` +
          `${plural(data.rows.length, 'row')} of ${data.source}: ${chart.describe.y} by ${chart.describe.x}, ${plural(chart.points, 'point')} plotted.`,
        `x (${chart.describe.x}): ${rangeText(data, chart.describe.x)}; y (${chart.describe.y}): ` +
          `${chart.type === 'histogram' || chart.describe.y === 'count' ? 'row counts' : rangeText(data, chart.describe.y)}.`,
        series.length ? `${series.length} series by ${args.color}: ${series.slice(0, 12).join(', ')}${series.length > 12 ? ', …' : ''}.` : '',
        ...chart.notes.map((note) => `Note: ${note}.`),
        `Files: ${shown(svgPath)} (${formatBytes(contents['.svg']!.length)}), ${shown(pngPath)} (${rendered.pngWidth}×${rendered.pngHeight} px, ` +
          `${formatBytes(rendered.png.length)}), ${shown(specPath)} (the Vega-Lite specification, to adjust and re-render).`,
      ].filter(Boolean);
      return success(redactPlainSecrets(lines.join('\n'), secrets), {
        path: pngPath,
        files: [svgPath, pngPath, specPath],
        type: chart.type,
        rows: data.rows.length,
        points: chart.points,
        width: CHART_WIDTH,
        height: CHART_HEIGHT,
        renderMs,
        durationMs: Date.now() - started,
      });
    },
  });
}
