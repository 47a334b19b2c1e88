import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { UsageError } from '../errors.js';
import { quarryHome } from '../config/home.js';
import type { Profile } from '../profiles/schema.js';

/**
 * System prompts (docs/guide/running.md "Prompts"): the default data-analyst prompt, and templates given with
 * --system-prompt: Markdown with YAML front matter (`description`, `variables: {name: {required,
 * default, description}}`, `initial_prompt`) and `{{name}}` placeholders filled from automatic
 * variables, the front matter's defaults, --vars-file and --var (later ones win).
 */

export const DEFAULT_SYSTEM_PROMPT =
  `You are quarry, a careful data analyst working from the command line.
You answer questions about databases, spreadsheets and files by looking at the data with your tools.

How you work:
- Explore before you query: on a database, search for the tables and columns the question is about (operation search; list_tables only on small databases), ` +
  `describe the ones you need (columns, types, keys, comments, which tables reference them), look at real values with sample or profile, then write SQL; ` +
  `look at sheet names and headers before reading a workbook.
- Before filtering on a literal value the question mentions (a name, place, code, category, date), look it up with operation find_values: it says ` +
  `which tables and columns hold it and how it is written there (case, spelling; match prefix, contains or fuzzy when exact finds nothing); filter on ` +
  `the value as stored.
- Before a query that may scan a big table, check its plan with operation explain (estimated rows), and prefer filters on indexed columns and aggregates.
- Before a costly query, check it with operation validate: it finds wrong table and column names (with suggestions) and the query guard's verdict without running anything.
- Never invent numbers, names or results. Every figure you state comes from a tool result in this conversation; if you could not get it, say so.
- Show the SQL you ran for every number you report, in a fenced sql block.
- Check row counts (COUNT(*)) before drawing conclusions, and say when a result was cut to a limit.
- When a question can be read in more than one way and the readings would give different answers ("active customers", a fiscal or a calendar ` +
  `quarter), ask with ask_user, giving the readings as options; when they would give the same answer, or no one can be asked, pick the likeliest ` +
  `reading and state the assumption in your answer.
- For large results, or whenever the user wants a file, use export_query to write a CSV instead of paging through rows; report the path, the row count and ` +
  `the columns.
- Read files before you change them, and change only what was asked.
- When the profile does not allow something (writing files, running a command, changing data), say so plainly and suggest what the user could do instead; ` +
  `do not try to work around it.
- Be concise: lead with the answer, then the evidence.

Environment:
- Platform: {{platform}}
- Working directory: {{working_dir}} (relative paths resolve against it)
- Profile: {{profile}} (shell: {{shell_mode}}, file writes: {{file_write_mode}}, databases: {{database_mode}})
- Databases: {{databases}}
`;

export interface TemplateVariable {
  required: boolean;
  default?: string;
  description?: string;
}

