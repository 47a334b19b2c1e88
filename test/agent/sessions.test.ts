import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer, type RecordedRequest, type ReplySource } from '../support/fake-openai.js';

/** Sessions, resume, compaction and approval through the real CLI. */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type ChatMessage = { role: string; content?: string | null; tool_call_id?: string };

async function setup(replies: ReplySource) {
  server = await startOpenAIServer(replies);
  const home = makeTempDir('quarry-home-');
  const work = makeTempDir('quarry-work-');
  writeFileSync(join(work, 'notes.txt'), 'alpha\nbeta\n');
  writeFileSync(join(work, 'big.txt'), `${'row of data, '.repeat(5)}\n`.repeat(400));
  const url = server.url;
  const run = (args: string[]) => runCli(['--base-url', url, '--model', 'm', '-w', work, ...args], { env: cliEnv(home) });
  return { home, work, run };
}

const messages = (request: RecordedRequest | undefined) => (request?.body.messages ?? []) as ChatMessage[];
const hasTools = (request: RecordedRequest) => Array.isArray(request.body.tools);

describe('sessions', () => {
  it('resumes the latest session with its whole conversation', async () => {
    const s = await setup([
      { toolCalls: [{ id: 'r1', name: 'read', arguments: '{"path":"notes.txt"}' }] },
      { text: 'The notes say alpha.' },
      { text: 'Beta comes second.' },
    ]);
    const first = JSON.parse((await s.run(['--format', 'json', 'what do the notes say?'])).stdout) as { session_id: string };
    const second = await s.run(['--resume', 'latest', '--format', 'json', 'and what comes second?']);
    expect(second.code).toBe(0);
    const out = JSON.parse(second.stdout) as { session_id: string; text: string };
    expect(out.session_id).toBe(first.session_id);
    expect(out.text).toBe('Beta comes second.');
    expect(messages(server?.requests[2]).map((m) => [m.role, m.content ?? null])).toEqual([
      ['system', expect.stringContaining('careful data analyst')],
      ['user', 'what do the notes say?'],
      ['assistant', null],
      ['tool', expect.stringContaining('alpha')],
      ['assistant', 'The notes say alpha.'],
      ['user', 'and what comes second?'],
    ]);
    const meta = JSON.parse(readFileSync(join(s.home, 'sessions', out.session_id, 'meta.json'), 'utf8')) as Record<string, unknown>;
    expect(meta).toMatchObject({ runs: 2, status: 'completed', first_prompt: 'what do the notes say?' });
    // sessions, sessions show, sessions export.
    const env = cliEnv(s.home);
    const list = await runCli(['sessions'], { env });
    expect(list.stdout).toContain(out.session_id);
    expect(list.stdout).toContain('what do the notes say?');
    const show = await runCli(['sessions', 'show', out.session_id], { env });
    expect(show.stdout).toContain('assistant: Beta comes second.');
    const exported = JSON.parse((await runCli(['sessions', 'export', 'latest'], { env })).stdout) as { meta: { id: string }; events: { type: string }[] };
    expect(exported.meta.id).toBe(out.session_id);
    expect(exported.events.filter((e) => e.type === 'run_start')).toHaveLength(2);
    const missing = await runCli(['sessions', 'show', 'nope'], { env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no session "nope"/);
  });

  it('compacts at 80% of the context window, keeps recent turns, and resumes the compacted form', async () => {
    let turn = 0;
    const s = await setup((request) => {
      if (!hasTools(request)) return { text: 'SUMMARY: the user asked about big.txt; it holds 400 rows of data.' };
      turn++;
      if (turn === 1) return { toolCalls: [{ id: 'b1', name: 'read', arguments: '{"path":"big.txt"}' }] };
      if (turn === 2) return { toolCalls: [{ id: 'n1', name: 'read', arguments: '{"path":"notes.txt"}' }] };
      return { text: `answer ${turn}` };
    });
    const result = await s.run(['--context-window', '4000', '--format', 'json', 'summarise big.txt and the notes']);
    expect(result.code).toBe(0);
    const requests = server?.requests ?? [];
    const compactions = requests.filter((r) => !hasTools(r));
    expect(compactions).toHaveLength(1);
    expect(JSON.stringify(compactions[0]?.body.messages)).toContain('row of data');
    const last = messages(requests.at(-1));
    // The summary was written from tool results: the model gets it marked as data (src/agent/marking.ts), and so were the results the summariser read.
    expect(last[1]?.content).toMatch(
      /^\[Summary of the earlier conversation.*\]\n<<data-([0-9a-f]{32}) source="[^"]*summary[^"]*">>\nSUMMARY: the user asked about big.txt.*\n<<end-\1>>$/,
    );
    expect(JSON.stringify(compactions[0]?.body.messages)).toMatch(/RESULT OF read: <<data-[0-9a-f]{32} source=\\"read \(big.txt\)\\">>/);
    expect(JSON.stringify(last)).not.toContain('row of data');
    expect(last.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['n1']);
    const id = (JSON.parse(result.stdout) as { session_id: string }).session_id;
    const trace = readFileSync(join(s.home, 'sessions', id, 'trace.jsonl'), 'utf8');
    expect(trace).toContain('"type":"compact"');
    // Resuming starts from the compacted conversation, not the full history.
    const resumed = await s.run(['--resume', id, '--context-window', '4000', 'one more']);
    expect(resumed.code).toBe(0);
    const afterResume = messages(server?.requests.at(-1));
    expect(afterResume[1]?.content).toMatch(/SUMMARY: the user asked about big.txt/);
    // Marked again with the resumed run's own boundary; the trace holds none.
    const nonce = (text: unknown) => /<<data-([0-9a-f]{32})/.exec(String(text))?.[1];
    expect(nonce(afterResume[1]?.content)).toBeDefined();
    expect(nonce(afterResume[1]?.content)).not.toBe(nonce(last[1]?.content));
    expect(trace).not.toContain(nonce(last[1]?.content));
    expect(JSON.stringify(afterResume)).not.toContain('row of data');
    expect(afterResume.at(-1)).toEqual({ role: 'user', content: 'one more' });
  });

  it('keeps the full history when compaction fails', async () => {
    let turn = 0;
    const s = await setup((request) => {
      if (!hasTools(request)) return { status: 400, message: 'summaries are not allowed here' };
      turn++;
      if (turn === 1) return { toolCalls: [{ id: 'b1', name: 'read', arguments: '{"path":"big.txt"}' }] };
      if (turn === 2) return { toolCalls: [{ id: 'n1', name: 'read', arguments: '{"path":"notes.txt"}' }] };
      return { text: 'done anyway' };
    });
    const result = await s.run(['--context-window', '4000', '--format', 'json', 'go']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'completed', text: 'done anyway' });
    const last = messages(server?.requests.at(-1));
    expect(JSON.stringify(last)).toContain('row of data');
    expect(last.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(['b1', 'n1']);
  });
});

describe('approval', () => {
  it('refuses an approval-requiring call without a TTY, tells about --yes, and runs it with --yes', async () => {
    const replies = () => [{ toolCalls: [{ id: 'w1', name: 'write', arguments: '{"path":"out.txt","content":"hello"}' }] }, { text: 'ok' }];
    const s = await setup(replies());
    const profile = join(s.work, 'careful.yaml');
    writeFileSync(profile, 'name: careful\ndescription: asks before changes\nfile_write: create-only\napproval:\n  mode: dangerous\n');
    const refused = await s.run(['--profile', profile, 'write it']);
    expect(refused.code).toBe(0);
    expect(existsSync(join(s.work, 'out.txt'))).toBe(false);
    expect(refused.stderr).toMatch(/^refused write out\.txt .*--yes/m);
    const result = messages(server?.requests[1]).find((m) => m.role === 'tool');
    expect(result?.content).toMatch(/refused: .*no terminal.*--yes/);
    const trace = readdirSync(join(s.home, 'sessions'))
      .map((id) => readFileSync(join(s.home, 'sessions', id, 'trace.jsonl'), 'utf8'))
      .join('');
    expect(trace).toContain('"type":"tool_blocked"');

    await server?.close();
    server = await startOpenAIServer(replies());
    const approved = await runCli(['--base-url', server.url, '--model', 'm', '-w', s.work, '--profile', profile, '--yes', 'write it'], { env: cliEnv(s.home) });
    expect(approved.code).toBe(0);
    expect(readFileSync(join(s.work, 'out.txt'), 'utf8')).toBe('hello');
  });

  it('writes one event stream twice: stream-json and the trace name why a call was blocked in the same field', async () => {
    const read = { name: 'read', arguments: '{"path":"notes.txt"}' };
    const s = await setup([
      { toolCalls: [{ id: 'w1', name: 'write', arguments: '{"path":"out.txt","content":"hello"}' }] },
      {
        toolCalls: [
          { id: 'a', ...read },
          { id: 'b', ...read },
          { id: 'c', ...read },
          { id: 'd', name: 'list', arguments: '{}' },
        ],
      },
    ]);
    const profile = join(s.work, 'careful.yaml');
    writeFileSync(profile, 'name: careful\ndescription: asks before changes\nfile_write: create-only\napproval:\n  mode: dangerous\n');
    const result = await s.run(['--profile', profile, '--format', 'stream-json', 'write it']);
    expect(result.code).toBe(1);
    const stream = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const [id] = readdirSync(join(s.home, 'sessions'));
    const trace = readFileSync(join(s.home, 'sessions', id as string, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const blocked = (events: Record<string, unknown>[]) => events.filter((e) => e.type === 'tool_blocked').map(({ ts: _ts, ...rest }) => rest);
    expect(blocked(stream)).toEqual(blocked(trace));
    expect(blocked(stream).map((e) => [e.id, String(e.reason).slice(0, 24)])).toEqual([
      ['w1', 'refused: write can chang'],
      ['c', 'not run: the same read c'],
      ['d', 'not run: the run stopped'],
    ]);
    // The refused call had a tool_start, so it has a tool_end; the calls the run stopped before have only their result.
    expect(
      trace
        .filter((e) => e.type === 'tool_end')
        .map((e) => e.id)
        .sort(),
    ).toEqual(['a', 'b', 'w1']);
    expect(
      trace
        .filter((e) => e.type === 'message' && (e.message as { role: string }).role === 'tool')
        .map((e) => (e.message as { toolCallId: string }).toolCallId)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd', 'w1']);
    expect(
      stream
        .filter((e) => e.type === 'tool_end')
        .map((e) => e.id)
        .sort(),
    ).toEqual(['a', 'b', 'c', 'd', 'w1']);
  });

  it('checks granular patterns against the call arguments', async () => {
    const s = await setup([
      {
        toolCalls: [
          { id: 'g1', name: 'grep', arguments: '{"pattern":"DROP TABLE","path":"."}' },
          { id: 'g2', name: 'read', arguments: '{"path":"notes.txt"}' },
        ],
      },
      { text: 'ok' },
    ]);
    const profile = join(s.work, 'granular.yaml');
    writeFileSync(profile, 'name: granular\ndescription: patterns\napproval:\n  mode: granular\n  patterns: ["drop\\\\s+table"]\n');
    const result = await s.run(['--profile', profile, 'search']);
    expect(result.code).toBe(0);
    const [grep, read] = messages(server?.requests[1]).filter((m) => m.role === 'tool');
    expect(grep?.content).toMatch(/refused: the arguments match the approval pattern/);
    expect(read?.content).toContain('alpha');
  });
});
