import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conversationForChild } from '../../src/agent/delegate.js';
import type { Message } from '../../src/model/types.js';
import { cliEnv, collect, spawnCli } from '../support/agent-cli.js';
import { runQuarry } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';

type TraceLine = { type: string; [key: string]: unknown };

function trace(dir: string): TraceLine[] {
  return readFileSync(join(dir, 'trace.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as TraceLine);
}

function toolResults(events: TraceLine[]): Array<{ name: string; content: string; isError?: boolean }> {
  return events
    .filter((event) => event.type === 'message' && (event.message as Message).role === 'tool')
    .map((event) => event.message as { name: string; content: string; isError?: boolean });
}

async function scriptedRun(turns: unknown[], prompt: string) {
  const home = makeTempDir('quarry-delegate-home-');
  const work = makeTempDir('quarry-delegate-work-');
  writeFileSync(join(work, 'notes.txt'), 'one\ntwo\nthree\n');
  const script = join(home, 'script.json');
  writeFileSync(script, JSON.stringify({ turns }));
  const result = await runQuarry(['--model', `script:${script}`, '--profile', 'developer', '--yes', '--format', 'json', '-w', work, prompt], {
    env: cliEnv(home),
    timeoutMs: 60_000,
  });
  const sessions = readdirSync(join(home, 'sessions'));
  expect(sessions).toHaveLength(1);
  return { result, parentDir: join(home, 'sessions', sessions[0]!), parentId: sessions[0]! };
}

describe('delegate', () => {
  it('runs a child that uses tools and answers; the child cannot delegate; its session is stored under the parent and linked', async () => {
    const { result, parentDir, parentId } = await scriptedRun(
      [
        { text: 'Let me hand this off.', tool_calls: [{ name: 'delegate', arguments: { instruction: 'Count the lines of notes.txt', full_context: true } }] },
        {
          tool_calls: [
            { name: 'read', arguments: { path: 'notes.txt' } },
            { name: 'delegate', arguments: { instruction: 'go deeper' } },
          ],
        },
        { text: 'notes.txt has 3 lines.' },
        { text: 'The child says notes.txt has 3 lines.' },
      ],
      'How many lines does notes.txt have?',
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'completed', text: 'The child says notes.txt has 3 lines.' });

    const parentEvents = trace(parentDir);
    const delegateEnd = parentEvents.find((event) => event.type === 'tool_end' && event.name === 'delegate')!;
    expect(delegateEnd).toMatchObject({ ok: true, metadata: { status: 'completed', turns: 2, tool_calls: 2 } });
    const childId = (delegateEnd.metadata as { child_session: string }).child_session;
    const childDir = join(parentDir, 'children', childId);
    expect(existsSync(join(childDir, 'meta.json'))).toBe(true);
    expect(JSON.parse(readFileSync(join(childDir, 'meta.json'), 'utf8'))).toMatchObject({
      id: childId,
      parent_id: parentId,
      status: 'completed',
      profile: 'developer',
    });

    const [parentResult] = toolResults(parentEvents);
    expect(parentResult!.content).toMatch(
      /^notes\.txt has 3 lines\.\n\[delegate: completed; 2 turn\(s\), 2 tool call\(s\); \d+ input \/ \d+ output tokens; .+; session [\w.-]+\]$/,
    );

    const childEvents = trace(childDir);
    // Results are traced as each call finishes (completion order), so pick them by tool.
    const readResult = toolResults(childEvents).find((r) => r.name === 'read');
    const nestedResult = toolResults(childEvents).find((r) => r.name === 'delegate');
    expect(readResult).toMatchObject({ name: 'read' });
    expect(readResult!.content).toContain('     3\tthree');
    expect(nestedResult).toMatchObject({ name: 'delegate', isError: true });
    expect(nestedResult!.content).toMatch(/^unknown tool "delegate"; available tools: read, /);
    // full_context: the child saw the parent's question and the parent's text, then its instruction.
    const childStart = childEvents.find((event) => event.type === 'llm_start')!;
    expect(childStart.messages).toBe(3);
    const childMessages = childEvents.filter((event) => event.type === 'message').map((event) => event.message as Message);
    expect(childMessages[0]).toMatchObject({ role: 'user', content: 'Count the lines of notes.txt' });
  });

  it('runs the delegate calls of one message concurrently', async () => {
    const { result, parentDir } = await scriptedRun(
      [
        {
          tool_calls: [
            { name: 'delegate', arguments: { instruction: 'part A' } },
            { name: 'delegate', arguments: { instruction: 'part B' } },
          ],
        },
        { tool_calls: [{ name: 'bash', arguments: { command: 'sleep 1; echo slept' } }] },
        { tool_calls: [{ name: 'bash', arguments: { command: 'sleep 1; echo slept' } }] },
        { text: 'child done' },
        { text: 'child done' },
        { text: 'Both parts are done.' },
      ],
      'Do A and B',
    );
    expect(result.code).toBe(0);
    const order = trace(parentDir)
      .filter((event) => (event.type === 'tool_start' || event.type === 'tool_end') && event.name === 'delegate')
      .map((event) => event.type);
    expect(order).toEqual(['tool_start', 'tool_start', 'tool_end', 'tool_end']);
    const results = toolResults(trace(parentDir));
    expect(results.map((entry) => entry.content.split('\n')[0])).toEqual(['child done', 'child done']);
    expect(readdirSync(join(parentDir, 'children'))).toHaveLength(2);
  });

  it("cancelling the parent (Ctrl+C) cancels the child and kills the child's command", async () => {
    const home = makeTempDir('quarry-delegate-cancel-');
    const work = makeTempDir('quarry-delegate-cancel-work-');
    const script = join(home, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        turns: [
          { tool_calls: [{ name: 'delegate', arguments: { instruction: 'wait' } }] },
          { tool_calls: [{ name: 'bash', arguments: { command: 'echo $$ > started.pid; sleep 30' } }] },
          { text: 'never reached' },
        ],
      }),
    );
    const child = spawnCli(['--model', `script:${script}`, '--profile', 'developer', '--yes', '--format', 'json', '-w', work, 'go'], { env: cliEnv(home) });
    const pidFile = join(work, 'started.pid');
    const until = Date.now() + 20_000;
    while (!(existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim()) && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50));
    const shellPid = Number(readFileSync(pidFile, 'utf8'));
    const started = Date.now();
    child.kill('SIGINT');
    const result = await collect(child, 20_000);
    expect(result.code).toBe(130);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(() => process.kill(shellPid, 0)).toThrow();
    const parentDir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!);
    const [childId] = readdirSync(join(parentDir, 'children'));
    expect(JSON.parse(readFileSync(join(parentDir, 'children', childId!, 'meta.json'), 'utf8'))).toMatchObject({ status: 'cancelled' });
    expect(JSON.parse(readFileSync(join(parentDir, 'meta.json'), 'utf8'))).toMatchObject({ status: 'cancelled' });
  });

  it('gives a child the parent conversation without the pending delegate call', () => {
    const conversation: Message[] = [
      { role: 'user', content: 'question' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'read', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', name: 'read', content: 'data' },
      { role: 'assistant', content: 'Delegating now.', toolCalls: [{ id: 'c2', name: 'delegate', arguments: '{"instruction":"x"}' }] },
    ];
    expect(conversationForChild(conversation)).toEqual([...conversation.slice(0, 3), { role: 'assistant', content: 'Delegating now.' }]);
    expect(
      conversationForChild([
        { role: 'user', content: 'q' },
        { role: 'assistant', content: ' ', toolCalls: [{ id: 'c', name: 'delegate', arguments: '{}' }] },
      ])[1],
    ).toEqual({
      role: 'assistant',
      content: '(handing a subtask to a delegate)',
    });
  });

  it('quarry tool delegate explains that it runs only inside an agent run', async () => {
    const home = makeTempDir('quarry-delegate-tool-');
    const result = await runQuarry(['tool', 'delegate', '--args', '{"instruction":"x"}', '-p', 'developer', '--yes'], { env: cliEnv(home), timeoutMs: 30_000 });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'delegate is not available here: it runs only in an agent run, and a delegated agent cannot delegate again (one level only)',
    );
  });
});
