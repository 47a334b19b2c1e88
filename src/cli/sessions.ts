import type { Argv } from 'yargs';
import {
  childSessions,
  conversationFromTrace,
  effectiveStatus,
  listSessionIds,
  readSessionMeta,
  readTraceChecked,
  requestCancel,
  resolveSessionId,
  sessionsDir,
  type SessionMeta,
} from '../agent/session.js';
import { join } from 'node:path';
import { EXIT_FAILED, EXIT_OK } from '../errors.js';

/** `quarry sessions`, `sessions show ID`, `sessions export ID`, `quarry cancel ID` (docs/guide/sessions.md). */

const PROMPT_PREVIEW_CHARS = 60;
const CANCEL_WAIT_MS = 10_000;
const CANCEL_POLL_MS = 100;

function clip(text: string, limit: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > limit ? `${flat.slice(0, limit - 3)}...` : flat;
}

/** meta.json with the status as it really is: "running" only while its process lives (else "interrupted"). */
function currentMeta(id: string): SessionMeta | undefined {
  const meta = readSessionMeta(id);
  return meta && { ...meta, status: effectiveStatus(meta, join(sessionsDir(), id)) };
}

function listSessions(format: 'text' | 'json'): number {
  const metas = listSessionIds()
    .map((id) => currentMeta(id))
    .filter((meta) => meta !== undefined);
  if (format === 'json') {
    process.stdout.write(`${JSON.stringify(metas, null, 2)}\n`);
    return EXIT_OK;
  }
  if (metas.length === 0) {
    process.stdout.write(`no sessions yet (${sessionsDir()})\n`);
    return EXIT_OK;
  }
  const rows = metas.map((m) => [m.id, m.status, m.updated_at.replace('T', ' ').slice(0, 19), m.profile, m.model, clip(m.first_prompt, PROMPT_PREVIEW_CHARS)]);
  const header = ['ID', 'STATUS', 'UPDATED (UTC)', 'PROFILE', 'MODEL', 'FIRST PROMPT'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ');
  process.stdout.write(`${[line(header), ...rows.map(line)].join('\n')}\n`);
  return EXIT_OK;
}

function showSession(requested: string): number {
  const id = resolveSessionId(requested);
  const meta = currentMeta(id);
  const dir = join(sessionsDir(), id);
  const { events, unreadable } = readTraceChecked(dir);
  const children = childSessions(dir);
  const out: string[] = [
    `session ${id}`,
    `  status ${meta?.status}, profile ${meta?.profile}, model ${meta?.model}`,
    `  working dir ${meta?.working_dir}`,
    `  created ${meta?.created_at}, updated ${meta?.updated_at}, runs ${meta?.runs}`,
    `  usage ${meta?.usage.input_tokens} in / ${meta?.usage.output_tokens} out / ${meta?.usage.cached_tokens} cached tokens`,
    ...(meta?.error ? [`  last error: ${meta.error}`] : []),
    `  trace ${join(dir, 'trace.jsonl')}`,
    ...(unreadable.length
      ? [
          `  ${unreadable.length} unreadable trace line${unreadable.length > 1 ? 's' : ''} skipped (cut off while being written): line ` +
            `${unreadable.map((u) => u.line).join(', ')}`,
        ]
      : []),
    ...children.map((child) => `  delegated ${child.id}: ${effectiveStatus(child.meta, child.dir)}, ${clip(child.meta.first_prompt, PROMPT_PREVIEW_CHARS)}`),
    '',
  ];
  for (const message of conversationFromTrace(events)) {
    if (message.role === 'user') out.push(`user: ${message.content}`);
    else if (message.role === 'assistant') {
      if (message.content) out.push(`assistant: ${message.content}`);
      for (const call of message.toolCalls ?? []) out.push(`  call ${call.name} ${clip(call.arguments, 200)}`);
    } else out.push(`  ${message.isError ? 'error' : 'result'} ${message.name}: ${clip(message.content, 200)}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
  return EXIT_OK;
}

function exportSession(requested: string): number {
  const id = resolveSessionId(requested);
  const dir = join(sessionsDir(), id);
  const { events, unreadable } = readTraceChecked(dir);
  const children = childSessions(dir).map((child) => ({ ...child.meta, status: effectiveStatus(child.meta, child.dir) }));
  const document = { meta: currentMeta(id), events, ...(children.length ? { children } : {}), ...(unreadable.length ? { unreadable_lines: unreadable } : {}) };
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  return EXIT_OK;
}

async function cancelSession(requested: string): Promise<number> {
  const id = resolveSessionId(requested);
  const before = currentMeta(id);
  if (before?.status !== 'running') {
    const gone = before?.status === 'interrupted' ? `; its process (${before.pid}) is gone, nothing to cancel` : '';
    process.stderr.write(`quarry: session ${id} is not running (status: ${before?.status ?? 'unknown'})${gone}\n`);
    return EXIT_FAILED;
  }
  requestCancel(id);
  for (let waited = 0; waited < CANCEL_WAIT_MS; waited += CANCEL_POLL_MS) {
    await new Promise((resolve) => setTimeout(resolve, CANCEL_POLL_MS));
    const now = readSessionMeta(id);
    if (now && now.status !== 'running') {
      process.stdout.write(`session ${id}: ${now.status}\n`);
      return EXIT_OK;
    }
  }
  process.stderr.write(`quarry: asked session ${id} to cancel; it has not stopped within ${CANCEL_WAIT_MS / 1000} s\n`);
  return EXIT_FAILED;
}

export function registerSessionsCommands(parser: Argv, setExit: (code: number) => void): void {
  parser.command(
    'sessions',
    'List sessions; `sessions show ID`, `sessions export ID`',
    (y) =>
      y
        .option('format', { choices: ['text', 'json'] as const, default: 'text' as const })
        .command(
          'show <id>',
          'A session: meta and conversation ("latest" works)',
          (s) => s.positional('id', { type: 'string', demandOption: true }),
          (argv) => {
            setExit(showSession(argv.id));
          },
        )
        .command(
          'export <id>',
          'A session as JSON: meta and every trace event',
          (s) => s.positional('id', { type: 'string', demandOption: true }),
          (argv) => {
            setExit(exportSession(argv.id));
          },
        ),
    (argv) => {
      setExit(listSessions(argv.format));
    },
  );
  parser.command(
    'cancel <id>',
    'Cancel a run going on in another terminal',
    (y) => y.positional('id', { type: 'string', demandOption: true }),
    async (argv) => {
      setExit(await cancelSession(argv.id));
    },
  );
}
