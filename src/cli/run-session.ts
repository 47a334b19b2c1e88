import { createInterface } from 'node:readline/promises';
import { Agent, type AgentOptions } from '../agent/loop.js';
import { Approver, parseApprovalAnswer, type AskApproval } from '../agent/approver.js';
import { chainToolContext, UserQuestionChannel } from '../agent/ask-user.js';
import { askPersonOnTerminal } from './ask-user-io.js';
import { automaticVariables, buildSystemPrompt, parseVarFlags, readVarsFile } from '../agent/prompts.js';
import { Session } from '../agent/session.js';
import { childAgentRunner } from '../agent/delegate.js';
import { openWorkspace, type Workspace } from '../agent/workspace.js';
import { chooseModel, createProvider, knownContextWindow, type ModelChoice } from '../model/resolve.js';
import { retryPolicyFromEnv } from '../model/retry.js';
import type { Message, ModelProvider } from '../model/types.js';
import { ModelError } from '../model/types.js';
import { EXIT_CANCELLED, exitCodeFor, UsageError } from '../errors.js';
import { createRenderer, type Renderer, type RunInfo } from './render.js';
import { checkDatabaseTargets, planRun, setupRecord } from './resume.js';
import type { RunCommandOptions } from './run.js';
import { combinePromptWithStdin, readPromptFromStdin, writeAnswerFile } from './run-io.js';
import { ENGINES } from '../tools/database/types.js';
import { knowledgePromptSection } from '../tools/knowledge/prompt.js';
import { DUCKDB_PROMPT_NOTE } from '../tools/database/drivers/duckdb-files.js';

/** Everything a run (one-shot or REPL) is built from. */
export interface RunSetup {
  options: RunCommandOptions;
  workspace: Workspace;
  provider: ModelProvider;
  system: string;
  contextWindow: number;
  approver: Approver;
  /** Who answers ask_user: the terminal in a one-shot run, the REPL's prompt once it runs, else no one. */
  questions: UserQuestionChannel;
  renderer: Renderer;
  makeAgent(session: Session, messages: Message[]): Agent;
  info(session: Session): RunInfo;
}

/** Model configuration mistakes are usage errors (exit 2). */
async function modelConfig<T>(build: () => T | Promise<T>): Promise<T> {
  try {
    return await build();
  } catch (error) {
    if (error instanceof ModelError) throw new UsageError(error.message);
    throw error;
  }
}

/** Database lines for the prompt's {{databases}}; the database tools describe themselves to the model. */
function describeDatabases(workspace: Workspace): string[] {
  const tools = workspace.registry.names().filter((name) => (ENGINES as readonly string[]).includes(name));
  const lines = tools.length ? [`reachable with the ${tools.join(', ')} tool${tools.length > 1 ? 's' : ''} (list_tables shows what each holds)`] : [];
  if (tools.includes('duckdb')) lines.push(DUCKDB_PROMPT_NOTE);
  return lines;
}

/** On a terminal: one question, answered y / n / a. Cancelling the run cancels the question. */
export const askOnTerminal: AskApproval = async (question, signal) => {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  // On a terminal, readline takes Ctrl+C for itself: pass it on, so it cancels the run.
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  try {
    for (;;) {
      const answer = parseApprovalAnswer(await rl.question(question, { signal }));
      if (answer) return answer;
    }
  } finally {
    rl.close();
  }
};

