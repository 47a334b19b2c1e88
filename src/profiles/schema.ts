import { checkKnownKeys, checkYamlMapping } from '../config/yaml.js';
import { ProfileError } from '../errors.js';
import { MAX_BASH_TIMEOUT_SECONDS, SHELL_NETWORK_MODES, type ShellNetwork } from '../tools/bash/bash-options.js';
import { QUERY_GUARD_ACTIONS, type QueryGuard } from '../tools/database/types.js';
import { FILE_WRITE_MODES, type FileWriteMode } from '../tools/core/write-policy.js';

/**
 * What a profile is and how one is checked. Validation is strict: an unknown key or a bad
 * value is an error that names the key and lists what is allowed.
 */

export const SHELL_MODES = ['restricted', 'unrestricted'] as const;
export const DATABASE_MODES = ['readonly', 'mutations'] as const;
export const APPROVAL_MODES = ['all', 'dangerous', 'granular', 'none'] as const;
export const BACKENDS = ['local', 'daytona'] as const;
/** The outward-tool rule (docs/security.md): what happens to a call of an outward tool once untrusted content is in the conversation. */
export const UNTRUSTED_DATA_MODES = ['ask', 'refuse', 'allow'] as const;
// The vocabularies the tools interpret are theirs; the profile names them.
export { FILE_WRITE_MODES, QUERY_GUARD_ACTIONS, SHELL_NETWORK_MODES, type FileWriteMode, type QueryGuard, type ShellNetwork };
export const MAX_SHELL_TIMEOUT_SECONDS = MAX_BASH_TIMEOUT_SECONDS;

export type ShellMode = (typeof SHELL_MODES)[number];
export type DatabaseMode = (typeof DATABASE_MODES)[number];
export type ApprovalMode = (typeof APPROVAL_MODES)[number];
export type BackendName = (typeof BACKENDS)[number];
export type UntrustedDataMode = (typeof UNTRUSTED_DATA_MODES)[number];

export interface ApprovalPolicy {
  mode: ApprovalMode;
  /** Tool names that always need approval (granular mode). */
  tools: string[];
  /** Regular expressions (case-insensitive) checked against a call's arguments (granular mode). */
  patterns: string[];
}

const QUERY_GUARD_KEYS = ['max_estimated_rows', 'action'] as const;
/** The guard a profile gets when it says nothing (readonly's). */
export const DEFAULT_QUERY_GUARD: QueryGuard = { max_estimated_rows: 10_000_000, action: 'ask' };
export const MAX_PROFILE_BUDGET_SECONDS = 600;

export interface Profile {
  name: string;
  description: string;
  shell: ShellMode;
  file_write: FileWriteMode;
  database: DatabaseMode;
  approval: ApprovalPolicy;
  /** Default bash timeout in seconds. */
  shell_timeout: number;
  /** The restricted shell's network: none (default), loopback (this host only) or all. */
  shell_network: ShellNetwork;
  backend: BackendName;
  /** Optional allow-list of tool names; absent means every tool the modes permit. */
  tools?: string[];
  /** Extra directories where create-only writes and exports may go. */
  write_roots: string[];
  /** The cost guard of the database tools, or null when off (`query_guard: off`). */
  query_guard: QueryGuard | null;
  /** Seconds a database `profile` operation may take in all (default 10). */
  profile_budget_seconds: number;
  /** Questions the ask_user tool may put to the user in one run (default 3); after them it answers that no one can be asked. */
  ask_user_budget: number;
  /** Outward calls after untrusted content: ask (default; --yes does not answer it), refuse, or allow. */
  untrusted_data: UntrustedDataMode;
  /** Where the profile came from (a built-in name or a file path), for display. */
  source: string;
}

type Raw = Record<string, unknown>;

/**
 * The names a profile's `tools` list may use: the built-in tools (src/agent/toolset.ts; a test
 * checks the two lists agree), the database tools (one per engine), and MCP tools
 * (`mcp__SERVER__TOOL`, whose servers are known only at run time). An entry ending in `*` is a
 * prefix and must match one of these or start with `mcp__`.
 */
