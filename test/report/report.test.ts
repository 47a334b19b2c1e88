/// <reference lib="dom" />
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { PNG } from 'pngjs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSessionDir, renderReport } from '../../src/report/html.js';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';

/**
 * `quarry report` of a real agent session (scripted model, real tools), opened in a real
 * headless Chromium (Debian's, driven by playwright-core): no console errors, no requests, the
 * answer, tables, chart and export present, hostile text shown as text and never run.
 */

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((path) => existsSync(path));
const EVIL_CELL = '<script>window.__pwned = 1</script>';
const EVIL_IMG = '<img src=x onerror="window.__pwned = 2">';

let home: string;
let work: string;
let reportPath: string;

beforeAll(async () => {
  home = makeTempDir('quarry-report-home-');
  work = makeTempDir('quarry-report-work-');
  const db = new Database(join(work, 'shop.db'));
  db.exec("CREATE TABLE sales (region TEXT, amount REAL); INSERT INTO sales VALUES ('north', 10), ('south', 25.5), ('east', 7);");
  db.close();
  const script = join(home, 'script.json');
  writeFileSync(
    script,
    JSON.stringify({
      turns: [
        {
          text: 'Looking at odd values first.',
          tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: `SELECT '${EVIL_CELL}' AS evil, '${EVIL_IMG.replace(/'/g, "''")}' AS img` } }],
        },
        { text: 'Trying to clean up.', tool_calls: [{ name: 'sqlite', arguments: { operation: 'query', sql: 'DELETE FROM sales' } }] },
        {
          text: 'Charting and exporting.',
          tool_calls: [
            {
              name: 'chart',
              arguments: { sql: 'SELECT region, amount FROM sales', x: 'region', y: 'amount', title: 'Sales by region', output_path: 'sales.png' },
            },
            { name: 'sqlite', arguments: { operation: 'export_query', sql: 'SELECT * FROM sales ORDER BY region', output_path: 'sales.csv' } },
            { name: 'sqlite', arguments: { operation: 'query', sql: 'SELECT region, amount FROM sales ORDER BY amount DESC' } },
            { name: 'bash', arguments: { command: "printf 'line one\\nline two\\n'" } },
          ],
        },
        {
          text: [
            '## Sales',
            '',
            '| region | amount |',
            '|---|--:|',
            '| south | 25.5 |',
            '| north | 10 |',
            '',
            `Raw HTML stays text: ${EVIL_CELL} and <b onmouseover="window.__pwned = 3">bold?</b>`,
            '',
            '[a bad link](javascript:window.__pwned=4) and ![remote image](http://example.com/x.png)',
          ].join('\n'),
        },
      ],
    }),
  );
  const run = await runCli(['-m', `script:${script}`, '--db', `shop=${join(work, 'shop.db')}`, '-w', work, '--yes', 'How are sales by region?'], {
    env: cliEnv(home),
    timeoutMs: 60_000,
  });
  expect(run.code, run.stderr).toBe(0);
  reportPath = join(work, 'report.html');
  const made = await runCli(['report', 'latest', '-o', reportPath], { env: cliEnv(home) });
  expect(made.code, made.stderr).toBe(0);
  expect(made.stdout.trim()).toBe(reportPath);
}, 90_000);

