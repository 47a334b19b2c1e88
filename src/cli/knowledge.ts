import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Argv } from 'yargs';
import { readConfigFile } from '../config/config-file.js';
import { loadDatabaseConfigs } from '../config/databases.js';
import { configFileLocation } from '../config/home.js';
import { EXIT_FAILED, EXIT_OK, UsageError } from '../errors.js';
import type { DatabaseConfig } from '../tools/database/types.js';
import { DEFAULT_KNOWLEDGE_DIR, type Knowledge, knowledgeDir, loadKnowledge } from '../tools/knowledge/folder.js';
import { closeAllDatabaseConnections } from '../tools/database/connections.js';

/**
 * `quarry knowledge list | check | add | import dbt` (docs/guide/knowledge.md): the team's
 * knowledge folder, read, checked against the data, added to by a person, imported from dbt.
 */

interface KnowledgeArgv {
  knowledge?: string | undefined;
  config?: string | undefined;
  'working-dir'?: string | undefined;
  db?: string[] | undefined;
  databases?: string | undefined;
  format?: 'text' | 'json';
}

function folderOptions<T>(y: Argv<T>) {
  return y
    .option('knowledge', { type: 'string', describe: 'The knowledge folder (default: .quarry/knowledge/ under the working directory; config.yaml knowledge:)' })
    .option('working-dir', { alias: 'w', type: 'string', describe: 'Directory whose .quarry/knowledge/ is the default folder' })
    .option('config', { type: 'string', describe: 'Config file (default: $QUARRY_HOME/config.yaml)' })
    .option('format', { choices: ['text', 'json'] as const, default: 'text' as const, describe: 'json: one object on stdout' });
}

function withDb<T>(y: Argv<T>, describe: string) {
  return y
    .option('db', {
      type: 'string',
      describe,
      coerce: (value: string | string[] | undefined): string[] => (value === undefined ? [] : [value].flat()),
    })
    .option('databases', { type: 'string', describe: 'YAML file of databases (env QUARRY_DB_CONFIG)' });
}

function context(argv: KnowledgeArgv, mayCreate = false) {
  const cwd = process.cwd();
  const config = readConfigFile(configFileLocation(argv.config, process.env, cwd));
  const workingDir = resolve(cwd, argv['working-dir'] ?? '.');
  const dir = knowledgeDir({ flag: argv.knowledge, configured: { value: config.settings.knowledge, file: config.file }, workingDir, cwd, mayCreate });
  return { cwd, config, workingDir, dir };
}

function requireFolder(argv: KnowledgeArgv): { knowledge: Knowledge; cwd: string; config: ReturnType<typeof context>['config'] } {
  const found = context(argv);
  if (!found.dir) throw new UsageError(`no knowledge folder: ${join(found.workingDir, DEFAULT_KNOWLEDGE_DIR)} does not exist (pass --knowledge DIR)`);
  return { knowledge: loadKnowledge(found.dir), cwd: found.cwd, config: found.config };
}

/** An explicit `ALIAS=` in front of a --db target. */
function explicitAlias(flag: string): string | undefined {
  return /^([A-Za-z][A-Za-z0-9_.-]*)=/.exec(flag)?.[1];
}

/**
 * The databases a check or add uses. `--db` values are targets, or the alias of a database from
 * config.yaml / --databases / the environment.
 */
