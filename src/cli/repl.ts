import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { askPersonAtRepl } from './ask-user-io.js';
import { parseApprovalAnswer, type ApprovalAnswer } from '../agent/approver.js';
import { NOTHING_TO_COMPACT } from '../agent/loop.js';
import { listSessionIds, readSessionMeta, Session } from '../agent/session.js';
import { checkResumableUnder } from './resume.js';
import { quarryHome } from '../config/home.js';
import type { Message } from '../model/types.js';
import type { RunSetup } from './run-session.js';
import { exitCodeFor } from '../errors.js';
import { EXIT_OK, UsageError } from '../errors.js';

/**
 * The interactive REPL (docs/guide/running.md): line editing and history, slash commands, Ctrl+C cancels the
 * running turn, a second Ctrl+C at the prompt (or Ctrl+D) exits.
 */

const HISTORY_LINES = 1000;

export const REPL_HELP = `Commands:
  /help             this list
  /profile          the profile in use and what it allows
  /tools [NAME]     the tools the model can call, one line each; /tools NAME for one in full
  /compact          summarise older turns now to free context
  /resume [ID]      continue another session (default: the latest other than this one)
  /clear            start a fresh conversation in this session
  /report [FILE]    write this session as an HTML page (default: report.html in the session directory)
  /approve          approve every tool call for the rest of this session
  /verify           save the last question and the SQL of its answer as a verified query (asks y/n)
  /exit             leave (Ctrl+D does the same)
Ctrl+C cancels the running turn; Ctrl+C twice at the prompt exits; Ctrl+D during a turn cancels
it and exits. Lines typed while a turn runs are queued and run after it, in order.`;

/** The most recently updated session other than `current` (what /resume without an ID opens). */
function latestOtherSession(current: string): string {
  const newest = listSessionIds()
    .filter((id) => id !== current)
    .map((id) => ({ id, updated: readSessionMeta(id)?.updated_at ?? '' }))
    .sort((a, b) => (a.updated === b.updated ? a.id.localeCompare(b.id) : a.updated.localeCompare(b.updated)))
    .pop();
  if (!newest) throw new UsageError('no other session to resume (this one is the only one); quarry sessions lists them');
  return newest.id;
}

/** One line per tool: its name and the first sentence of its description, cut to the terminal's width. */
export function toolLines(tools: readonly { name: string; readOnly: boolean; description: string }[], width: number): string[] {
  return tools.map((tool) => {
    const head = `  ${tool.name}${tool.readOnly ? ' (read-only)' : ''}: `;
    const first = tool.description.split('\n')[0]!.split(/(?<=\.)\s/)[0]!;
    const room = Math.max(20, width - head.length);
    return head + (first.length > room ? `${first.slice(0, room - 3)}...` : first);
  });
}

function historyPath(): string {
  return join(quarryHome(), 'repl_history');
}

function loadHistory(): string[] {
  try {
    return readFileSync(historyPath(), 'utf8').split('\n').filter(Boolean).reverse().slice(0, HISTORY_LINES);
  } catch {
    return [];
  }
}

function saveHistory(lines: readonly string[]): void {
  try {
    mkdirSync(dirname(historyPath()), { recursive: true });
    writeFileSync(historyPath(), `${[...lines].slice(0, HISTORY_LINES).reverse().join('\n')}\n`);
  } catch {
    // History is a convenience; never fail the session over it.
  }
}

function askWith(rl: Interface) {
  return (question: string, signal: AbortSignal): Promise<ApprovalAnswer> =>
    new Promise((resolve, reject) => {
      const ask = () =>
        rl.question(question, { signal }, (text) => {
          const answer = parseApprovalAnswer(text);
          if (answer) resolve(answer);
          else ask();
        });
      signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
      ask();
    });
}