describe('the report file', () => {
  it('is one file with everything inline, hostile text escaped', () => {
    const html = readFileSync(reportPath, 'utf8');
    expect(html).toContain('Content-Security-Policy" content="default-src \'none\'; img-src data:');
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/\s(src|href)="(https?:)?\/\//);
    expect(html).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
    expect(html).toMatch(/<img class="chart" alt="chart [^"]*sales\.png" src="data:image\/png;base64,/);
    expect(html).toContain('[image: remote image]');
    // Refusal, export and usage sections.
    expect(html).toContain('<span class="badge refused">refused</span>');
    expect(html).toMatch(/<td>[^<]*sales\.csv<\/td><td class="num">3<\/td>/);
    expect(html).toContain('1 export');
    expect(html).toContain('1 chart');
    expect(html).toContain('1 refusal');
    expect(html).toContain('Tokens:');
    // A query's result is an HTML table with a header row and numbers right-aligned.
    expect(html).toContain(
      '<table class="result"><thead><tr><th>region</th><th>amount</th></tr></thead><tbody><tr><td>south</td><td class="num">25.5</td></tr>' +
        '<tr><td>north</td><td class="num">10</td></tr><tr><td>east</td><td class="num">7</td></tr></tbody></table>',
    );
    // bash output is preformatted text with real line breaks, not a JSON string.
    expect(html).toContain('<pre class="output">line one\nline two\n</pre><p class="note">exit code 0</p>');
    expect(html).not.toContain('{&quot;output&quot;:&quot;line one');
  });

  it('without -o goes into the session directory; -o never replaces a file unless --force; bad ids are usage errors', async () => {
    const inSession = await runCli(['report', 'latest'], { env: cliEnv(home) });
    expect(inSession.code).toBe(0);
    expect(inSession.stdout.trim()).toMatch(/sessions\/[^/]+\/report\.html$/);
    expect(existsSync(inSession.stdout.trim())).toBe(true);
    const again = await runCli(['report', 'latest', '-o', reportPath], { env: cliEnv(home) });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('the file exists');
    expect((await runCli(['report', 'latest', '-o', reportPath, '--force'], { env: cliEnv(home) })).code).toBe(0);
    const missing = await runCli(['report', 'no-such-session'], { env: cliEnv(home) });
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    const noDir = await runCli(['report', 'latest', '-o', join(work, 'nope', 'r.html')], { env: cliEnv(home) });
    expect(noDir.code).toBe(2);
    // Red team: -o naming a directory (even with --force), or a path under a file: usage errors, one line, nothing left.
    mkdirSync(join(work, 'adir'), { recursive: true });
    writeFileSync(join(work, 'afile'), 'keep');
    for (const target of [join(work, 'adir'), join(work, 'afile', 'r.html')]) {
      const bad = await runCli(['report', 'latest', '-o', target, '--force'], { env: cliEnv(home) });
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stderr).toMatch(/is a directory|is not a directory/);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(readFileSync(join(work, 'afile'), 'utf8')).toBe('keep');
    expect(readdirSync(join(work, 'adir'))).toEqual([]);
    expect(readdirSync(work).filter((name) => name.includes('.quarry-'))).toEqual([]);
  });

  it('renders delegated children as sections', () => {
    const dir = makeTempDir('quarry-report-children-');
    const meta = (id: string, prompt: string) => ({
      id,
      status: 'completed',
      profile: 'readonly',
      model: 'script:x',
      working_dir: '/tmp',
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:01Z',
      pid: 1,
      runs: 1,
      first_prompt: prompt,
      usage: { input_tokens: 5, output_tokens: 6, cached_tokens: 0 },
    });
    const trace = (prompt: string, answer: string) =>
      [
        { type: 'run_start', prompt, model: 'script:x', profile: 'readonly', working_dir: '/tmp', ts: '2026-01-01T00:00:00Z' },
        { type: 'message', message: { role: 'user', content: prompt }, ts: '2026-01-01T00:00:00Z' },
        { type: 'message', message: { role: 'assistant', content: answer }, ts: '2026-01-01T00:00:01Z' },
        { type: 'run_end', status: 'completed', usage: { input_tokens: 5, output_tokens: 6, cached_tokens: 0 }, ts: '2026-01-01T00:00:01Z' },
      ]
        .map((event) => JSON.stringify(event))
        .join('\n');
    writeFileSync(join(dir, 'meta.json'), JSON.stringify(meta('parent', 'Parent question')));
    writeFileSync(join(dir, 'trace.jsonl'), `${trace('Parent question', 'Parent answer')}\n{"type":"mess`);
    mkdirSync(join(dir, 'children', 'child-1'), { recursive: true });
    writeFileSync(join(dir, 'children', 'child-1', 'meta.json'), JSON.stringify(meta('child-1', 'Count <rows>')));
    writeFileSync(join(dir, 'children', 'child-1', 'trace.jsonl'), trace('Count <rows>', 'There are **42** rows'));
    const html = renderReport(loadSessionDir(dir)!);
    expect(html).toContain('Parent answer');
    expect(html).toContain('<h2>Delegated task</h2>');
    expect(html).toContain('Count &lt;rows&gt;');
    expect(html).toContain('There are <strong>42</strong> rows');
  });
});