export const BUILTIN_TOOL_NAMES = ['read', 'read_excel', 'grep', 'glob', 'list', 'bash', 'write', 'edit', 'delegate', 'ask_user'] as const;
export const DATABASE_TOOL_NAMES = ['sqlite', 'postgres', 'mysql', 'oracle', 'vertica', 'duckdb', 'clickhouse'] as const;
/** Tools that exist when their inputs do: chart (every session), knowledge (with a knowledge folder, docs/guide/knowledge.md). */
const CONDITIONAL_TOOL_NAMES = ['chart', 'knowledge'] as const;
const MCP_PREFIX = 'mcp__';

function checkToolNames(where: string, tools: string[]): void {
  const known: readonly string[] = [...BUILTIN_TOOL_NAMES, ...DATABASE_TOOL_NAMES, ...CONDITIONAL_TOOL_NAMES];
  for (const entry of tools) {
    const prefix = entry.endsWith('*') ? entry.slice(0, -1) : undefined;
    const ok =
      prefix !== undefined
        ? prefix.startsWith(MCP_PREFIX) || MCP_PREFIX.startsWith(prefix) || known.some((name) => name.startsWith(prefix))
        : known.includes(entry) || (entry.startsWith(MCP_PREFIX) && entry.length > MCP_PREFIX.length);
    if (!ok) {
      throw new ProfileError(
        `${where}: "tools" names an unknown tool "${entry}"; known tools: ${known.join(', ')}, and MCP tools as mcp__SERVER__TOOL (a trailing * matches a ` +
          `prefix)`,
      );
    }
  }
}

const TOP_LEVEL_KEYS = [
  'name',
  'description',
  'shell',
  'file_write',
  'database',
  'approval',
  'shell_timeout',
  'shell_network',
  'backend',
  'tools',
  'write_roots',
  'query_guard',
  'profile_budget_seconds',
  'ask_user_budget',
  'untrusted_data',
] as const;
const APPROVAL_KEYS = ['mode', 'tools', 'patterns'] as const;

/** Defaults are the safe ones: a profile that says nothing is as strict as `readonly`. */
const DEFAULTS = {
  shell: 'restricted',
  file_write: 'off',
  database: 'readonly',
  approval_mode: 'dangerous',
  shell_timeout: 120,
  shell_network: 'none',
  backend: 'local',
  untrusted_data: 'ask',
} as const;

function describeValue(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

function isPlainObject(value: unknown): value is Raw {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkKeys(where: string, raw: Raw, allowed: readonly string[]): void {
  checkKnownKeys(raw, where, allowed, ProfileError);
}

function oneOf<T extends string>(where: string, key: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ProfileError(`${where}: "${key}" is ${describeValue(value)}; allowed values: ${allowed.join(', ')}`);
  }
  return value as T;
}

function stringList(where: string, key: string, value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item === '')) {
    throw new ProfileError(`${where}: "${key}" must be a list of non-empty strings, got ${describeValue(value)}`);
  }
  return value as string[];
}