function databasesFor(
  argv: KnowledgeArgv,
  cwd: string,
  config: ReturnType<typeof context>['config'],
): { configured: DatabaseConfig[]; given: DatabaseConfig[] } {
  const configured = loadDatabaseConfigs({ ...(argv.databases ? { databasesFile: argv.databases } : {}), config, env: process.env, cwd });
  const given = (argv.db ?? []).map((flag) => {
    const named = configured.find((candidate) => candidate.alias === flag);
    return named ?? loadDatabaseConfigs({ dbFlags: [flag], env: {}, cwd })[0]!;
  });
  return { configured, given };
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function listCommand(argv: KnowledgeArgv): number {
  const { knowledge } = requireFolder(argv);
  if (argv.format === 'json') {
    process.stdout.write(
      `${JSON.stringify(
        {
          dir: knowledge.dir,
          hash: knowledge.hash,
          rules: knowledge.rules.map((rule) => rule.rule),
          terms: knowledge.terms.map((term) => term.id),
          metrics: knowledge.metrics.map((metric) => metric.id),
          queries: knowledge.queries.map((query) => ({
            id: query.id,
            question: query.question,
            verified_by: query.verified_by,
            verified_at: query.verified_at,
          })),
          notes: knowledge.notes.map((note) => note.id),
        },
        null,
        2,
      )}\n`,
    );
    return EXIT_OK;
  }
  const lines = [
    `${knowledge.dir}: ${plural(knowledge.rules.length, 'rule')}, ${plural(knowledge.terms.length, 'term')}, ${plural(knowledge.metrics.length, 'metric')}, ` +
      `${plural(knowledge.queries.length, 'verified query').replace('querys', 'queries')}, ${plural(knowledge.notes.length, 'note')}`,
    ...knowledge.rules.map((rule) => `rule ${rule.id}: ${rule.rule.split('\n')[0]}`),
    ...knowledge.terms.map((term) => `term ${term.id}${term.synonyms.length ? ` (${term.synonyms.join(', ')})` : ''}`),
    ...knowledge.metrics.map((metric) => `metric ${metric.id}: ${metric.description.split('\n')[0]}`),
    ...knowledge.queries.map(
      (query) => `query ${query.id}: ${query.question} (${query.verified_by}, ${query.verified_at}${query.expect ? '' : ', no expect'})`,
    ),
    ...knowledge.notes.map((note) => `note ${note.id}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return EXIT_OK;
}

async function checkCommand(argv: KnowledgeArgv & { update: boolean }): Promise<number> {
  const { knowledge, cwd, config } = requireFolder(argv);
  const { configured, given } = databasesFor(argv, cwd, config);
  if (given.length > 1) throw new UsageError('quarry knowledge check takes one --db: the database every entry is checked against');
  const { checkKnowledge, describeResult, recordExpectation } = await import('../tools/knowledge/check.js');
  try {
    const results = await checkKnowledge(knowledge, configured, given[0]);
    const updated: string[] = [];
    if (argv.update) {
      for (const result of results) {
        if (result.kind !== 'query' || !result.actual || (result.status === 'ok' && !result.unrecorded)) continue;
        recordExpectation(knowledge.queries.find((query) => query.id === result.id)!, result.actual);
        updated.push(result.id);
      }
    }
    const failing = results.filter((result) => result.status !== 'ok' && !updated.includes(result.id));
    if (argv.format === 'json') {
      process.stdout.write(`${JSON.stringify({ dir: knowledge.dir, ok: failing.length === 0, results, ...(argv.update ? { updated } : {}) }, null, 2)}\n`);
    } else {
      const lines = results.map(describeResult);
      const counts = (['ok', 'changed', 'failed'] as const).map((status) => `${results.filter((result) => result.status === status).length} ${status}`);
      lines.push(`${results.length} checked: ${counts.join(', ')}${argv.update ? `; ${plural(updated.length, 'expectation')} re-recorded` : ''}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    return failing.length === 0 ? EXIT_OK : EXIT_FAILED;
  } finally {
    await closeAllDatabaseConnections();
  }
}

async function addCommand(
  argv: KnowledgeArgv & { question: string; sql: string; id?: string | undefined; 'verified-by'?: string | undefined },
): Promise<number> {
  const found = context(argv, true);
  const dir = found.dir ?? join(found.workingDir, DEFAULT_KNOWLEDGE_DIR);
  if (existsSync(dir)) loadKnowledge(dir);
  const flags = argv.db ?? [];
  if (flags.length !== 1) throw new UsageError('quarry knowledge add needs one --db TARGET: the database the SQL runs on');
  const { configured, given } = databasesFor(argv, found.cwd, found.config);
  const config = given[0]!;
  const alias = configured.some((candidate) => candidate.alias === flags[0]) ? flags[0] : explicitAlias(flags[0]!);
  const { saveVerifiedQuery } = await import('../tools/knowledge/save.js');
  try {
    const saved = await saveVerifiedQuery(dir, {
      question: argv.question,
      sql: argv.sql,
      config,
      ...(alias ? { database: alias } : {}),
      ...(argv.id ? { id: argv.id } : {}),
      ...(argv['verified-by'] ? { verifiedBy: argv['verified-by'] } : {}),
    });
    if (argv.format === 'json') process.stdout.write(`${JSON.stringify({ id: saved.id, file: saved.file, rows: saved.rows })}\n`);
    else process.stdout.write(`saved query ${saved.id}: ${saved.file} (${plural(saved.rows, 'row')} recorded)\n`);
    return EXIT_OK;
  } finally {
    await closeAllDatabaseConnections();
  }
}

async function importCommand(argv: KnowledgeArgv & { source: string; path: string }): Promise<number> {
  if (argv.source !== 'dbt') throw new UsageError(`quarry knowledge import: unknown source "${argv.source}"; known: dbt`);
  const found = context(argv, true);
  const dir = found.dir ?? join(found.workingDir, DEFAULT_KNOWLEDGE_DIR);
  // The folder as it is must load: importing into a broken folder would hide its error.
  if (existsSync(dir)) loadKnowledge(dir);
  const { readDbt, writeDbtImport } = await import('../tools/knowledge/dbt.js');
  const imported = readDbt(resolve(found.cwd, argv.path));
  const summary = writeDbtImport(dir, imported);
  // What was written must load as well: checked at once, not at the next run.
  loadKnowledge(dir);
  if (argv.format === 'json') process.stdout.write(`${JSON.stringify({ dir, ...summary }, null, 2)}\n`);
  else {
    const lines = [
      `imported into ${dir} (review the files, then commit them):`,
      ...summary.written.map((entry) => `  wrote ${entry}`),
      ...(summary.kept.length ? [`  kept as they were (already in the folder): ${summary.kept.join(', ')}`] : []),
      ...summary.skipped.map((entry) => `  skipped ${entry}`),
    ];
    if (summary.written.length === 0) lines.push('  nothing new to write');
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return EXIT_OK;
}

export function registerKnowledgeCommand(parser: Argv, setExit: (code: number) => void): void {
  parser.command('knowledge', "The team's knowledge folder: list, check, add, import (docs/guide/knowledge.md)", (y) =>
    y
      .command(
        'list',
        'Show what the knowledge folder holds',
        (sub) => folderOptions(sub),
        (argv) => setExit(listCommand(argv)),
      )
      .command(
        'check',
        'Re-run every verified query and metric read-only and compare with what was recorded (exit 1 unless all are ok)',
        (sub) =>
          withDb(folderOptions(sub), 'Check every entry against this database: [ALIAS=]TARGET or a configured alias').option('update', {
            type: 'boolean',
            default: false,
            describe: 'Re-record expect of changed (and unrecorded) queries, after review',
          }),
        async (argv) => setExit(await checkCommand(argv)),
      )
      .command(
        'add',
        'Run a query read-only and save it as a verified query, with its result recorded',
        (sub) =>
          withDb(folderOptions(sub), 'The database the SQL runs on: [ALIAS=]TARGET or a configured alias')
            .option('question', { type: 'string', demandOption: true, describe: 'The question the SQL answers' })
            .option('sql', { type: 'string', demandOption: true, describe: 'The SQL (one read-only statement)' })
            .option('id', { type: 'string', describe: 'The query id, its file name (default: from the question)' })
            .option('verified-by', { type: 'string', describe: 'Who verified it (default: $QUARRY_USER or $USER)' }),
        async (argv) => setExit(await addCommand(argv)),
      )
      .command(
        'import <source> <path>',
        "Import a dbt project's knowledge: import dbt PATH (manifest.json or the project folder)",
        (sub) =>
          folderOptions(sub).positional('source', { type: 'string', demandOption: true, describe: 'dbt' }).positional('path', {
            type: 'string',
            demandOption: true,
            describe: 'manifest.json, or a dbt project folder (target/manifest.json and MetricFlow YAML)',
          }),
        async (argv) => setExit(await importCommand(argv as typeof argv & { source: string; path: string })),
      )
      .demandCommand(1, 'quarry knowledge needs a subcommand: list, check, add or import'),
  );
}
