import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENV_VARS } from '../../src/config/env-vars.js';
import { REPO_ROOT } from '../support/cli.js';

/**
 * src/config/env-vars.ts lists every environment variable quarry reads (the environment reference
 * is generated from it): every variable the code in src/ reads by name is in it, and it lists
 * nothing the code never names.
 */

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : /\.c?ts$/.test(entry.name) ? [join(dir, entry.name)] : [],
  );
}

const SRC = join(REPO_ROOT, 'src');
const files = sourceFiles(SRC).filter((file) => !file.endsWith('env-vars.ts'));
const registered = new Set(ENV_VARS.map((variable) => variable.name));

/** The ways src/ reads a variable by name: env.NAME, env?.NAME, env['NAME'], a name passed with the environment, a preset's keyVariable. */
const READS = [
  /\benv\??\.([A-Z][A-Z0-9_]+)\b/g,
  /\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g,
  /\benv, ['"]([A-Z][A-Z0-9_]+)['"]/g,
  /keyVariable: '([A-Z][A-Z0-9_]+)'/g,
  /positiveSetting\('([A-Z][A-Z0-9_]+)'/g,
  /requireKey\(env, '([A-Z][A-Z0-9_]+)'/g,
];

describe('the environment variable registry', () => {
  it('lists every variable read in src/', () => {
    const read = new Map<string, string>();
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const pattern of READS) for (const match of text.matchAll(pattern)) read.set(match[1]!, relative(REPO_ROOT, file));
      // databasesFromEnv: env[`${prefix}_HOST`] for each [engine, PREFIX] pair.
      const suffixes = [...text.matchAll(/env\[`\$\{prefix\}_([A-Z]+)`\]/g)].map((match) => match[1]!);
      const prefixes = suffixes.length ? [...text.matchAll(/\['\w+', '([A-Z]+)'\]/g)].map((match) => match[1]!) : [];
      for (const prefix of prefixes) for (const suffix of suffixes) read.set(`${prefix}_${suffix}`, relative(REPO_ROOT, file));
    }
    expect(read.size).toBeGreaterThan(30);
    const missing = [...read].filter(([name]) => !registered.has(name)).map(([name, file]) => `${name} (${file})`);
    expect(missing, 'add these to src/config/env-vars.ts').toEqual([]);
  });

  it('names only variables the code uses, once each, each with a description', () => {
    const everything = files.map((file) => readFileSync(file, 'utf8')).join('\n');
    for (const variable of ENV_VARS) {
      expect(variable.description.length, variable.name).toBeGreaterThan(10);
      const [prefix, ...rest] = variable.name.split('_');
      // A database variable is built from its prefix (`${prefix}_HOST`); TMPDIR is read by os.tmpdir().
      const named = everything.includes(variable.name) || (everything.includes(`'${prefix}'`) && everything.includes(`_${rest.at(-1)}\``));
      expect(named || variable.name === 'TMPDIR', variable.name).toBe(true);
    }
    expect(new Set(ENV_VARS.map((variable) => variable.name)).size).toBe(ENV_VARS.length);
  });
});
