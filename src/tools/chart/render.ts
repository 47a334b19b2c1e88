import { importOptional } from '../core/optional-packages.js';

/**
 * Vega-Lite specification → SVG (vega, headless: no browser, no canvas) → PNG (resvg, a
 * prebuilt Rust rasteriser shipped as an npm package). Both load only when a chart is drawn.
 */

/** PNGs are rendered at twice the chart's size, for sharp text on high-density screens and in reports. */
export const PNG_SCALE = 2;

export interface RenderedChart {
  svg: string;
  png: Buffer;
  pngWidth: number;
  pngHeight: number;
}

export async function renderChart(spec: Record<string, unknown>): Promise<RenderedChart> {
  const [vega, vegaLite, { Resvg }] = await importOptional(['vega', 'vega-lite', '@resvg/resvg-js'], () =>
    Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]),
  );
  const compiled = vegaLite.compile(spec as never).spec;
  // No loader: a chart's data is inline, and a spec must never make vega fetch or read anything.
  const loader = vega.loader({ mode: 'http' });
  const refuse = async () => {
    throw new Error('charts read no external data');
  };
  loader.load = refuse;
  loader.sanitize = refuse;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', loader });
  try {
    const svg = await view.toSVG();
    const image = new Resvg(svg, {
      fitTo: { mode: 'zoom', value: PNG_SCALE },
      background: 'white',
      font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
    }).render();
    return { svg, png: image.asPng(), pngWidth: image.width, pngHeight: image.height };
  } finally {
    view.finalize();
  }
}
