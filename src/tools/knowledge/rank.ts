import type { GlossaryTerm, Knowledge } from './folder.js';

/**
 * Lexical, local ranking of a knowledge folder's entries (docs/guide/knowledge.md): Okapi BM25
 * over each entry's words (a verified query's question and the table and column names of its
 * SQL; a term with its synonyms; a metric's name, description, table and dimensions; rule and
 * note text), with the glossary's synonyms applied to the query: a query that says "turnover"
 * also searches the term it is a synonym of. No network, no model.
 */

export const KNOWLEDGE_KINDS = ['query', 'metric', 'term', 'rule', 'note'] as const;
export type KnowledgeKind = (typeof KNOWLEDGE_KINDS)[number];

export interface Entry {
  kind: KnowledgeKind;
  id: string;
  /** Index into the folder's list of that kind. */
  index: number;
}

interface IndexedEntry extends Entry {
  counts: Map<string, number>;
  length: number;
}

export interface KnowledgeIndex {
  entries: IndexedEntry[];
  /** Number of entries each word occurs in. */
  frequency: Map<string, number>;
  averageLength: number;
  /** Synonym phrases (as word lists) → the words of the term they stand for. */
  synonyms: Array<{ phrase: string[]; expansion: string[] }>;
}

const STOP_WORDS = new Set(
  'a an and are as at be by did do does for from had has have how i in is it its me of on or our per show that the their them there these this to us was we were what when where which who why will with you your give list tell find get each every many much per by all any some do'.split(
    ' ',
  ),
);

/** A word's stem: lower case, the common English plural and verb endings taken off. */
function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('es') && /(ses|xes|ches|shes)$/.test(word)) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** The words of a text: identifiers split at _ and camelCase as well as kept whole; stop words dropped. */
export function words(text: string): string[] {
  const found: string[] = [];
  for (const raw of text.split(/[^A-Za-z0-9_]+/)) {
    if (!raw) continue;
    // Most words are plain lower case: no identifier to split.
    if (/^[a-z0-9]+$/.test(raw)) {
      if (!STOP_WORDS.has(raw)) found.push(stem(raw));
      continue;
    }
    const parts = raw
      .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
      .toLowerCase()
      .split('_')
      .filter(Boolean);
    if (parts.length > 1) found.push(raw.toLowerCase());
    for (const part of parts) if (!STOP_WORDS.has(part)) found.push(stem(part));
  }
  return found;
}

/** The words of an SQL statement that name things (tables, columns), keywords left out. */
const SQL_KEYWORDS = new Set(
  'select from where and or not group by order having limit offset join left right inner outer full cross on as case when then else end in is null between like distinct union all sum count avg min max cast date coalesce desc asc with over partition round strftime extract year month day true false interval'.split(
    ' ',
  ),
);

function sqlNames(sql: string): string {
  return sql
    .replace(/'(?:[^']|'')*'/g, ' ')
    .split(/[^A-Za-z0-9_]+/)
    .filter((word) => word && !SQL_KEYWORDS.has(word.toLowerCase()) && !/^\d/.test(word))
    .join(' ');
}

/** The text an entry is found by; the first part (name, question) counts twice. */
function entryText(knowledge: Knowledge, kind: KnowledgeKind, index: number): [string, string] {
  switch (kind) {
    case 'query': {
      const query = knowledge.queries[index]!;
      return [`${query.question} ${query.id}`, sqlNames(query.sql)];
    }
    case 'metric': {
      const metric = knowledge.metrics[index]!;
      return [`${metric.id} ${metric.description}`, `${metric.table} ${metric.dimensions.join(' ')} ${metric.time_column ?? ''} ${sqlNames(metric.sql)}`];
    }
    case 'term': {
      const term = knowledge.terms[index]!;
      return [`${term.id} ${term.synonyms.join(' ')}`, `${term.definition} ${term.tables.join(' ')} ${sqlNames(term.sql ?? '')}`];
    }
    case 'rule': {
      const rule = knowledge.rules[index]!;
      return [rule.rule, rule.tables.join(' ')];
    }
    case 'note': {
      const note = knowledge.notes[index]!;
      return [`${note.id} ${note.tables.join(' ')}`, note.text];
    }
  }
}

function lists(knowledge: Knowledge): Array<[KnowledgeKind, { id: string }[]]> {
  return [
    ['query', knowledge.queries],
    ['metric', knowledge.metrics],
    ['term', knowledge.terms],
    ['rule', knowledge.rules],
    ['note', knowledge.notes],
  ];
}

function synonymsOf(terms: readonly GlossaryTerm[]): KnowledgeIndex['synonyms'] {
  return terms.flatMap((term) => {
    const expansion = words(term.id);
    return term.synonyms.map((synonym) => ({ phrase: words(synonym), expansion })).filter((entry) => entry.phrase.length > 0);
  });
}

export function buildIndex(knowledge: Knowledge): KnowledgeIndex {
  const entries: IndexedEntry[] = [];
  const frequency = new Map<string, number>();
  let total = 0;
  for (const [kind, list] of lists(knowledge)) {
    list.forEach((item, index) => {
      const [main, rest] = entryText(knowledge, kind, index);
      const counts = new Map<string, number>();
      const mainWords = words(main);
      for (const word of [...mainWords, ...mainWords, ...words(rest)]) counts.set(word, (counts.get(word) ?? 0) + 1);
      let length = 0;
      for (const [word, count] of counts) {
        length += count;
        frequency.set(word, (frequency.get(word) ?? 0) + 1);
      }
      total += length;
      entries.push({ kind, id: item.id, index, counts, length });
    });
  }
  return { entries, frequency, averageLength: entries.length ? total / entries.length : 1, synonyms: synonymsOf(knowledge.terms) };
}

/** The query's words with the glossary's synonyms applied (a synonym phrase found adds its term's words). */
export function queryWords(index: KnowledgeIndex, query: string): string[] {
  const found = words(query);
  const expanded = [...found];
  for (const { phrase, expansion } of index.synonyms) {
    const at = found.findIndex((_, start) => phrase.every((word, offset) => found[start + offset] === word));
    if (at >= 0) expanded.push(...expansion);
  }
  return expanded;
}

const K1 = 1.2;
const B = 0.75;

export interface Ranked extends Entry {
  score: number;
}

/** Entries of `kind` (or any) best first; only those sharing a word with the query. */
export function rank(index: KnowledgeIndex, query: string, kind: KnowledgeKind | 'any', limit: number): Ranked[] {
  const terms = [...new Set(queryWords(index, query))];
  const count = index.entries.length;
  const idf = new Map(terms.map((term) => [term, Math.log(1 + (count - (index.frequency.get(term) ?? 0) + 0.5) / ((index.frequency.get(term) ?? 0) + 0.5))]));
  const ranked: Ranked[] = [];
  for (const entry of index.entries) {
    if (kind !== 'any' && entry.kind !== kind) continue;
    let score = 0;
    for (const term of terms) {
      const tf = entry.counts.get(term);
      if (!tf) continue;
      score += idf.get(term)! * ((tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * entry.length) / index.averageLength)));
    }
    if (score > 0) ranked.push({ kind: entry.kind, id: entry.id, index: entry.index, score });
  }
  return ranked.sort((a, b) => b.score - a.score || a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id)).slice(0, limit);
}
