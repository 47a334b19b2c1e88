import { createInterface, type Interface } from 'node:readline';
import { answerFrom, questionText, type AskPerson } from '../agent/ask-user.js';

/** ask_user's questions to the person (docs/guide/tools.md "ask_user"): on the terminal of a one-shot run, and at the REPL's prompt. */

/** One-shot run with a terminal: the question on stderr, the answer read from stdin. Cancelling the run cancels the question. */
export const askPersonOnTerminal: AskPerson = (question, options, signal) => {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  // On a terminal, readline takes Ctrl+C for itself: pass it on, so it cancels the run.
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  return askWith(rl, question, options, signal).finally(() => rl.close());
};

/** The REPL: the question at its own readline prompt. */
export function askPersonAtRepl(rl: Interface): AskPerson {
  return (question, options, signal) => askWith(rl, question, options, signal);
}

function askWith(rl: Interface, question: string, options: readonly string[], signal: AbortSignal): Promise<string | null> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(null);
    signal.addEventListener('abort', () => resolve(null), { once: true });
    rl.question(`\n${questionText(question, options)}`, { signal }, (text) => resolve(answerFrom(text, options)));
  });
}
