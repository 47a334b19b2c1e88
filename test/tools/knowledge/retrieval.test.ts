import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadKnowledge } from '../../../src/tools/knowledge/folder.js';
import { buildIndex, rank } from '../../../src/tools/knowledge/rank.js';
import { REPO_ROOT } from '../../support/cli.js';

/**
 * Retrieval over the sample knowledge folder (fixtures/knowledge): questions worded unlike the
 * verified queries' own, ranked among every kind of entry. hit@1 and recall@5 are printed and
 * must stay at or above what they were when the folder was written.
 */
describe('knowledge ranking over the sample folder', () => {
  const knowledge = loadKnowledge(join(REPO_ROOT, 'fixtures', 'knowledge'));
  const index = buildIndex(knowledge);
  const { questions } = JSON.parse(readFileSync(join(__dirname, 'retrieval-questions.json'), 'utf8')) as {
    questions: Array<{ question: string; expected: string }>;
  };

  it('finds the verified query for differently worded questions (hit@1, recall@5)', () => {
    let hits = 0;
    let recalled = 0;
    const misses: string[] = [];
    for (const { question, expected } of questions) {
      const found = rank(index, question, 'query', 5).map((entry) => entry.id);
      if (found[0] === expected) hits++;
      else misses.push(`${question} -> ${found.slice(0, 3).join(', ')} (expected ${expected})`);
      if (found.includes(expected)) recalled++;
    }
    const hitAt1 = hits / questions.length;
    const recallAt5 = recalled / questions.length;
    console.log(`knowledge retrieval: ${questions.length} questions, hit@1 ${hitAt1.toFixed(2)}, recall@5 ${recallAt5.toFixed(2)}\n${misses.join('\n')}`);
    expect(hitAt1).toBeGreaterThanOrEqual(0.8);
    expect(recallAt5).toBeGreaterThanOrEqual(0.95);
  });
});
