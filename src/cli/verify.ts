import { join } from 'node:path';
import type { Workspace } from '../agent/workspace.js';
import type { Message } from '../model/types.js';
import { ENGINES } from '../tools/database/types.js';
import type { DatabaseConfig } from '../tools/database/types.js';
import { DEFAULT_KNOWLEDGE_DIR } from '../tools/knowledge/folder.js';
import { saveVerifiedQuery } from '../tools/knowledge/save.js';

/**
 * The REPL's `/verify` (docs/guide/knowledge.md): the last question and the SQL its answer rests
 * on (the last database query of that turn that succeeded), shown to the person, and saved as a
 * verified query only after they answer y. The model never saves anything.
 */

export interface VerifyCandidate {
  question: string;
  sql: string;
  config: DatabaseConfig;
}

/** The last user question and the last successful query or export of its turn, or why there is none. */
export function verifyCandidate(messages: readonly Message[], workspace: Workspace): VerifyCandidate | string {
  const start = messages.findLastIndex((message) => message.role === 'user');
  if (start < 0) return 'nothing to verify yet: ask a question first';
  const question = (messages[start] as { content: unknown }).content;
  const failed = new Set(messages.slice(start).flatMap((message) => (message.role === 'tool' && message.isError ? [message.toolCallId] : [])));
  let found: { engine: string; sql: string; database?: string } | undefined;
  for (const message of messages.slice(start)) {
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls ?? []) {
      if (!(ENGINES as readonly string[]).includes(call.name) || failed.has(call.id)) continue;
      let args: Record<string, unknown>;
      try {
        args = JSON.parse(call.arguments) as Record<string, unknown>;
      } catch {
        continue;
      }
      if ((args.operation === 'query' || args.operation === 'export_query') && typeof args.sql === 'string')
        found = { engine: call.name, sql: args.sql, ...(typeof args.database === 'string' ? { database: args.database } : {}) };
    }
  }
  if (typeof question !== 'string' || !question.trim()) return 'nothing to verify: the last message is not a typed question';
  if (!found) return 'nothing to verify: the last answer ran no database query';
  const { engine, database } = found;
  const configs = workspace.databases.filter((config) => config.engine === engine && (database === undefined || config.alias === database));
  if (configs.length !== 1) return `nothing to verify: cannot tell which ${engine} database the query ran on`;
  return { question: question.trim(), sql: found.sql, config: configs[0]! };
}

/** Where /verify saves: the folder in use, else .quarry/knowledge/ under the working directory. */
export function verifyFolder(workspace: Workspace): string {
  return workspace.knowledge?.dir ?? join(workspace.workingDir, DEFAULT_KNOWLEDGE_DIR);
}

export function describeCandidate(candidate: VerifyCandidate, folder: string): string {
  return (
    `Question: ${candidate.question}\nSQL (${candidate.config.engine}, database ${candidate.config.alias}):\n${candidate.sql.trim()}\n` +
    `Save it as a verified query in ${join(folder, 'queries')}/? (y/n) `
  );
}

/** `/verify`: shows the candidate, asks y/n, saves only on y (docs/guide/knowledge.md). */
export async function verifyInRepl(
  messages: readonly Message[],
  workspace: Workspace,
  ask: (question: string) => Promise<string>,
  note: (text: string) => void,
): Promise<void> {
  const candidate = verifyCandidate(messages, workspace);
  if (typeof candidate === 'string') {
    note(candidate);
    return;
  }
  const folder = verifyFolder(workspace);
  for (;;) {
    const answer = (await ask(describeCandidate(candidate, folder))).trim().toLowerCase();
    if (answer === 'n' || answer === 'no') {
      note('not saved');
      return;
    }
    if (answer === 'y' || answer === 'yes') break;
  }
  try {
    const saved = await saveVerifiedQuery(folder, {
      question: candidate.question,
      sql: candidate.sql,
      config: candidate.config,
      database: candidate.config.alias,
    });
    note(`saved query ${saved.id}: ${saved.file} (${saved.rows} row${saved.rows === 1 ? '' : 's'} recorded)`);
  } catch (error) {
    note(`not saved: ${(error as Error).message}`);
  }
}
