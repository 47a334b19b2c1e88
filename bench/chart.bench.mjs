// The chart tool and `quarry report`: a 10,000-point line chart rendered in process (SVG with
// vega, PNG with resvg) beside vega alone making the SVG of the same specification (the
// reference: what any Vega-Lite renderer must at least do); and the HTML report of a session.
import { join } from 'node:path';

const POINTS = 10_000;
const RUNS = 5;

export async function run({ root, median }) {
  const { buildChart } = await import(join(root, 'dist', 'tools', 'chart', 'spec.js'));
  const { renderChart } = await import(join(root, 'dist', 'tools', 'chart', 'render.js'));
  const vega = await import('vega');
  const vegaLite = await import('vega-lite');
  const start = Date.UTC(2000, 0, 1);
  const data = {
    columns: ['day', 'value'],
    rows: Array.from({ length: POINTS }, (_, i) => [
      new Date(start + i * 86_400_000).toISOString().slice(0, 10),
      Math.round((Math.sin(i / 50) * 1000 + i) * 100) / 100,
    ]),
    kinds: { day: 'temporal', value: 'quantitative' },
    source: 'bench',
  };
  const chart = buildChart(data, { x: 'day', y: 'value' });
  await renderChart(chart.spec);
  const quarry = [];
  const reference = [];
  const ratios = [];
  for (let r = 0; r < RUNS; r++) {
    let t = performance.now();
    await renderChart(chart.spec);
    const a = performance.now() - t;
    t = performance.now();
    const view = new vega.View(vega.parse(vegaLite.compile(chart.spec).spec), { renderer: 'none' });
    await view.toSVG();
    view.finalize();
    const b = performance.now() - t;
    quarry.push(a);
    reference.push(b);
    ratios.push(a / b);
  }
  return [
    {
      name: `chart: ${POINTS.toLocaleString('en-US')}-point line, SVG + PNG`,
      quarry: median(quarry),
      reference: median(reference),
      referenceName: 'vega SVG only',
      unit: 'ms',
      ratio: median(ratios),
      note: 'the difference is resvg making the 2x PNG',
    },
  ];
}
