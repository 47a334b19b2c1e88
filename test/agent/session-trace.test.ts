import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { conversationFromTrace, readTraceChecked, repairTraceTail, type TraceEvent } from '../../src/agent/session.js';
import type { Message } from '../../src/model/types.js';
import { makeTempDir } from '../support/context.js';

/** Rebuilding the conversation from a trace that a crash cut short, and mending a torn trace. */

const call = (id: string, name = 'sqlite') => ({ id, name, arguments: '{}' });
const result = (id: string, content: string, name = 'sqlite'): Message => ({ role: 'tool', toolCallId: id, name, content });
const msg = (message: Message): TraceEvent => ({ type: 'message', message });
const start = (id: string): TraceEvent => ({ type: 'tool_start', id, name: 'sqlite', arguments: '{}' });
const end = (id: string, ok = true, metadata: Record<string, unknown> = {}): TraceEvent => ({
  type: 'tool_end',
  id,
  name: 'sqlite',
  ok,
  duration_ms: 1,
  metadata,
});

describe('conversationFromTrace after a crash', () => {
  it('puts results traced in completion order back in call order, and tells finished, interrupted and never-started calls apart', () => {
    const events: TraceEvent[] = [
      { type: 'run_start', prompt: 'q', model: 'm', profile: 'readonly', working_dir: '/' },
      msg({ role: 'user', content: 'q' }),
      msg({ role: 'assistant', content: '', toolCalls: [call('a'), call('b'), call('c'), call('d'), call('e')] }),
      start('a'),
      start('b'),
      start('c'),
      msg(result('b', 'b output')),
      end('b'),
      // Written by an older quarry: tool_end without its result message.
      end('a', true, { database: 'data', operation: 'export_query', rows: 60000 }),
      end('e', false, { error: 'timeout' }),
      start('d'),
    ];
    const conversation = conversationFromTrace(events);
    expect(
      conversation.slice(2).map((m) => [m.role === 'tool' ? m.toolCallId : m.role, m.content.split(':')[0], m.role === 'tool' ? Boolean(m.isError) : null]),
    ).toEqual([
      ['a', 'finished', false],
      ['b', 'b output', false],
      ['c', 'interrupted', true],
      ['d', 'interrupted', true],
      ['e', 'failed', true],
    ]);
    expect(conversation[2]?.content).toMatch(
      /completed before the session was interrupted, but its output was not saved \(\{"database":"data","operation":"export_query","rows":60000\}\)/,
    );
  });

  it('attributes call ids to their own message (scripted ids repeat across runs), and answers a never-started call "not run"', () => {
    const events: TraceEvent[] = [
      msg({ role: 'user', content: 'one' }),
      msg({ role: 'assistant', content: '', toolCalls: [call('script_1_1')] }),
      start('script_1_1'),
      msg(result('script_1_1', 'first run output')),
      end('script_1_1'),
      msg({ role: 'assistant', content: 'done' }),
      { type: 'run_end', status: 'completed', usage: { input_tokens: 0, output_tokens: 0, cached_tokens: 0 } },
      { type: 'run_start', prompt: 'two', model: 'm', profile: 'readonly', working_dir: '/' },
      msg({ role: 'user', content: 'two' }),
      msg({ role: 'assistant', content: '', toolCalls: [call('script_1_1'), call('script_1_2')] }),
    ];
    const conversation = conversationFromTrace(events);
    const results = conversation.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.content.split(':')[0])).toEqual(['first run output', 'not run', 'not run']);
  });
});

describe('a torn trace', () => {
  it('reports unreadable lines with their numbers, and repairTraceTail cuts only a torn last line', () => {
    const dir = makeTempDir('quarry-trace-');
    const path = join(dir, 'trace.jsonl');
    const good = `${JSON.stringify({ ts: 't', type: 'clear' })}\n`;
    writeFileSync(path, `${good}{"ts":"t","type":"mess\n${good}`);
    expect(readTraceChecked(dir).unreadable).toEqual([{ line: 2, bytes: Buffer.byteLength('{"ts":"t","type":"mess') }]);
    expect(repairTraceTail(dir)).toBe(0);
    appendFileSync(path, '{"ts":"t","type":"err');
    expect(repairTraceTail(dir)).toBe(Buffer.byteLength('{"ts":"t","type":"err'));
    expect(readFileSync(path, 'utf8')).toBe(`${good}{"ts":"t","type":"mess\n${good}`);
    // Multi-byte characters cut in the middle are still counted in bytes.
    appendFileSync(path, Buffer.from('{"ts":"t","message":"é', 'utf8').subarray(0, -1));
    expect(repairTraceTail(dir)).toBe(Buffer.byteLength('{"ts":"t","message":"é') - 1);
    expect(readTraceChecked(dir).events).toHaveLength(2);
  });
});
