import { ConfigError } from '../errors.js';
import { parseConfigText, readConfigFile, type ConfigDocument } from './config-file.js';
import { configFileLocation } from './home.js';
import { interpolateEnv, isMapping } from './yaml.js';

/**
 * MCP servers from `mcp_servers:` in `$QUARRY_HOME/config.yaml` or the `--config FILE` (docs/guide/mcp.md "MCP servers"):
 *
 *   mcp_servers:
 *     files: {type: stdio, command: [npx, -y, "@modelcontextprotocol/server-filesystem", /data], env: {TOKEN: "${MY_TOKEN}"}}
 *     search: {type: http, url: "https://example.com/mcp", headers: {Authorization: "Bearer ${SEARCH_KEY}"}, tool_timeout_secs: 120}
 *
 * Strings may use ${VAR}; an unset variable is an error naming it. The file's other top-level
 * key (databases) is read by src/config/databases.ts; any other key is an error (src/config/config-file.ts).
 */

export const DEFAULT_STARTUP_TIMEOUT_SECS = 10;
export const DEFAULT_TOOL_TIMEOUT_SECS = 60;

interface CommonServerConfig {
  name: string;
  startupTimeoutMs: number;
  toolTimeoutMs: number;
  /** `allow_outward: true`: the user vouches for this server as a destination, so its tools are not outward tools (docs/security.md). */
  allowOutward: boolean;
}

export interface StdioServerConfig extends CommonServerConfig {
  type: 'stdio';
  command: string[];
  env: Record<string, string>;
  cwd: string | undefined;
}

export interface HttpServerConfig extends CommonServerConfig {
  type: 'http';
  url: string;
  headers: Record<string, string>;
}

export type McpServerConfig = StdioServerConfig | HttpServerConfig;

const COMMON_KEYS = ['type', 'startup_timeout_secs', 'tool_timeout_secs', 'allow_outward'];
const KEYS_BY_TYPE = {
  stdio: [...COMMON_KEYS, 'command', 'env', 'cwd'],
  http: [...COMMON_KEYS, 'url', 'headers'],
} as const;

function stringMap(raw: unknown, where: string, env: NodeJS.ProcessEnv): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isMapping(raw)) throw new ConfigError(`${where} must be a mapping of names to strings`);
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') throw new ConfigError(`${where}.${key} must be a string`);
    out[key] = interpolateEnv(String(value), env, `${where}.${key}`);
  }
  return out;
}

function seconds(raw: unknown, where: string, fallback: number): number {
  if (raw === undefined || raw === null) return fallback * 1000;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0)
    throw new ConfigError(`${where} must be a positive number of seconds (got ${JSON.stringify(raw)})`);
  return raw * 1000;
}

function flag(raw: unknown, where: string): boolean {
  if (raw === undefined || raw === null) return false;
  if (typeof raw !== 'boolean') throw new ConfigError(`${where} must be true or false (got ${JSON.stringify(raw)})`);
  return raw;
}

function parseServer(name: string, raw: unknown, file: string, env: NodeJS.ProcessEnv): McpServerConfig {
  const where = `${file}: mcp_servers.${name}`;
  if (!isMapping(raw)) throw new ConfigError(`${where} must be a mapping with "type: stdio" or "type: http"`);
  const type = raw.type;
  if (type !== 'stdio' && type !== 'http') throw new ConfigError(`${where}.type must be stdio or http (got ${JSON.stringify(type ?? null)})`);
  const allowed: readonly string[] = KEYS_BY_TYPE[type];
  const unknown = Object.keys(raw).filter((key) => !allowed.includes(key));
  if (unknown.length > 0)
    throw new ConfigError(`${where}: unknown key ${unknown.map((key) => `"${key}"`).join(', ')}; a ${type} server takes ${allowed.join(', ')}`);
  const common = {
    name,
    startupTimeoutMs: seconds(raw.startup_timeout_secs, `${where}.startup_timeout_secs`, DEFAULT_STARTUP_TIMEOUT_SECS),
    toolTimeoutMs: seconds(raw.tool_timeout_secs, `${where}.tool_timeout_secs`, DEFAULT_TOOL_TIMEOUT_SECS),
    allowOutward: flag(raw.allow_outward, `${where}.allow_outward`),
  };
  if (type === 'stdio') {
    const command = raw.command;
    if (!Array.isArray(command) || command.length === 0 || !command.every((part) => typeof part === 'string' || typeof part === 'number')) {
      throw new ConfigError(
        `${where}.command must be a non-empty list: the program and its arguments, e.g. [npx, -y, "@modelcontextprotocol/server-filesystem", /data]`,
      );
    }
    const cwd = raw.cwd === undefined ? undefined : interpolateEnv(String(raw.cwd), env, `${where}.cwd`);
    return {
      ...common,
      type,
      command: command.map((part, index) => interpolateEnv(String(part), env, `${where}.command[${index}]`)),
      env: stringMap(raw.env, `${where}.env`, env),
      cwd,
    };
  }
  if (typeof raw.url !== 'string' || raw.url.trim() === '') throw new ConfigError(`${where}.url must be the server's http(s) URL`);
  const url = interpolateEnv(raw.url, env, `${where}.url`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(`${where}.url is not a valid URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(`${where}.url must start with http:// or https://`);
  return { ...common, type, url, headers: stringMap(raw.headers, `${where}.headers`, env) };
}

/** Parses the `mcp_servers` key of a config document (YAML text). */
export function parseMcpServers(text: string, file: string, env: NodeJS.ProcessEnv = process.env): McpServerConfig[] {
  return mcpServersOf(parseConfigText(text, file), env);
}

/** The `mcp_servers` of a config file already read (src/config/config-file.ts). */
export function mcpServersOf(config: ConfigDocument, env: NodeJS.ProcessEnv = process.env): McpServerConfig[] {
  const { file, settings } = config;
  const servers = settings.mcp_servers;
  if (servers === undefined || servers === null) return [];
  if (!isMapping(servers)) throw new ConfigError(`${file}: mcp_servers must be a mapping of server name to settings`);
  return Object.entries(servers).map(([name, raw]) => parseServer(name, raw, file, env));
}

/** The config file to read: `--config FILE` (must exist) or `$QUARRY_HOME/config.yaml` (optional). */
export function loadMcpServers(configFile: string | undefined, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): McpServerConfig[] {
  return mcpServersOf(readConfigFile(configFileLocation(configFile, env, cwd)), env);
}