describe.skipIf(!CHROMIUM)(`the report in headless Chromium${CHROMIUM ? '' : ' (skipped: no chromium; apt-get install chromium)'}`, () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox', '--disable-gpu'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('loads with no console errors and no requests, shows the answer, tables and chart, and runs no injected script', async () => {
    const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('request', (request) => requests.push(request.url()));
    const url = pathToFileURL(reportPath).href;
    await page.goto(url, { waitUntil: 'load' });
    expect(errors).toEqual([]);
    expect(requests.filter((request) => request !== url && !request.startsWith('data:'))).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The model's <b onmouseover> is text, not an element; the javascript: link is plain text.
    expect(await page.locator('main b').count()).toBe(0);
    expect(await page.locator('a[href^="javascript"]').count()).toBe(0);
    await page.click('text=a bad link', { timeout: 2000 }).catch(() => undefined);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    const answer = await page.locator('.answer').first().innerText();
    expect(answer).toContain('Raw HTML stays text: <script>window.__pwned = 1</script>');
    expect(await page.locator('.answer table tr').count()).toBe(3);
    // Markdown column alignment is kept; tables keep display: table with collapsed borders (no gaps).
    const alignments = await page.locator('.answer table td').evaluateAll((cells) => cells.map((cell) => getComputedStyle(cell).textAlign));
    expect(alignments).toEqual(['left', 'right', 'left', 'right']);
    const tables = await page
      .locator('table')
      .evaluateAll((nodes) => nodes.map((node) => [getComputedStyle(node).display, getComputedStyle(node).borderCollapse]));
    expect(tables.length).toBeGreaterThanOrEqual(3);
    for (const table of tables) expect(table).toEqual(['table', 'collapse']);
    const amounts = await page.locator('table.result td.num').evaluateAll((cells) => cells.map((cell) => getComputedStyle(cell).textAlign));
    expect(amounts.length).toBeGreaterThanOrEqual(3);
    expect(new Set(amounts)).toEqual(new Set(['right']));
    const body = await page.locator('main').innerText();
    expect(body).toContain(EVIL_CELL);
    expect(body).toContain('DELETE FROM sales');
    const images = await page
      .locator('img')
      .evaluateAll((nodes) => nodes.map((node) => ({ src: (node as HTMLImageElement).src.slice(0, 22), width: (node as HTMLImageElement).naturalWidth })));
    expect(images).toEqual([{ src: 'data:image/png;base64,', width: expect.any(Number) }]);
    expect(images[0]!.width).toBeGreaterThan(500);
    const shot = PNG.sync.read(await page.screenshot({ fullPage: true }));
    expect(shot.width).toBe(1000);
    expect(shot.height).toBeGreaterThan(800);
    let drawn = 0;
    for (let i = 0; i < shot.data.length; i += 4) if (shot.data[i]! < 200) drawn++;
    expect(drawn / (shot.width * shot.height)).toBeGreaterThan(0.01);
    await page.close();
  }, 60_000);

  it('is readable on a phone: no sideways scrolling of the page', async () => {
    const page = await browser.newPage({ viewport: { width: 375, height: 700 }, deviceScaleFactor: 2 });
    await page.goto(pathToFileURL(reportPath).href);
    const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
    expect(widths.scroll).toBeLessThanOrEqual(widths.client + 1);
    await page.close();
  }, 60_000);
});