/** Checks a parsed YAML document and fills in defaults. `where` names the source in errors. */
export function parseProfile(document: unknown, where: string, fallbackName: string): Profile {
  // An empty file (YAML null) is a profile that sets nothing: every key has its default.
  const raw = checkYamlMapping(document ?? {}, where, {
    keys: TOP_LEVEL_KEYS,
    notMapping: `a profile must be a YAML mapping of keys (${TOP_LEVEL_KEYS.join(', ')})`,
    Kind: ProfileError,
    schema: 'profile',
  });

  const name = raw.name ?? fallbackName;
  if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) {
    throw new ProfileError(`${where}: "name" must be letters, digits, '.', '_' or '-', got ${describeValue(name)}`);
  }
  const description = raw.description ?? '';
  if (typeof description !== 'string') {
    throw new ProfileError(`${where}: "description" must be a string, got ${describeValue(description)}`);
  }

  const approvalRaw = raw.approval ?? {};
  if (!isPlainObject(approvalRaw)) {
    throw new ProfileError(`${where}: "approval" must be a mapping with keys ${APPROVAL_KEYS.join(', ')}`);
  }
  checkKeys(`${where}: approval`, approvalRaw, APPROVAL_KEYS);
  const patterns = stringList(where, 'approval.patterns', approvalRaw.patterns) ?? [];
  for (const pattern of patterns) {
    try {
      new RegExp(pattern, 'i');
    } catch (error) {
      throw new ProfileError(`${where}: "approval.patterns" entry ${JSON.stringify(pattern)} is not a valid regular expression (${(error as Error).message})`);
    }
  }

  const timeout = raw.shell_timeout ?? DEFAULTS.shell_timeout;
  if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_SHELL_TIMEOUT_SECONDS) {
    throw new ProfileError(`${where}: "shell_timeout" must be a whole number of seconds from 1 to ${MAX_SHELL_TIMEOUT_SECONDS}, got ${describeValue(timeout)}`);
  }

  const budget = raw.profile_budget_seconds ?? 10;
  if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1 || budget > MAX_PROFILE_BUDGET_SECONDS) {
    throw new ProfileError(
      `${where}: "profile_budget_seconds" must be a whole number of seconds from 1 to ${MAX_PROFILE_BUDGET_SECONDS}, got ${describeValue(budget)}`,
    );
  }

  const tools = stringList(where, 'tools', raw.tools);
  if (tools) checkToolNames(where, tools);
  const approvalTools = stringList(where, 'approval.tools', approvalRaw.tools) ?? [];
  checkToolNames(`${where}: approval`, approvalTools);
  return {
    name,
    description,
    shell: oneOf(where, 'shell', raw.shell, SHELL_MODES, DEFAULTS.shell),
    file_write: oneOf(where, 'file_write', raw.file_write, FILE_WRITE_MODES, DEFAULTS.file_write),
    database: oneOf(where, 'database', raw.database, DATABASE_MODES, DEFAULTS.database),
    approval: {
      mode: oneOf(where, 'approval.mode', approvalRaw.mode, APPROVAL_MODES, DEFAULTS.approval_mode),
      tools: approvalTools,
      patterns,
    },
    shell_timeout: timeout,
    shell_network: oneOf(where, 'shell_network', raw.shell_network, SHELL_NETWORK_MODES, DEFAULTS.shell_network),
    backend: oneOf(where, 'backend', raw.backend, BACKENDS, DEFAULTS.backend),
    ...(tools ? { tools } : {}),
    write_roots: stringList(where, 'write_roots', raw.write_roots) ?? [],
    query_guard: parseQueryGuard(where, raw.query_guard),
    profile_budget_seconds: budget,
    ask_user_budget: askUserBudget(where, raw.ask_user_budget),
    untrusted_data: oneOf(where, 'untrusted_data', raw.untrusted_data, UNTRUSTED_DATA_MODES, DEFAULTS.untrusted_data),
    source: where,
  };
}

export const DEFAULT_ASK_USER_BUDGET = 3;

function askUserBudget(where: string, value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_ASK_USER_BUDGET;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 100)
    throw new ProfileError(`${where}: "ask_user_budget" must be a whole number of questions from 0 to 100, got ${describeValue(value)}`);
  return value;
}

/** `query_guard: off`, or a mapping {max_estimated_rows, action}; absent means DEFAULT_QUERY_GUARD. */
function parseQueryGuard(where: string, raw: unknown): QueryGuard | null {
  if (raw === undefined || raw === null) return { ...DEFAULT_QUERY_GUARD };
  if (raw === 'off' || raw === false) return null;
  if (!isPlainObject(raw)) {
    throw new ProfileError(`${where}: "query_guard" must be off or a mapping with keys ${QUERY_GUARD_KEYS.join(', ')}, got ${describeValue(raw)}`);
  }
  checkKeys(`${where}: query_guard`, raw, QUERY_GUARD_KEYS);
  const rows = raw.max_estimated_rows ?? DEFAULT_QUERY_GUARD.max_estimated_rows;
  if (typeof rows !== 'number' || !Number.isInteger(rows) || rows < 1) {
    throw new ProfileError(`${where}: "query_guard.max_estimated_rows" must be a whole number of rows (1 or more), got ${describeValue(rows)}`);
  }
  return { max_estimated_rows: rows, action: oneOf(where, 'query_guard.action', raw.action, QUERY_GUARD_ACTIONS, DEFAULT_QUERY_GUARD.action) };
}
