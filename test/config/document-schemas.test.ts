import { Ajv, type ValidateFunction } from 'ajv';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CONFIG_KEYS, parseConfigText } from '../../src/config/config-file.js';
import { DOCUMENT_AJV_OPTIONS, DOCUMENT_SCHEMAS, type DocumentSchemaName, schemaFile } from '../../src/config/document-schemas.js';
import { loadSuite } from '../../src/eval/suite.js';
import { UsageError } from '../../src/errors.js';
import { BUILTIN_PROFILE_NAMES } from '../../src/profiles/load.js';
import {
  APPROVAL_MODES,
  BACKENDS,
  DATABASE_MODES,
  FILE_WRITE_MODES,
  parseProfile,
  QUERY_GUARD_ACTIONS,
  SHELL_MODES,
  SHELL_NETWORK_MODES,
  UNTRUSTED_DATA_MODES,
} from '../../src/profiles/schema.js';
import {
  METRIC_KEYS,
  parseGlossary,
  parseMetrics,
  parseNote,
  parseQuery,
  parseRules,
  QUERY_KEYS,
  RULE_KEYS,
  TERM_KEYS,
} from '../../src/tools/knowledge/folder.js';
import { REPO_ROOT } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { seededRandom, testSeed } from '../support/random.js';

/**
 * The published schemas (schemas/*.schema.json) are what the loaders check documents against:
 * every shipped and example file validates, each schema refuses an unknown key and a wrong type
 * with one line naming the file, the key path and what is allowed, and on generated documents
 * (good ones, and ones with one random mistake) a document the schema refuses is refused by the
 * loader too.
 */

type Schema = Record<string, unknown>;
const schemaOf = (name: DocumentSchemaName): Schema => JSON.parse(readFileSync(schemaFile(name), 'utf8')) as Schema;
const yamlAt = (path: string): unknown => parse(readFileSync(join(REPO_ROOT, path), 'utf8'));
const dir = makeTempDir('quarry-schemas-');
const FILE = join(dir, 'document.yaml');

/** Each schema's loader, given a parsed document: it throws what a user would see. */
const LOADERS: Record<DocumentSchemaName, (document: unknown) => unknown> = {
  config: (document) => parseConfigText(stringify(document), FILE),
  profile: (document) => parseProfile(document, FILE, 'generated'),
  'knowledge-rules': (document) => parseRules(stringify(document), FILE),
  'knowledge-glossary': (document) => parseGlossary(stringify(document), FILE),
  'knowledge-metrics': (document) => parseMetrics(stringify(document), FILE),
  'knowledge-query': (document) => parseQuery(stringify(document), FILE),
  'knowledge-note': (document) => parseNote(`---\n${stringify(document)}---\nA note.\n`, FILE),
  'eval-suite': (document) => {
    writeFileSync(FILE, stringify(document));
    return loadSuite(FILE, dir);
  },
};

const knowledgeQueries = readdirSync(join(REPO_ROOT, 'fixtures/knowledge/queries')).map((name) => `fixtures/knowledge/queries/${name}`);

/** The good documents of each kind: the built-in profiles, the fixtures and the examples. */
const GOOD: Record<DocumentSchemaName, unknown[]> = {
  config: [yamlAt('fixtures/examples/config.yaml'), { databases: { s: { type: 'SQLite', path: 'x.db' } } }, null],
  profile: BUILTIN_PROFILE_NAMES.map((name) => yamlAt(`profiles/${name}.yaml`)),
  'knowledge-rules': [yamlAt('fixtures/knowledge/rules.yaml')],
  'knowledge-glossary': [yamlAt('fixtures/knowledge/glossary.yaml')],
  'knowledge-metrics': [yamlAt('fixtures/knowledge/metrics.yaml')],
  'knowledge-query': knowledgeQueries.map(yamlAt),
  'knowledge-note': [{ tables: ['orders'], database: 'sales' }],
  'eval-suite': [yamlAt('fixtures/examples/eval-suite.yaml'), [{ question: 'q', database: 'd', expected_csv: 'a\n1\n' }]],
};

