import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';

/** Where a run's prompt comes from and where its answer goes (`quarry [PROMPT]`, `-o FILE`): used by run-session.ts. */

/**
 * Piped input. With a prompt as well, the prompt comes first and the piped text follows after a
 * blank line (`head data.csv | quarry "summarise this csv"`); without one, the piped text is the
 * prompt. Read only when stdin is not a terminal.
 */
export function combinePromptWithStdin(prompt: string, piped: string): string {
  if (!piped) return prompt;
  return prompt ? `${prompt}\n\n${piped}` : piped;
}

/** The prompt: the arguments, else stdin when it is not a terminal. */
export function readPromptFromStdin(): string {
  try {
    return readFileSync(0, 'utf8').trim();
  } catch {
    return '';
  }
}

export function writeAnswerFile(path: string, text: string): void {
  try {
    writeFileSync(resolve(path), text.endsWith('\n') || text === '' ? text : `${text}\n`);
  } catch (error) {
    throw new UsageError(`--output ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'the folder does not exist' : (error as Error).message}`);
  }
}
