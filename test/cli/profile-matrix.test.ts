import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/context.js';
import { runQuarry } from '../support/cli.js';

/**
 * `quarry tool` for every file tool under every built-in profile, as the table of docs/guide/profiles.md says:
 * reads everywhere; write only where file_write is not off; edit only under full; the daytona
 * profile's tools answer with a clear error while no Daytona key is configured.
 */
const FILE_TOOLS = ['read', 'grep', 'glob', 'list', 'write', 'edit'] as const;
const OFFERED: Record<string, readonly string[]> = {
  readonly: ['read', 'grep', 'glob', 'list'],
  developer: FILE_TOOLS,
  eval: FILE_TOOLS,
  daytona: FILE_TOOLS,
};

let dir: string;
let home: string;
beforeEach(() => {
  dir = makeTempDir();
  home = makeTempDir('quarry-home-');
  writeFileSync(join(dir, 'data.txt'), 'alpha\nbeta\n');
});

function argsFor(tool: (typeof FILE_TOOLS)[number]): object {
  switch (tool) {
    case 'read':
      return { path: 'data.txt' };
    case 'grep':
      return { pattern: 'bet' };
    case 'glob':
      return { pattern: '*.txt' };
    case 'list':
      return { path: '.' };
    case 'write':
      return { path: 'new.txt', content: 'created\n' };
    case 'edit':
      return { path: 'data.txt', old_string: 'beta', new_string: 'gamma' };
  }
}

for (const [profile, offered] of Object.entries(OFFERED)) {
  describe(`profile ${profile}`, () => {
    for (const tool of FILE_TOOLS) {
      it(`${offered.includes(tool) ? 'offers' : 'does not offer'} ${tool}`, async () => {
        const result = await runQuarry(['tool', tool, '--args', JSON.stringify(argsFor(tool)), '-p', profile, '-w', dir, '--yes', '--format', 'json'], {
          env: { QUARRY_HOME: home, DAYTONA_API_KEY: undefined },
        });
        const after = readFileSync(join(dir, 'data.txt'), 'utf8');
        if (!offered.includes(tool)) {
          expect(result.code).toBe(2);
          expect(result.stderr).toContain(`tool "${tool}" is not available under profile "${profile}"`);
          expect(after).toBe('alpha\nbeta\n');
          return;
        }
        const parsed = JSON.parse(result.stdout) as { ok: boolean; output: string };
        if (profile === 'daytona') {
          expect(result.code).toBe(1);
          expect(parsed.output).toContain('DAYTONA_API_KEY');
          expect(after).toBe('alpha\nbeta\n');
          return;
        }
        expect(result.code).toBe(0);
        expect(parsed.ok).toBe(true);
        if (tool === 'write') expect(readFileSync(join(dir, 'new.txt'), 'utf8')).toBe('created\n');
        if (tool === 'edit') expect(after).toBe('alpha\ngamma\n');
        if (tool === 'read' || tool === 'grep') expect(parsed.output).toContain('beta');
        if (tool === 'glob' || tool === 'list') expect(parsed.output).toContain('data.txt');
      });
    }
  });
}