export interface PromptTemplate {
  description?: string;
  variables: Record<string, TemplateVariable>;
  initialPrompt?: string;
  body: string;
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;
const FRONT_MATTER_KEYS = ['description', 'variables', 'initial_prompt'];
const VARIABLE_KEYS = ['required', 'default', 'description'];
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

export function parseTemplate(text: string, where: string): PromptTemplate {
  const match = FRONT_MATTER.exec(text);
  if (!match) return { variables: {}, body: text };
  let raw: unknown;
  try {
    raw = parseYaml(match[1] as string) ?? {};
  } catch (error) {
    throw new UsageError(`${where}: the front matter is not valid YAML: ${(error as Error).message.split('\n')[0]}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new UsageError(`${where}: the front matter must be a YAML mapping`);
  const front = raw as Record<string, unknown>;
  for (const key of Object.keys(front)) {
    if (!FRONT_MATTER_KEYS.includes(key)) throw new UsageError(`${where}: unknown front matter key "${key}"; allowed keys: ${FRONT_MATTER_KEYS.join(', ')}`);
  }
  const variables: Record<string, TemplateVariable> = {};
  const declared = front.variables ?? {};
  if (typeof declared !== 'object' || declared === null || Array.isArray(declared))
    throw new UsageError(`${where}: "variables" must be a mapping of name to {required, default, description}`);
  for (const [name, spec] of Object.entries(declared as Record<string, unknown>)) {
    const entry = (spec ?? {}) as Record<string, unknown>;
    if (typeof entry !== 'object' || Array.isArray(entry))
      throw new UsageError(`${where}: variables.${name} must be a mapping with required, default, description`);
    for (const key of Object.keys(entry)) {
      if (!VARIABLE_KEYS.includes(key)) throw new UsageError(`${where}: variables.${name}: unknown key "${key}"; allowed keys: ${VARIABLE_KEYS.join(', ')}`);
    }
    variables[name] = {
      required: entry.required === true,
      ...(entry.default !== undefined && entry.default !== null ? { default: String(entry.default) } : {}),
      ...(typeof entry.description === 'string' ? { description: entry.description } : {}),
    };
  }
  const initial = front.initial_prompt;
  if (initial !== undefined && typeof initial !== 'string') throw new UsageError(`${where}: initial_prompt must be a string`);
  return {
    ...(typeof front.description === 'string' ? { description: front.description } : {}),
    variables,
    ...(initial ? { initialPrompt: initial } : {}),
    body: text.slice(match[0].length),
  };
}

/** Fills {{name}} placeholders; a placeholder without a value is an error naming it. */
export function fillPlaceholders(text: string, values: Record<string, string>, where: string): string {
  return text.replace(PLACEHOLDER, (_whole, name: string) => {
    const value = values[name];
    if (value === undefined) throw new UsageError(`${where}: no value for template variable "${name}"; pass --var ${name}=VALUE`);
    return value;
  });
}

export interface AutomaticVariableSource {
  profile: Profile;
  workingDir: string;
  /** One line per configured database, e.g. "sales (sqlite: /data/sales.db)"; passwords never included. */
  databases: string[];
}

export function automaticVariables(source: AutomaticVariableSource): Record<string, string> {
  return {
    platform: `${process.platform} (${process.arch})`,
    working_dir: source.workingDir,
    profile: source.profile.name,
    shell_mode: source.profile.shell,
    file_write_mode: source.profile.file_write,
    database_mode: source.profile.database,
    databases: source.databases.length ? source.databases.join('; ') : 'none configured',
  };
}

/** --var K=V pairs. */
export function parseVarFlags(pairs: readonly string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`--var expects NAME=VALUE, got "${pair}"`);
    values[pair.slice(0, eq).trim()] = pair.slice(eq + 1);
  }
  return values;
}

/** --vars-file: a YAML (or JSON) mapping of names to scalar values. */
export function readVarsFile(path: string): Record<string, string> {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    throw new UsageError(`--vars-file ${path}: ${err.code === 'ENOENT' ? 'no such file' : err.message.split('\n')[0]}`);
  }
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new UsageError(`--vars-file ${path}: expected a mapping of NAME: VALUE`);
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (value !== null && typeof value === 'object') throw new UsageError(`--vars-file ${path}: "${name}" must be a plain value, not a list or mapping`);
    values[name] = value === null ? '' : String(value);
  }
  return values;
}

/** A path, or a name of $QUARRY_HOME/prompts/NAME.md. */
export function findTemplateFile(requested: string, cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const direct = resolve(cwd, requested);
  if (existsSync(direct)) return direct;
  for (const candidate of [join(quarryHome(env), 'prompts', requested), join(quarryHome(env), 'prompts', `${requested}.md`)]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new UsageError(`--system-prompt: no such file: ${direct} (nor a prompt named "${requested}" in ${join(quarryHome(env), 'prompts')})`);
}

export interface SystemPromptOptions {
  file?: string;
  vars: Record<string, string>;
  automatic: Record<string, string>;
  cwd: string;
}

export interface BuiltPrompt {
  system: string;
  /** From the template's front matter: sent as the first user message when no prompt is given. */
  initialPrompt?: string;
}

export function buildSystemPrompt(options: SystemPromptOptions): BuiltPrompt {
  if (!options.file) return { system: fillPlaceholders(DEFAULT_SYSTEM_PROMPT, { ...options.automatic, ...options.vars }, 'default system prompt') };
  const path = findTemplateFile(options.file, options.cwd);
  const template = parseTemplate(readFileSync(path, 'utf8'), path);
  const defaults: Record<string, string> = {};
  for (const [name, spec] of Object.entries(template.variables)) if (spec.default !== undefined) defaults[name] = spec.default;
  const values = { ...options.automatic, ...defaults, ...options.vars };
  for (const [name, spec] of Object.entries(template.variables)) {
    if (spec.required && values[name] === undefined) {
      throw new UsageError(
        `${path}: required template variable "${name}" has no value; pass --var ${name}=VALUE${spec.description ? ` (${spec.description})` : ''}`,
      );
    }
  }
  return {
    system: fillPlaceholders(template.body, values, path),
    ...(template.initialPrompt ? { initialPrompt: fillPlaceholders(template.initialPrompt, values, `${path} initial_prompt`) } : {}),
  };
}
