// Runs after tsc. Bundles the CLI into dist/bundle/main.cjs, so that a command reads one file
// instead of about 280 modules (ours, yargs, ajv, yaml, ...): Node 20 spends about 1 ms per ES
// module and 0.3 ms per CommonJS file just finding, reading and compiling them; and saves V8's
// code cache for it (main.cjs.cache), so that it is not compiled either. dist/cli.cjs (the bin,
// compiled by tsc) loads it through dist/cli/load-bundle.cjs.
//
// Bundled modules that are imported lazily still run only when first imported (model SDKs,
// database drivers, MCP, Daytona and the bash tool's parser load only when used). Packages with
// native code, wasm or files read at run time stay outside the bundle and load from node_modules.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const root = new URL('..', import.meta.url).pathname;
const EXTERNAL = [
  'better-sqlite3',
  // Optional packages (docs/guide/install.md): loaded from node_modules when installed.
  'pg',
  'pg-cursor',
  '@duckdb/node-api',
  '@clickhouse/client',
  '@duckdb/node-bindings',
  'oracledb',
  'mysql2',
  'pg-native',
  'pg-cloudflare',
  'vertica-nodejs',
  '@vscode/ripgrep',
  'web-tree-sitter',
  '@e965/xlsx',
  'yauzl',
  'saxes',
  'openai',
  '@anthropic-ai/sdk',
  '@modelcontextprotocol/sdk',
  '@daytonaio/sdk',
  // Charts: native resvg, and vega's large lazily loaded graph.
  '@resvg/resvg-js',
  'vega',
  'vega-lite',
  // SSH tunnels: ssh2 loads its optional native crypto binding when present.
  'ssh2',
];

// pg is external (an optional package); src/tools/database/connections.ts answers its Cloudflare
// question with a momentary `navigator` when it loads it.

/**
 * string-width (ours, and yargs' newer copy) creates an `Intl.Segmenter` when it is loaded, which
 * loads ICU's segmentation data (about 13 ms) in every command, and then segments every text it
 * measures, also plain ASCII: yargs' help measured its words one by one for about 60 ms. The
 * bundled copies create the segmenter on first use and answer a text of printable ASCII
 * (U+0020-U+007E, one column each, as string-width itself counts them) by its length; its regular
 * expressions with Unicode properties are created on first use too. If either
 * line is not found, the build says so and bundles string-width unchanged.
 */
