// Runs after tsc. Bundles what every command loads at start-up into dist/bundle/, so that a
// command reads a few files instead of about 280 modules (ours, yargs, ajv, yaml, ...): Node 20
// spends about 1 ms per ES module and 0.3 ms per CommonJS file just finding, reading and
// compiling them. dist/cli.js (the bin, compiled by tsc) imports dist/bundle/main.js.
//
// Code splitting keeps every dynamic import() lazy (model SDKs, database drivers, MCP, Daytona
// and the bash tool's parser load only when used). Packages with native code, wasm or files
// read at run time stay outside the bundle and load from node_modules as before.
import { build } from 'esbuild';
import { chmodSync, readFileSync, rmSync } from 'node:fs';

const root = new URL('..', import.meta.url).pathname;
const EXTERNAL = [
  'better-sqlite3', '@duckdb/node-api', 'oracledb', 'mysql2', 'pg-native', 'pg-cloudflare', 'vertica-nodejs',
  '@vscode/ripgrep', 'web-tree-sitter', 'tree-sitter-bash',
  '@e965/xlsx', 'yauzl', 'saxes',
  'openai', '@anthropic-ai/sdk', '@modelcontextprotocol/sdk', '@daytonaio/sdk',
];

/**
 * pg asks at load time whether it runs on Cloudflare Workers. Without a global `navigator`
 * (Node 20 has none) it constructs a `Response`, which makes Node load its whole fetch
 * implementation (undici): about 35 ms on every PostgreSQL use, for a question whose answer
 * here is always no. The bundled copy answers it directly. If pg's code changes and the
 * function is not found, the build says so and bundles pg unchanged.
 */
const nodeOnlyPg = {
  name: 'pg-node-only',
  setup(bundle) {
    bundle.onLoad({ filter: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]stream\.js$/ }, async ({ path }) => {
      const source = readFileSync(path, 'utf8');
      const marker = 'function isCloudflareRuntime() {';
      if (!source.includes(marker)) {
        console.warn(`postbuild: ${path} has no isCloudflareRuntime(); pg is bundled unchanged`);
        return { contents: source, loader: 'js' };
      }
      return { contents: source.replace(marker, `${marker}\n  return false; // quarry runs on Node.js (scripts/postbuild.mjs)`), loader: 'js' };
    });
  },
};

rmSync(`${root}dist/bundle`, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { main: 'dist/cli/main.js', 'sqlite-export-worker': 'dist/tools/database/sqlite-export-worker.js' },
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL.flatMap((name) => [name, `${name}/*`]),
  // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
  banner: { js: "import { createRequire as quarryCreateRequire } from 'node:module'; const require = quarryCreateRequire(import.meta.url);" },
  chunkNames: 'chunk-[hash]',
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [nodeOnlyPg],
});

// The bin must be executable when linked by npm.
chmodSync(`${root}dist/cli.js`, 0o755);
