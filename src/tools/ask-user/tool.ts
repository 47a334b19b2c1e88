import { effects } from '../core/effects.js';
import { defineTool, toolParameters } from '../core/define.js';
import { success, type Tool } from '../core/types.js';

/**
 * `ask_user` (docs/guide/tools.md "ask_user"): the model asks the person a clarifying question when the
 * request can be read in ways that give different answers. Who answers is the caller's: the REPL
 * and a one-shot run on a terminal ask the person, `quarry eval` answers from the question's
 * `clarifications:`. With no one to ask, or once the profile's ask_user_budget questions of the
 * run are spent, the answer tells the model to state its assumption and go on, so a run never waits.
 */

export const NO_ONE_TO_ASK = 'no one can be asked: state the assumption you make';

const MAX_OPTIONS = 10;

const PARAMETERS = toolParameters(
  {
    question: { type: 'string', minLength: 1, maxLength: 1000, description: 'The question, short and concrete, naming the readings it chooses between' },
    options: {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: 200 },
      maxItems: MAX_OPTIONS,
      description: `Up to ${MAX_OPTIONS} answers to choose from (the person may still answer in their own words)`,
    },
  },
  ['question'],
);

export interface AskUserToolOptions {
  /** Questions per run (the profile's ask_user_budget). */
  budget: number;
}

export function createAskUserTool(options: AskUserToolOptions): Tool {
  return defineTool({
    name: 'ask_user',
    description:
      'Ask the user one clarifying question, and get their answer. Only when the request can be read in more than one way AND the readings would ' +
      'give different answers (which customers count as "active", a fiscal or a calendar quarter); otherwise pick the likeliest reading, state the ' +
      `assumption in the answer and go on. Give the readings as options when there are few. At most ${options.budget} question` +
      `${options.budget === 1 ? '' : 's'} per request; when no one can answer, the result says so: then state the assumption you make.`,
    parameters: PARAMETERS,
    readOnly: true,
    // The answer is the user's own words: trusted, like the prompt (docs/security.md).
    effects: effects({ asksPerson: true }),
    async run(args, context) {
      const asker = context.askUser;
      if (!asker) return success(NO_ONE_TO_ASK, { asked: false, reason: 'no_one' });
      const asked = asker.count();
      if (asked > options.budget)
        return success(`${NO_ONE_TO_ASK} (the ${options.budget} question${options.budget === 1 ? '' : 's'} allowed per request are used up)`, {
          asked: false,
          reason: 'budget',
        });
      const answer = await asker.ask(args.question, args.options ?? [], context.signal);
      if (answer === null || answer.trim() === '') return success(`${NO_ONE_TO_ASK} (no answer was given)`, { asked: true, answered: false });
      return success(`The user answered: ${answer.trim()}`, { asked: true, answered: true });
    },
  });
}
