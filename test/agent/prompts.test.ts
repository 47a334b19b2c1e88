import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/agent-cli.js';
import { makeTempDir } from '../support/context.js';
import { startOpenAIServer, type FakeServer } from '../support/fake-openai.js';
import { withoutMarkingNote } from '../support/marking.js';

/** System prompts (docs/guide/running.md "Prompts"): the default analyst prompt and templates with front matter. */

let server: FakeServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const TEMPLATE = `---
description: Quarterly review
variables:
  quarter:
    required: true
    description: which quarter, e.g. Q3
  tone:
    default: plain
initial_prompt: Review {{quarter}} for me.
---
You review {{quarter}} in a {{tone}} tone. Profile {{profile}}, shell {{shell_mode}}, writes {{file_write_mode}}, folder {{working_dir}}.
`;

async function setup() {
  server = await startOpenAIServer(() => ({ text: 'ok' }));
  const home = makeTempDir('quarry-home-');
  const work = makeTempDir('quarry-work-');
  writeFileSync(join(work, 'review.md'), TEMPLATE);
  const url = server.url;
  const run = (args: string[], input = '') => runCli(['--base-url', url, '--model', 'm', '-w', work, ...args], { env: cliEnv(home), input });
  const system = (index = 0) => withoutMarkingNote((server?.requests[index]?.body.messages as { content: string }[] | undefined)?.[0]?.content ?? '');
  const firstUser = (index = 0) => (server?.requests[index]?.body.messages as { content: string }[] | undefined)?.[1]?.content ?? '';
  return { home, work, run, system, firstUser };
}

describe('system prompts', () => {
  it('uses the default data-analyst prompt with the automatic variables filled in', async () => {
    const s = await setup();
    expect((await s.run(['hi'])).code).toBe(0);
    const system = s.system();
    expect(system).toContain('careful data analyst');
    expect(system).toMatch(/Show the SQL you ran/);
    // Literal values are looked up before they are filtered on (docs/guide/databases.md "Knowing the data").
    expect(system).toMatch(/Before filtering on a literal value the question mentions .* look it up with operation find_values/);
    expect(system).toContain(`Working directory: ${s.work}`);
    expect(system).toContain('Profile: readonly (shell: restricted, file writes: off, databases: readonly)');
    expect(system).not.toMatch(/\{\{/);
  });

  it('fills a template from --var, --vars-file and defaults, and sends initial_prompt when no prompt is given', async () => {
    const s = await setup();
    const varsFile = join(s.work, 'vars.yaml');
    writeFileSync(varsFile, 'quarter: Q2\ntone: formal\n');
    const result = await s.run(['--system-prompt', join(s.work, 'review.md'), '--vars-file', varsFile, '--var', 'quarter=Q3']);
    expect(result.code).toBe(0);
    expect(s.system()).toBe(`You review Q3 in a formal tone. Profile readonly, shell restricted, writes off, folder ${s.work}.\n`);
    expect(s.firstUser()).toBe('Review Q3 for me.');
  });

  it('finds templates by name in $QUARRY_HOME/prompts and applies defaults', async () => {
    const s = await setup();
    mkdirSync(join(s.home, 'prompts'));
    writeFileSync(join(s.home, 'prompts', 'review.md'), TEMPLATE);
    const result = await s.run(['--system-prompt', 'review', '--var', 'quarter=Q1', 'a question']);
    expect(result.code).toBe(0);
    expect(s.system()).toMatch(/^You review Q1 in a plain tone\./);
    expect(s.firstUser()).toBe('a question');
  });

  it('names a missing required variable (exit 2)', async () => {
    const s = await setup();
    const result = await s.run(['--system-prompt', join(s.work, 'review.md'), 'hi']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/required template variable "quarter" has no value; pass --var quarter=VALUE \(which quarter, e\.g\. Q3\)/);
    expect(server?.requests).toHaveLength(0);
    const badVar = await s.run(['--var', 'novalue', 'hi']);
    expect(badVar.code).toBe(2);
    expect(badVar.stderr).toMatch(/--var expects NAME=VALUE/);
  });
});
