import type { Knowledge } from './folder.js';

/**
 * What every run's system prompt says about the knowledge folder (docs/guide/knowledge.md): every
 * rule whole, then a short index of the rest within a budget of characters (about 4 to a
 * token), so a folder of thousands of verified queries costs the prompt a few hundred tokens.
 */

export const KNOWLEDGE_INDEX_BUDGET_CHARS = 2000;

function names(label: string, ids: readonly string[], budget: number): string {
  if (ids.length === 0) return '';
  let line = `- ${ids.length} ${label}:`;
  let shown = 0;
  for (const id of ids) {
    if (line.length + id.length + 2 > budget) break;
    line += `${shown ? ',' : ''} ${id}`;
    shown++;
  }
  return shown < ids.length ? `${line}${shown ? ',' : ''} and ${ids.length - shown} more` : line;
}

export function knowledgePromptSection(knowledge: Knowledge, budget = KNOWLEDGE_INDEX_BUDGET_CHARS): string {
  const parts = [`\nTeam knowledge (a folder people on the team wrote and reviewed: ${knowledge.dir}):`];
  if (knowledge.rules.length) {
    parts.push('Rules (always follow them):');
    for (const rule of knowledge.rules) {
      const scope = [rule.tables.length ? `tables ${rule.tables.join(', ')}` : '', rule.database ? `database ${rule.database}` : ''].filter(Boolean).join('; ');
      parts.push(`- ${rule.rule.trim()}${scope ? ` (${scope})` : ''}`);
    }
  }
  const share = Math.floor(budget / 4);
  const groups: Array<[string, readonly { id: string }[]]> = [
    ['metrics', knowledge.metrics],
    ['glossary terms', knowledge.terms],
    ['verified queries', knowledge.queries],
    ['notes', knowledge.notes],
  ];
  const index = groups
    .map(([label, entries]) =>
      names(
        label,
        entries.map((entry) => entry.id),
        share,
      ),
    )
    .filter(Boolean);
  if (index.length) {
    parts.push('Also in the folder (search it with the knowledge tool before writing SQL on these subjects):', ...index);
    parts.push(
      'Prefer a verified query or metric that fits the question over new SQL, and name it in your answer ("verified query ID", "metric NAME"); ' +
        'say so when you adapted it.',
    );
  }
  return `${parts.join('\n')}\n`;
}