export async function runRepl(setup: RunSetup, firstSession: Session, messages: Message[], initialPrompt: string | undefined): Promise<number> {
  const { renderer, workspace, approver } = setup;
  let session = firstSession;
  let agent = setup.makeAgent(session, messages);
  const rl = createInterface({
    input: process.stdin,
    output: process.stdout,
    terminal: true,
    history: loadHistory(),
    historySize: HISTORY_LINES,
    prompt: 'quarry> ',
  });
  // The live tool line must not draw over a question to the person (approval or ask_user).
  const pausingLive =
    <A extends unknown[], R>(ask: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      renderer.pauseLive?.(true);
      try {
        return await ask(...args);
      } finally {
        renderer.pauseLive?.(false);
      }
    };
  approver.setAsk(pausingLive(askWith(rl)));
  setup.questions.setPerson(pausingLive(askPersonAtRepl(rl)));
  let running: AbortController | null = null;
  let exitArmed = false;
  renderer.note(
    `quarry · ${setup.provider.label} · profile ${workspace.profile.name} · session ` +
      `${session.id}${messages.length ? ` (resumed, ${messages.length} messages)` : ''}\n/help for commands, Ctrl+D to exit.`,
  );

  const runPrompt = async (prompt: string) => {
    running = new AbortController();
    try {
      const info = setup.info(session);
      renderer.start(info);
      const result = await agent.run(prompt, running.signal);
      renderer.finish(result, info);
      return exitCodeFor(result.status);
    } finally {
      running = null;
    }
  };

  const command = async (line: string): Promise<boolean> => {
    const [name, ...rest] = line.slice(1).trim().split(/\s+/);
    const arg = rest.join(' ');
    switch (name) {
      case 'help':
        renderer.note(REPL_HELP);
        return true;
      case 'profile': {
        const p = workspace.profile;
        renderer.note(
          `profile ${p.name}: ${p.description}\n  shell ${p.shell}, file_write ${p.file_write}, database ${p.database}, approval ` +
            `${approver.approvesAll ? 'off (/approve or --yes)' : p.approval.mode}, backend ${p.backend}`,
        );
        return true;
      }
      case 'tools': {
        if (arg) {
          const tool = workspace.registry.get(arg);
          renderer.note(
            tool
              ? `${tool.name}${tool.readOnly ? ' (read-only)' : ''}\n${tool.description}\narguments: ${JSON.stringify(tool.parameters.properties)}`
              : `no tool "${arg}"; /tools lists them`,
          );
        } else {
          renderer.note([...toolLines(workspace.registry.list(), process.stdout.columns || 100), '/tools NAME shows one tool in full.'].join('\n'));
        }
        return true;
      }
      case 'compact': {
        running = new AbortController();
        try {
          // The agent reports a compaction (or its failure) as an event the renderer prints.
          const result = await agent.compact(running.signal);
          if (result.message === NOTHING_TO_COMPACT) renderer.note(result.message);
        } catch {
          renderer.note('compaction cancelled; the history is unchanged');
        } finally {
          running = null;
        }
        return true;
      }
      case 'resume': {
        const next = Session.open(arg || latestOtherSession(session.id), process.env, { lock: true });
        try {
          checkResumableUnder(next, workspace.profile);
        } catch (error) {
          if (next.dir !== session.dir) next.close();
          throw error;
        }
        if (next.dir !== session.dir) session.close();
        session = next;
        const resumed = session.conversation();
        agent = setup.makeAgent(session, resumed);
        renderer.note(`resumed session ${session.id} (${resumed.length} messages)`);
        return true;
      }
      case 'clear':
        agent.clear();
        renderer.note('started a fresh conversation (the earlier one stays in the trace)');
        return true;
      case 'report': {
        const { writeSessionReport } = await import('./report.js');
        try {
          renderer.note(`report: ${await writeSessionReport(session.id, arg || undefined, false)}`);
        } catch (error) {
          renderer.note(`report not written: ${(error as Error).message}`);
        }
        return true;
      }
      case 'verify': {
        const { verifyInRepl } = await import('./verify.js');
        await verifyInRepl(agent.messages, workspace, (question) => new Promise((answer) => rl.question(question, answer)), renderer.note.bind(renderer));
        return true;
      }
      case 'approve':
        approver.approveAll();
        renderer.note('every tool call is approved for the rest of this session');
        return true;
      case 'exit':
      case 'quit':
        return false;
      default:
        renderer.note(`unknown command /${name}; /help lists the commands`);
        return true;
    }
  };

  return new Promise<number>((resolveExit) => {
    let busy: Promise<void> | null = null;
    let closed = false;
    const queued: string[] = [];
    rl.on('SIGINT', () => {
      if (running) {
        // An export's progress line may be half-written on stderr: clear it first.
        if (process.stderr.isTTY) process.stderr.write('\r\x1b[K');
        renderer.note('cancelling...');
        running.abort();
        return;
      }
      if (exitArmed) {
        rl.close();
        return;
      }
      exitArmed = true;
      // The cursor sits after the prompt: the hint goes on a line of its own.
      process.stdout.write('\n');
      renderer.note('(Ctrl+C again or Ctrl+D to exit)');
      rl.prompt();
    });
    const handle = async (line: string) => {
      try {
        const text = line.trim();
        if (!text) return;
        if (text.startsWith('/')) {
          if (!(await command(text))) {
            rl.close();
            return;
          }
        } else await runPrompt(text);
      } catch (error) {
        renderer.note(`quarry: ${(error as Error).message}`);
      }
    };
    // One line at a time: lines typed during a turn wait in `queued` and run after it.
    const drain = async () => {
      while (queued.length && !closed) await handle(queued.shift()!);
      busy = null;
      if (!closed) rl.prompt();
    };
    const submit = (line: string) => {
      queued.push(line);
      if (busy) {
        if (line.trim()) renderer.note(`(queued: runs after the current turn${queued.length > 1 ? `, ${queued.length} waiting` : ''})`);
        return;
      }
      busy = drain();
    };
    rl.on('line', (line) => {
      exitArmed = false;
      submit(line);
    });
    rl.on('close', () => {
      // Ctrl+D (or /exit): cancel a running turn, wait for it to wind down, then leave.
      closed = true;
      // The cursor may sit after "quarry> ": leave the shell's prompt on a line of its own.
      if (process.stdout.isTTY) process.stdout.write('\n');
      running?.abort();
      void Promise.resolve(busy).then(() => {
        saveHistory((rl as unknown as { history: string[] }).history ?? []);
        resolveExit(EXIT_OK);
      });
    });
    if (initialPrompt) submit(initialPrompt);
    else rl.prompt();
  });
}
