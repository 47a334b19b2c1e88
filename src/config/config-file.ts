import type { ConfigFileLocation } from './home.js';
import { readYamlMapping, readYamlText } from './yaml.js';

/** The top-level keys of config.yaml (and of a `--databases` file, which may be the same file). */
export const CONFIG_KEYS = ['databases', 'mcp_servers', 'knowledge'] as const;

/** A config.yaml (or `--databases` file) read and checked: its top-level settings and the file they came from. */
export interface ConfigDocument {
  file: string;
  settings: Record<string, unknown>;
}

/** Every config file this process has read (the known secret values include theirs: src/security/secret-values.ts). */
const filesRead = new Set<string>();

export function configFilesRead(): string[] {
  return [...filesRead];
}

/** Parses the text of a config file: a mapping whose keys are CONFIG_KEYS, as schemas/config.schema.json describes (docs/guide/databases.md, files). */
export function parseConfigText(text: string, file: string): ConfigDocument {
  filesRead.add(file);
  return {
    file,
    settings: readYamlMapping(text, file, { keys: CONFIG_KEYS, notMapping: 'expected a mapping of settings at the top level', schema: 'config' }),
  };
}

/**
 * Reads the config file a command uses (home.ts configFileLocation decides which): a `--config`
 * file that is missing or a folder is an error naming the flag; the default one may be absent
 * (then nothing is configured). Every command reads it through here, so each treats it alike.
 */
export function readConfigFile(location: ConfigFileLocation): ConfigDocument {
  const text = readYamlText(location.path, location.flag);
  return text === undefined ? { file: location.path, settings: {} } : parseConfigText(text, location.path);
}
