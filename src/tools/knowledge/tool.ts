import { effects } from '../core/effects.js';
import { defineTool, toolParameters } from '../core/define.js';
import { success, type Tool } from '../core/types.js';
import { type Knowledge, metricSql } from './folder.js';
import { buildIndex, KNOWLEDGE_KINDS, type KnowledgeIndex, rank, type Ranked } from './rank.js';

/**
 * The `knowledge` tool (docs/guide/knowledge.md): the team's verified queries, metrics, glossary,
 * rules and notes, ranked for a question. It only reads the folder loaded at start-up; nothing
 * the model can call writes it (a person saves with /verify or `quarry knowledge add`).
 */

export const KNOWLEDGE_DEFAULT_LIMIT = 5;
export const KNOWLEDGE_MAX_LIMIT = 20;
/** A note is shown up to this many characters; the rest is in its file. */
const NOTE_CHARS = 1500;

const DESCRIPTION = `Search the team's knowledge folder: verified queries (question + SQL a person signed off), metrics (an aggregate that expands to SQL), \
glossary terms, rules and notes. Ranked by the words of "query" (glossary synonyms applied); each entry starts with its kind and id.
Use it before writing SQL on a subject the folder may cover: prefer a verified query or metric that fits over new SQL (adapt it if the question differs), \
and name the one you used in your answer ("query ID", "metric NAME").
kind: any (default), query, metric, term, rule or note. limit: 1-${KNOWLEDGE_MAX_LIMIT} (default ${KNOWLEDGE_DEFAULT_LIMIT}).`;

const PARAMETERS = toolParameters(
  {
    query: { type: 'string', description: 'The question or words to look for' },
    kind: { type: 'string', enum: ['any', ...KNOWLEDGE_KINDS], description: 'Only entries of this kind (default any)' },
    limit: { type: 'integer', minimum: 1, maximum: KNOWLEDGE_MAX_LIMIT, description: `How many entries (default ${KNOWLEDGE_DEFAULT_LIMIT})` },
  },
  ['query'],
);

function fence(sql: string): string {
  return `\`\`\`sql\n${sql.trim()}\n\`\`\``;
}

function list(label: string, values: readonly string[]): string {
  return values.length ? `\n${label}: ${values.join(', ')}` : '';
}

/** One entry as the model sees it: its kind and id first. */
export function formatEntry(knowledge: Knowledge, entry: Pick<Ranked, 'kind' | 'index'>): string {
  switch (entry.kind) {
    case 'query': {
      const query = knowledge.queries[entry.index]!;
      const expect = query.expect ? `, ${query.expect.rows} row${query.expect.rows === 1 ? '' : 's'} when recorded` : '';
      return (
        `query ${query.id}${query.database ? ` (database ${query.database})` : ''}: verified by ${query.verified_by} on ${query.verified_at}${expect}\n` +
        `Question: ${query.question}\n${fence(query.sql)}`
      );
    }
    case 'metric': {
      const metric = knowledge.metrics[entry.index]!;
      return (
        `metric ${metric.id}${metric.database ? ` (database ${metric.database})` : ''}: ${metric.description}\n${fence(metricSql(metric))}` +
        list('Dimensions (add to SELECT and GROUP BY)', metric.dimensions) +
        (metric.time_column ? `\nTime column: ${metric.time_column}` : '')
      );
    }
    case 'term': {
      const term = knowledge.terms[entry.index]!;
      return `term ${term.id}: ${term.definition}${list('Synonyms', term.synonyms)}${list('Tables', term.tables)}${term.sql ? `\n${fence(term.sql)}` : ''}`;
    }
    case 'rule': {
      const rule = knowledge.rules[entry.index]!;
      return `rule ${rule.id}: ${rule.rule}${list('Tables', rule.tables)}${rule.database ? `\nDatabase: ${rule.database}` : ''}`;
    }
    case 'note': {
      const note = knowledge.notes[entry.index]!;
      const cut = note.text.length > NOTE_CHARS;
      return (
        `note ${note.id}${list('Tables', note.tables)}\n${cut ? `${note.text.slice(0, NOTE_CHARS)}…` : note.text}` +
        (cut ? `\n[note cut at ${NOTE_CHARS} of ${note.text.length} characters; read ${note.file} for the rest]` : '')
      );
    }
  }
}

export function createKnowledgeTool(knowledge: Knowledge): Tool {
  let index: KnowledgeIndex | undefined = knowledge.index;
  return defineTool({
    name: 'knowledge',
    description: DESCRIPTION,
    parameters: PARAMETERS,
    readOnly: true,
    // The team's own folder, written by people and reviewed like code: trusted, like the prompt (docs/security.md).
    effects: effects({}),
    async run(args) {
      index ??= buildIndex(knowledge);
      const limit = args.limit ?? KNOWLEDGE_DEFAULT_LIMIT;
      const kind = args.kind ?? 'any';
      const found = rank(index, args.query, kind, limit);
      if (found.length === 0) {
        return success(
          `No ${kind === 'any' ? 'entry' : kind} in the knowledge folder matches "${args.query}" (${index.entries.length} entries; try other words or kind any).`,
          { entries: [] },
        );
      }
      const shown = found.map((entry) => formatEntry(knowledge, entry)).join('\n\n');
      return success(`${shown}\n\n(${found.length} best of ${index.entries.length} entries${found.length === limit ? '; raise limit for more' : ''})`, {
        entries: found.map((entry) => `${entry.kind} ${entry.id}`),
      });
    },
  });
}
