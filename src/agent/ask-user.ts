import type { Message } from '../model/types.js';
import type { ToolContext, UserQuestions } from '../tools/core/types.js';

/**
 * Who answers ask_user (docs/guide/tools.md "ask_user"): the caller supplies a function that puts one question
 * to someone (the REPL's prompt, the terminal of a one-shot run, an eval question's
 * clarifications); this adds it to each tool call's context, one question at a time, and counts
 * the questions of each run (a run starts at the conversation's latest user message), so the tool
 * can hold to the profile's budget. With no function, calls get no channel: no one can be asked.
 */

export type AskPerson = (question: string, options: readonly string[], signal: AbortSignal) => Promise<string | null>;

export class UserQuestionChannel {
  private asked = 0;
  private runMarker: Message | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private person: AskPerson | undefined) {}

  /** The REPL sets its own prompt once it has one. */
  setPerson(person: AskPerson | undefined): void {
    this.person = person;
  }

  /** Questions put (or refused) in the current run. */
  get askedThisRun(): number {
    return this.asked;
  }

  /** For AgentOptions.extendToolContext: adds the channel (when someone can answer) to a call's context. */
  extend(context: ToolContext, conversation: readonly Message[]): ToolContext {
    const marker = conversation.findLast((message) => message.role === 'user');
    if (marker !== this.runMarker) {
      this.runMarker = marker;
      this.asked = 0;
    }
    const person = this.person;
    if (!person) return context;
    const questions: UserQuestions = {
      count: () => ++this.asked,
      ask: (question, options, signal) => {
        const next = this.queue.then(() => (signal.aborted ? null : person(question, options, signal)));
        this.queue = next.catch(() => undefined);
        return next.catch(() => null);
      },
    };
    return { ...context, askUser: questions };
  }
}

/** Chains two context extensions (delegate's child runner, then the question channel). */
export function chainToolContext(
  first: ((context: ToolContext, conversation: readonly Message[], untrusted: readonly string[]) => ToolContext) | undefined,
  second: (context: ToolContext, conversation: readonly Message[]) => ToolContext,
): (context: ToolContext, conversation: readonly Message[], untrusted: readonly string[]) => ToolContext {
  return (context, conversation, untrusted) => second(first ? first(context, conversation, untrusted) : context, conversation);
}

/** The question as shown to a person: the question, then the options numbered. */
export function questionText(question: string, options: readonly string[]): string {
  const lines = [`Question from the agent: ${question}`, ...options.map((option, i) => `  ${i + 1}. ${option}`)];
  lines.push(options.length ? `Answer (a number, or your own words; empty to let it assume): ` : 'Answer (empty to let it assume): ');
  return lines.join('\n');
}

/** A typed answer: an option's number stands for the option. */
export function answerFrom(text: string, options: readonly string[]): string {
  const trimmed = text.trim();
  const n = /^\d+$/.test(trimmed) ? Number(trimmed) : 0;
  return n >= 1 && n <= options.length ? options[n - 1]! : trimmed;
}