export async function runAgentCommand(options: RunCommandOptions): Promise<number> {
  const cwd = process.cwd();
  // Taken first: of two processes resuming one session, one gets it and the other stops here (exit 2).
  const resumed = options.resume ? Session.open(options.resume, process.env, { lock: true }) : undefined;
  let session: Session | undefined = resumed;
  try {
    const plan = planRun(options, resumed, cwd);
    const choice: ModelChoice = await modelConfig(() => chooseModel(plan.model));
    const workingDir = options.workingDir ?? resumed?.info.working_dir;
    const workspace = await openWorkspace({
      profile: plan.profile,
      ...(workingDir ? { workingDir } : {}),
      ...(plan.configFile ? { configFile: plan.configFile } : {}),
      ...(options.knowledge ? { knowledge: options.knowledge } : {}),
      databases: plan.databases,
    });
    try {
      if (resumed && plan.expectTargets) checkDatabaseTargets(resumed.id, plan.expectTargets, workspace);
      if (plan.note) process.stderr.write(`${plan.note}\n`);
      const provider = await modelConfig(() => createProvider(choice, cwd));
      const vars = { ...(plan.prompt.varsFile ? readVarsFile(plan.prompt.varsFile) : {}), ...parseVarFlags(plan.prompt.vars) };
      const built = buildSystemPrompt({
        ...(plan.prompt.systemPrompt ? { file: plan.prompt.systemPrompt } : {}),
        vars,
        automatic: automaticVariables({ profile: workspace.profile, workingDir: workspace.workingDir, databases: describeDatabases(workspace) }),
        cwd,
      });
      if (workspace.knowledge) built.system += knowledgePromptSection(workspace.knowledge);
      let prompt = options.prompt.join(' ').trim();
      const interactive = !prompt && Boolean(process.stdin.isTTY);
      if (!interactive) {
        prompt = combinePromptWithStdin(prompt, process.stdin.isTTY ? '' : readPromptFromStdin()) || built.initialPrompt || '';
        if (!prompt) throw new UsageError('no prompt: give the question as arguments or on stdin, or run quarry in a terminal for the interactive REPL');
      }
      const canAsk = Boolean(process.stdin.isTTY && process.stderr.isTTY);
      const approver = new Approver({
        autoApprove: options.yes,
        allowOutward: options.allowOutward,
        ...(canAsk && !interactive ? { ask: askOnTerminal } : {}),
      });
      const questions = new UserQuestionChannel(canAsk && !interactive ? askPersonOnTerminal : undefined);
      // The REPL on a terminal renders the answer's Markdown and shows a live line while tools run.
      const terminal = interactive && process.stdout.isTTY && process.stderr.isTTY ? { markdown: true, liveToolLine: true } : {};
      const renderer = createRenderer(options.format, options.color && Boolean(process.stderr.isTTY), terminal);
      const contextWindow = options.contextWindow ?? knownContextWindow(choice.model);
      const setup: RunSetup = {
        options,
        workspace,
        provider,
        system: built.system,
        contextWindow,
        approver,
        questions,
        renderer,
        makeAgent: (session, messages) => {
          const agentOptions: AgentOptions = {
            provider,
            system: built.system,
            workspace,
            session,
            approver,
            contextWindow,
            messages,
            maxTurns: options.maxTurns,
            retryPolicy: retryPolicyFromEnv(),
            ...(options.reasoningEffort ? { reasoningEffort: options.reasoningEffort } : {}),
            onEvent: (event) => renderer.event(event),
          };
          // delegate: each tool call can run a child agent that shares all of this.
          agentOptions.extendToolContext = chainToolContext(childAgentRunner(agentOptions), (context, conversation) => questions.extend(context, conversation));
          return new Agent(agentOptions);
        },
        info: (session) => ({ sessionId: session.id, model: provider.label, scripted: provider.scripted, profile: workspace.profile.name }),
      };
      const record = setupRecord(plan, workspace, cwd);
      if (resumed) resumed.update({ profile: workspace.profile.name, model: provider.label, ...record });
      else session = Session.create({ profile: workspace.profile.name, model: provider.label, workingDir: workspace.workingDir, ...record });
      const messages = resumed ? resumed.conversation() : [];
      if (interactive) {
        const { runRepl } = await import('./repl.js');
        return await runRepl(setup, session as Session, messages, built.initialPrompt);
      }
      return await runOneShot(setup, session as Session, messages, prompt);
    } finally {
      await workspace.close();
    }
  } finally {
    session?.close();
  }
}

async function runOneShot(setup: RunSetup, session: Session, messages: Message[], prompt: string): Promise<number> {
  const { renderer, options } = setup;
  const agent = setup.makeAgent(session, messages);
  const info = setup.info(session);
  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      renderer.note('quarry: cancelling (Ctrl+C again to quit at once)');
      controller.abort();
    } else process.exit(EXIT_CANCELLED);
  };
  process.on('SIGINT', onSigint);
  try {
    renderer.start(info);
    const result = await agent.run(prompt, controller.signal);
    renderer.finish(result, info);
    if (options.output && result.status === 'completed') writeAnswerFile(options.output, result.text);
    return exitCodeFor(result.status);
  } finally {
    process.off('SIGINT', onSigint);
  }
}
