import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { quarryHome } from '../../config/home.js';
import { nodeCrypto } from '../../node-crypto.js';
import { type Knowledge, loadKnowledge } from './folder.js';
import { buildIndex, type KnowledgeIndex } from './rank.js';

/**
 * A knowledge folder as every run loads it: read, checked and indexed once, then kept in
 * `$QUARRY_HOME/cache/knowledge/` until a file of the folder changes (docs/guide/knowledge.md).
 * A folder of 2,000 verified queries takes seconds to parse as YAML and index, and every run and
 * `quarry tool` call needs it; the cache is used only while every file's name, size, inode and
 * modification and change times are what they were when it was written (as git's index trusts
 * a file's stat), and anything wrong with it means a full load.
 */

const CACHE_VERSION = 1;

/** One line per file of the folder, in name order: what the cache is valid for. */
function fingerprint(dir: string): string {
  const lines: string[] = [];
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const stats = statSync(path);
        lines.push(`${relative(dir, path)}\0${stats.size}\0${stats.ino}\0${stats.mtimeMs}\0${stats.ctimeMs}`);
      }
    }
  };
  walk(dir);
  return lines.join('\n');
}

interface CacheFile {
  version: number;
  dir: string;
  fingerprint: string;
  knowledge: Knowledge;
  /** Each entry's word counts as one string, "word count word count ...": far quicker to read back than JSON arrays. */
  index: {
    entries: Array<Omit<KnowledgeIndex['entries'][number], 'counts'> & { counts: string }>;
    averageLength: number;
    synonyms: KnowledgeIndex['synonyms'];
  };
}

function cachePath(dir: string, env: NodeJS.ProcessEnv): string {
  return join(quarryHome(env), 'cache', 'knowledge', `${nodeCrypto().createHash('sha256').update(dir).digest('hex').slice(0, 32)}.json`);
}

function fromCache(cached: CacheFile): Knowledge {
  const frequency = new Map<string, number>();
  const entries = cached.index.entries.map((entry) => {
    const parts = entry.counts.split(' ');
    const counts = new Map<string, number>();
    for (let i = 0; i + 1 < parts.length; i += 2) {
      counts.set(parts[i]!, Number(parts[i + 1]));
      frequency.set(parts[i]!, (frequency.get(parts[i]!) ?? 0) + 1);
    }
    return { ...entry, counts };
  });
  return { ...cached.knowledge, index: { entries, frequency, averageLength: cached.index.averageLength, synonyms: cached.index.synonyms } };
}

/** The folder with its index, from the cache when it is still valid. */
export function loadKnowledgeCached(dir: string, env: NodeJS.ProcessEnv = process.env): Knowledge {
  let print: string;
  try {
    print = fingerprint(dir);
  } catch {
    // Not a readable folder: the plain load says why.
    return loadKnowledge(dir);
  }
  const path = cachePath(dir, env);
  try {
    const cached = JSON.parse(readFileSync(path, 'utf8')) as CacheFile;
    if (cached.version === CACHE_VERSION && cached.dir === dir && cached.fingerprint === print) return fromCache(cached);
  } catch {
    // No cache yet, or one that does not read: load the folder.
  }
  const knowledge = loadKnowledge(dir);
  const index = buildIndex(knowledge);
  const file: CacheFile = {
    version: CACHE_VERSION,
    dir,
    fingerprint: print,
    knowledge,
    index: {
      entries: index.entries.map((entry) => ({ ...entry, counts: [...entry.counts].map(([word, count]) => `${word} ${count}`).join(' ') })),
      averageLength: index.averageLength,
      synonyms: index.synonyms,
    },
  };
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(temporary, JSON.stringify(file));
    renameSync(temporary, path);
  } catch {
    // A cache that cannot be written costs only time.
    rmSync(temporary, { force: true });
  }
  return { ...knowledge, index };
}