const lazySegmenter = {
  name: 'string-width-lazy-segmenter',
  setup(bundle) {
    bundle.onLoad({ filter: /[\\/]node_modules[\\/]string-width[\\/]index\.js$/ }, async ({ path }) => {
      const source = readFileSync(path, 'utf8');
      const marker = 'const segmenter = new Intl.Segmenter();';
      const entry = /export default function stringWidth\((\w+), options = \{\}\) \{/.exec(source);
      if (!source.includes(marker) || !entry) {
        console.warn(`postbuild: ${path} is not the string-width this build knows; bundled unchanged`);
        return { contents: source, loader: 'js' };
      }
      const lazy =
        'let quarrySegmenter;\nconst segmenter = { segment: (text) => (quarrySegmenter ??= new Intl.Segmenter()).segment(text) }; // scripts/postbuild.mjs';
      // Regular expressions with Unicode properties load ICU's property data when they are created
      // (about 10 ms for yargs' copy): they are created on the first text that is not plain ASCII.
      const lazyRegexes = [];
      const deferred = source.replace(/^const (\w+) = (\/.*\\p\{.*\/[a-z]*);$/gm, (_line, name, literal) => {
        lazyRegexes.push(`${name} ??= ${literal};`);
        return `let ${name}; // created on first use (scripts/postbuild.mjs)`;
      });
      const ascii =
        `${entry[0]}\n\tif (typeof ${entry[1]} === 'string' && /^[\\x20-\\x7E]*$/.test(${entry[1]})) return ${entry[1]}.length; // ` +
        `scripts/postbuild.mjs\n\t${lazyRegexes.join(' ')}`;
      return { contents: deferred.replace(marker, lazy).replace(entry[0], ascii), loader: 'js' };
    });
  },
};

/**
 * yargs imports Node's `assert` (about 10 ms to load) for two internal sanity checks that never
 * fail in normal use. The bundled yargs gets the same two functions, which load `assert` only to
 * throw its own error when a check does fail.
 */
const lazyAssertForYargs = {
  name: 'yargs-lazy-assert',
  setup(bundle) {
    bundle.onResolve({ filter: /^assert$/ }, ({ importer }) =>
      /[\\/]node_modules[\\/]yargs[\\/]/.test(importer) ? { path: 'yargs-assert', namespace: 'quarry-lazy-assert' } : undefined,
    );
    bundle.onLoad({ filter: /.*/, namespace: 'quarry-lazy-assert' }, () => ({
      contents:
        "export function strictEqual(actual, expected, message) { if (!Object.is(actual, expected)) require('node:assert').strictEqual(actual, expected, " +
        'message); }\n' +
        "export function notStrictEqual(actual, expected, message) { if (Object.is(actual, expected)) require('node:assert').notStrictEqual(actual, " +
        'expected, message); }\n',
      loader: 'js',
    }));
  },
};

/**
 * Ajv's standalone code for `schemas` (each compiled with `options`), written as the ES module
 * `target` that exports `exportName`: a table from each schema's JSON to its validator.
 */
function writeStandaloneValidators(schemas, options, target, exportName, from) {
  const require = createRequire(import.meta.url);
  const { Ajv } = require('ajv');
  const standaloneCode = require('ajv/dist/standalone').default;
  const ajv = new Ajv({ ...options, code: { source: true, esm: true } });
  const keys = [];
  const exports = {};
  for (const schema of schemas) {
    const key = JSON.stringify(schema);
    if (keys.includes(key)) continue;
    const name = `validate_${keys.length}`;
    ajv.addSchema(JSON.parse(key), name);
    exports[name] = name;
    keys.push(key);
  }
  // Ajv's runtime helpers (ucs2length, ...) become imports, so that the bundle holds them too.
  const runtimes = [];
  const code = standaloneCode(ajv, exports).replace(/require\("(ajv\/dist\/runtime\/[\w-]+)"\)/g, (_match, specifier) => {
    if (!runtimes.includes(specifier)) runtimes.push(specifier);
    return `quarryAjvRuntime${runtimes.indexOf(specifier)}`;
  });
  // Ajv's code reads `.default` of each helper's CommonJS exports. A default import is those
  // exports under Node, but the helper itself where a loader honours __esModule (esbuild's
  // bundle, vitest): either way the helper is passed on as `.default`.
  const imports = runtimes
    .map(
      (specifier, index) =>
        `import quarryAjvRuntimeImport${index} from '${specifier}.js';\nconst quarryAjvRuntime${index} = { default: typeof quarryAjvRuntimeImport${index} ` +
        `=== 'function' ? quarryAjvRuntimeImport${index} : quarryAjvRuntimeImport${index}.default };\n`,
    )
    .join('');
  const table = keys.map((key, index) => `  ${JSON.stringify(key)}: validate_${index},`).join('\n');
  writeFileSync(
    `${root}${target}`,
    `// Generated by scripts/postbuild.mjs from ${from}.\n` +
      `${imports}import { createRequire as quarryValidatorRequire } from 'node:module';\nconst require = quarryValidatorRequire(import.meta.url);\n` +
      `${code}\nexport const ${exportName} = {\n${table}\n};\n`,
  );
}

/**
 * The built-in tools' argument validators, compiled ahead of time with Ajv's standalone code
 * (the same options as at run time) into dist/tools/core/precompiled-validators.js, keyed by each
 * schema's JSON: start-up then neither loads Ajv nor compiles a schema (10-20 ms per command).
 * The database tools check their calls against the same schema without the aliases (two shapes, see
 * databaseValidationParameters), so they are compiled here too; MCP tools are compiled when first used.
 */
async function precompileValidators() {
  const { allBuiltinTools } = await import(`${root}dist/agent/toolset.js`);
  const { AJV_OPTIONS, fullSchema } = await import(`${root}dist/tools/core/validate.js`);
  const { databaseValidationParameters } = await import(`${root}dist/tools/database/tool.js`);
  const schemas = [...allBuiltinTools().map((tool) => tool.parameters), databaseValidationParameters(false), databaseValidationParameters(true)];
  writeStandaloneValidators(
    schemas.map((schema) => fullSchema(schema)),
    AJV_OPTIONS,
    'dist/tools/core/precompiled-validators.js',
    'PRECOMPILED_VALIDATORS',
    "the built-in tools' schemas; see src/tools/core/precompiled-validators.ts",
  );
}

/** The published schemas (schemas/*.schema.json) likewise, for the loaders of profiles, config.yaml, knowledge and eval suites. */
async function precompileDocumentSchemas() {
  const { DOCUMENT_AJV_OPTIONS, DOCUMENT_SCHEMAS } = await import(`${root}dist/config/document-schemas.js`);
  writeStandaloneValidators(
    DOCUMENT_SCHEMAS.map((name) => JSON.parse(readFileSync(`${root}schemas/${name}.schema.json`, 'utf8'))),
    DOCUMENT_AJV_OPTIONS,
    'dist/config/precompiled-schemas.js',
    'PRECOMPILED_DOCUMENT_VALIDATORS',
    'schemas/*.schema.json; see src/config/precompiled-schemas.ts',
  );
}

await precompileValidators();
await precompileDocumentSchemas();

/**
 * The built-in profiles, parsed ahead of time into dist/profiles/builtin.json with each file's
 * text: loading one at start-up then costs a JSON parse instead of the YAML parser's first run
 * (about 9 ms). src/profiles/load.ts uses an entry only when the file's text is still the same.
 */
function precompileBuiltinProfiles() {
  const require = createRequire(import.meta.url);
  const { parse } = require('yaml');
  const profiles = {};
  for (const name of readdirSync(`${root}profiles`)
    .filter((file) => file.endsWith('.yaml'))
    .sort()) {
    const text = readFileSync(`${root}profiles/${name}`, 'utf8');
    profiles[name] = { text, parsed: parse(text) };
  }
  writeFileSync(`${root}dist/profiles/builtin.json`, `${JSON.stringify(profiles)}\n`);
}

precompileBuiltinProfiles();

// The restricted shell's bash grammar: only tree-sitter-bash's wasm is needed at run time, so the
// package (a devDependency, with a native build) is not installed with quarry; the wasm ships in
// dist/ (src/tools/bash/policy/grammar.ts loads it from there).
copyFileSync(createRequire(import.meta.url).resolve('tree-sitter-bash/tree-sitter-bash.wasm'), `${root}dist/tree-sitter-bash.wasm`);
/**
 * Packages that can only be imported (ES modules without a CommonJS entry). Every other package
 * is loaded through require() by the bundle below, statically or for a dynamic import(), so each
 * loads exactly one way; these go through an import() in dist/cli/load-bundle.cjs (`quarryImport`), since a
 * script compiled by node:vm cannot import() without an experimental flag on Node 20.
 */
const IMPORT_ONLY = ['vega', 'vega-lite', '@vscode/ripgrep'];

rmSync(`${root}dist/bundle`, { recursive: true, force: true });
const shared = {
  absWorkingDir: root,
  outdir: 'dist/bundle',
  bundle: true,
  platform: 'node',
  target: 'node20',
  external: EXTERNAL.flatMap((name) => [name, `${name}/*`]),
  legalComments: 'none',
  logLevel: 'warning',
  plugins: [lazySegmenter, lazyAssertForYargs],
};

/**
 * Everything the CLI can run, one CommonJS file (dist/bundle/main.cjs) wrapped in a function
 * expression, so that dist/cli.cjs compiles it with node:vm and V8's code cache
 * (dist/bundle/main.cjs.cache, made below): Node 20 compiles ES modules from source on every run
 * and has no compile cache (module.enableCompileCache is Node 22), which cost 40-60 ms per command.
 * Lazily imported modules stay lazy: esbuild runs a bundled module's top level only on first import.
 */
await build({
  ...shared,
  entryPoints: { main: 'dist/cli/main.js' },
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  // import() of a package becomes require() (see IMPORT_ONLY for the exceptions, rewritten below).
  // Regular expressions with Unicode properties stay literals (Node 20 has them): esbuild would
  // otherwise write `new RegExp(...)`, which parses them, loading ICU's tables, when a module loads.
  supported: { 'dynamic-import': false, 'regexp-unicode-property-escapes': true, 'regexp-set-notation': true, 'regexp-lookbehind-assertions': true },
  define: { 'import.meta.url': 'quarryImportMetaUrl' },
  banner: {
    js:
      '(function (module, exports, require, __filename, __dirname, quarryImport) {\nconst quarryImportMetaUrl = ' +
      'require("node:url").pathToFileURL(__filename).href;',
  },
  footer: { js: '})' },
});
const bundlePath = `${root}dist/bundle/main.cjs`;
let bundled = readFileSync(bundlePath, 'utf8');
for (const name of IMPORT_ONLY) {
  const converted = new RegExp(
    `Promise\\.resolve\\(\\)\\.then\\(\\(\\) => (__toESM\\d*)\\(require\\("(${name.replace(/[/.]/g, '\\$&')}(?:/[^"]*)?)"\\)(?:, 1)?\\)\\)`,
    'g',
  );
  bundled = bundled.replace(converted, (_match, _helper, specifier) => `quarryImport(${JSON.stringify(specifier)})`);
  if (new RegExp(`require\\("${name.replace(/[/.]/g, '\\$&')}(/[^"]*)?"\\)`).test(bundled))
    throw new Error(`postbuild: dist/bundle/main.cjs still requires ${name}, which has no CommonJS entry`);
}
writeFileSync(bundlePath, bundled);

// The process SQLite runs in (src/tools/database/drivers/sqlite-process.ts finds it beside the
// bundle): CommonJS, since Node 20 sets up its ES module loader for an ES module entry, which cost
// the process about 15 ms more to start (before every first SQLite call of a command).
await build({
  ...shared,
  entryPoints: {
    'sqlite-child': 'dist/tools/database/drivers/sqlite-child.js',
  },
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  define: { 'import.meta.url': 'quarryImportMetaUrl' },
  banner: { js: 'const quarryImportMetaUrl = require("node:url").pathToFileURL(__filename).href;' },
});

/**
 * V8's code cache for main.cjs: a child process (scripts/code-cache.mjs) runs a few commands in an
 * empty home and folder, then saves the bytecode of every function they compiled. V8 checks the
 * cache against its version, its flags and the source's length, and compiles from source when it
 * does not fit (a different Node, V8 flags); each build writes the bundle and its cache together.
 */
// Without NODE_OPTIONS: V8 flags given there would make a cache that plain `node` runs refuse.
const { NODE_OPTIONS: _nodeOptions, ...trainingEnv } = process.env;
const training = spawnSync(process.execPath, [`${root}scripts/code-cache.mjs`, bundlePath, `${bundlePath}.cache`], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env: trainingEnv,
});
if (training.status !== 0) {
  // The CLI works without the cache (dist/cli/load-bundle.cjs compiles from source), only slower.
  rmSync(`${bundlePath}.cache`, { force: true });
  console.warn(`postbuild: scripts/code-cache.mjs exited ${training.status}; dist/bundle/main.cjs has no code cache (start-up about 50 ms slower)`);
}

// The bin must be executable when linked by npm.
chmodSync(`${root}dist/cli.cjs`, 0o755);