const independent = new Map<DocumentSchemaName, ValidateFunction>();
function independentValidator(name: DocumentSchemaName): ValidateFunction {
  // Checked against the draft-07 meta-schema here (the loaders skip that at run time).
  if (!independent.has(name)) independent.set(name, new Ajv({ ...DOCUMENT_AJV_OPTIONS, allErrors: true, validateSchema: true }).compile(schemaOf(name)));
  return independent.get(name)!;
}

function errorOf(action: () => unknown): string | undefined {
  try {
    action();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
}

const REFUSED: Array<[DocumentSchemaName, unknown, string]> = [
  ['config', { databses: {} }, `${FILE}: unknown key "databses"; allowed keys: databases, mcp_servers, knowledge`],
  ['config', { databases: { s: { type: 'sqlite', path: 'x', passwd: 'p' } } }, `${FILE}: databases.s: unknown key "passwd"; allowed keys: type, url, path`],
  [
    'config',
    { databases: { s: { type: 'postgres', ssh: { host: 'h', jump: [{ host: 'j', key: 'k' }] } } } },
    `${FILE}: databases.s.ssh.jump[0]: unknown key "key"`,
  ],
  ['config', { databases: { s: { type: 'mongo' } } }, `${FILE}: "databases.s.type" is "mongo"; allowed values: sqlite, sqlite3, duckdb, postgres`],
  ['config', { databases: { s: { type: 'sqlite', port: true } } }, `${FILE}: "databases.s.port" must be text or a number, got true (Server engines: the port`],
  ['config', { knowledge: ['a'] }, `${FILE}: "knowledge" must be text, got ["a"]`],
  ['config', { mcp_servers: { m: { command: ['x'] } } }, `${FILE}: mcp_servers.m: missing required key "type"`],
  ['profile', { shel: 'restricted' }, `${FILE}: unknown key "shel"; allowed keys: name, description, shell`],
  ['profile', { query_guard: { rows: 1 } }, `${FILE}: query_guard: unknown key "rows"; allowed keys: max_estimated_rows, action`],
  ['profile', { ask_user_budget: 'three' }, `${FILE}: "ask_user_budget" must be a whole number, got "three"`],
  ['knowledge-rules', [{ rule: 'r', table: ['t'] }], `${FILE}: rule 1: unknown key "table"; allowed keys: rule, tables, database`],
  ['knowledge-rules', [{ rule: 'r', tables: 't' }], `${FILE}: "rule 1.tables" must be a list of text, got "t"`],
  ['knowledge-glossary', { churn: { definiton: 'x' } }, `${FILE}: churn: unknown key "definiton"; allowed keys: definition, synonyms, sql, tables`],
  ['knowledge-glossary', { churn: { definition: { a: 1 } } }, `${FILE}: "churn.definition" must be text or a number or true or false, got {"a":1}`],
  [
    'knowledge-metrics',
    { revenue: { description: 'd', table: 't', sql: 's', filter: 'x' } },
    `${FILE}: revenue: unknown key "filter"; allowed keys: description`,
  ],
  ['knowledge-metrics', { revenue: { description: 'd', table: 't', sql: 's', filters: 'x' } }, `${FILE}: "revenue.filters" must be a list of text, got "x"`],
  ['knowledge-query', { question: 'q', sql: 's', verified_by: 'a', verified_at: 'b', expect: { rows: 1, hash: 'h' } }, `${FILE}: expect: unknown key "hash"`],
  [
    'knowledge-query',
    { question: 'q', sql: 's', verified_by: 'a', verified_at: 'b', expect: { rows: 'one', digest: 'd' } },
    `"expect.rows" must be a whole number`,
  ],
  ['knowledge-note', { table: ['t'] }, `${FILE}: front matter: unknown key "table"; allowed keys: tables, database`],
  ['knowledge-note', { tables: 't' }, `${FILE}: front matter: "tables" must be a list of text, got "t"`],
  ['eval-suite', [{ question: 'q', database: 'd', expected_sql: 'S', tag: 'x' }], `suite ${FILE}: question 1: unknown key "tag"; allowed keys: id, question`],
  [
    'eval-suite',
    { questions: [{ question: 'q', database: 'd', expected_sql: 'S', tags: 'x' }] },
    `suite ${FILE}: "question 1: tags" must be a list of strings, got "x"`,
  ],
];

describe('the published schemas', () => {
  it('are valid draft-07 schemas, and every shipped, fixture and example file validates and loads', () => {
    for (const name of DOCUMENT_SCHEMAS) {
      const validate = independentValidator(name);
      for (const document of GOOD[name]) {
        expect(validate(document), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
        expect(
          errorOf(() => LOADERS[name](document)),
          name,
        ).toBeUndefined();
      }
    }
  });

  it('are named by the built-in profiles and the examples, for editors', () => {
    for (const name of BUILTIN_PROFILE_NAMES) {
      const text = readFileSync(join(REPO_ROOT, 'profiles', `${name}.yaml`), 'utf8');
      expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=../schemas/profile.schema.json');
    }
    for (const [example, name] of [
      ['config.yaml', 'config'],
      ['eval-suite.yaml', 'eval-suite'],
    ]) {
      const line = readFileSync(join(REPO_ROOT, 'fixtures', 'examples', example!), 'utf8').split('\n')[0]!;
      expect(line).toBe(`# yaml-language-server: $schema=../../schemas/${name}.schema.json`);
      expect(existsSync(join(REPO_ROOT, 'fixtures', 'examples', line.split('=')[1]!))).toBe(true);
    }
  });

  it('are the lists the code interprets', () => {
    const profile = schemaOf('profile') as { properties: Record<string, { enum?: unknown[]; properties?: Record<string, { enum?: unknown[] }> }> };
    const values = (key: string) => profile.properties[key]!.enum!.filter((value) => value !== null);
    expect(values('shell')).toEqual([...SHELL_MODES]);
    expect(values('file_write')).toEqual([...FILE_WRITE_MODES]);
    expect(values('database')).toEqual([...DATABASE_MODES]);
    expect(values('shell_network')).toEqual([...SHELL_NETWORK_MODES]);
    expect(values('backend')).toEqual([...BACKENDS]);
    expect(values('untrusted_data')).toEqual([...UNTRUSTED_DATA_MODES]);
    expect(profile.properties.approval!.properties!.mode!.enum!.filter((value) => value !== null)).toEqual([...APPROVAL_MODES]);
    const guard = (profile.properties.query_guard as { anyOf: { properties?: Record<string, { enum: unknown[] }> }[] }).anyOf[1]!;
    expect(guard.properties!.action!.enum.filter((value) => value !== null)).toEqual([...QUERY_GUARD_ACTIONS]);
    expect(Object.keys((schemaOf('config') as { properties: object }).properties)).toEqual([...CONFIG_KEYS]);
    const entryKeys = (name: DocumentSchemaName) =>
      Object.keys(((schemaOf(name).items ?? schemaOf(name).additionalProperties) as { properties: object }).properties);
    expect(entryKeys('knowledge-rules')).toEqual([...RULE_KEYS]);
    expect(entryKeys('knowledge-glossary')).toEqual([...TERM_KEYS]);
    expect(entryKeys('knowledge-metrics')).toEqual([...METRIC_KEYS]);
    expect(Object.keys((schemaOf('knowledge-query') as { properties: object }).properties)).toEqual([...QUERY_KEYS]);
  });

  for (const [name, document, message] of REFUSED) {
    it(`${name} refuses ${JSON.stringify(document)}`, () => {
      expect(independentValidator(name)(document)).toBe(false);
      const error = errorOf(() => LOADERS[name](document));
      expect(error).toContain(message);
      expect(error).not.toContain('\n');
    });
  }

  it('and the loaders agree on generated documents: whatever a schema refuses, its loader refuses, naming the file', () => {
    const seed = testSeed(Date.now() % 1_000_000);
    console.log(`document-schemas agreement seed: ${seed} (QUARRY_TEST_SEED=${seed} reproduces)`);
    const random = seededRandom(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const WRONG: unknown[] = [{ nested: true }, [[1]], true, 12.5, 'text', null, -1];
    let refused = 0;
    let unknownKeys = 0;
    for (let round = 0; round < 400; round++) {
      const name = pick(DOCUMENT_SCHEMAS);
      const document = structuredClone(pick(GOOD[name]));
      // Every mapping and every value in the document, by path.
      const mappings: Record<string, unknown>[] = [];
      const slots: [Record<string, unknown> | unknown[], string | number][] = [];
      const walk = (node: unknown) => {
        if (Array.isArray(node)) {
          for (const [index, item] of node.entries()) {
            slots.push([node, index]);
            walk(item);
          }
        } else if (node && typeof node === 'object') {
          mappings.push(node as Record<string, unknown>);
          for (const [key, value] of Object.entries(node)) {
            slots.push([node as Record<string, unknown>, key]);
            walk(value);
          }
        }
      };
      walk(document);
      const mutation = pick(['unknown key', 'wrong type', 'missing key'] as const);
      let added: string | undefined;
      if (mutation === 'unknown key' && mappings.length) {
        added = `zz_unknown_${round}`;
        pick(mappings)[added] = 'x';
      } else if (mutation === 'wrong type' && slots.length) {
        const [holder, key] = pick(slots);
        (holder as Record<string | number, unknown>)[key] = pick(WRONG);
      } else if (mutation === 'missing key' && mappings.length) {
        const mapping = pick(mappings);
        const keys = Object.keys(mapping);
        if (keys.length) delete mapping[pick(keys)];
      }
      const validate = independentValidator(name);
      const schemaAccepts = validate(document);
      const error = errorOf(() => LOADERS[name](document));
      if (schemaAccepts) continue;
      refused++;
      const context = `seed ${seed}, round ${round}, ${name}, ${mutation}: ${JSON.stringify(document).slice(0, 300)}`;
      expect(error, context).toBeDefined();
      expect(error!.startsWith(name === 'eval-suite' ? `suite ${FILE}` : FILE), `${context}: ${error}`).toBe(true);
      if (
        added &&
        validate.errors?.some((e) => e.keyword === 'additionalProperties' && (e.params as { additionalProperty: string }).additionalProperty === added)
      ) {
        expect(error, context).toContain(`unknown key "${added}"`);
        unknownKeys++;
      }
    }
    // Not vacuous: many of the mistakes are ones the schemas catch.
    expect(refused).toBeGreaterThan(100);
    expect(unknownKeys).toBeGreaterThan(30);
  });
});

describe('the build', () => {
  it('compiles every published schema ahead of time (dist/config/precompiled-schemas.js), with the same verdicts as Ajv at run time', async () => {
    const { PRECOMPILED_DOCUMENT_VALIDATORS } = (await import(`${REPO_ROOT}dist/config/precompiled-schemas.js`)) as {
      PRECOMPILED_DOCUMENT_VALIDATORS: Record<string, ((data: unknown) => boolean) & { errors?: unknown }>;
    };
    for (const name of DOCUMENT_SCHEMAS) {
      const precompiled = PRECOMPILED_DOCUMENT_VALIDATORS[JSON.stringify(schemaOf(name))];
      expect(precompiled, `${name}: run npm run build`).toBeTypeOf('function');
      const runtime = new Ajv(DOCUMENT_AJV_OPTIONS).compile(schemaOf(name));
      for (const document of [...GOOD[name], ...REFUSED.filter(([kind]) => kind === name).map(([, doc]) => doc)]) {
        expect(precompiled!(document)).toBe(runtime(document));
        expect(precompiled!.errors ?? null).toEqual(runtime.errors ?? null);
      }
    }
  });

  it('ships the schemas in the package', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('schemas');
  });
});
