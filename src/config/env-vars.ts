/**
 * Every environment variable quarry reads, with what it does: the one list that
 * docs/reference/environment.md is generated from (scripts/gen-reference.mjs), and that a test
 * (test/config/env-vars.test.ts) checks every variable read in src/ against. A variable added to
 * the code goes here too.
 */

export interface EnvVar {
  name: string;
  /** What it sets, in one sentence or two. */
  description: string;
  group: 'quarry' | 'models' | 'databases' | 'daytona' | 'system';
}

const DATABASE_SERVER_VARIABLES = (prefix: string, engine: string, nameVariables: readonly string[]): EnvVar[] => [
  { name: `${prefix}_HOST`, description: `A ${engine} database from the environment: its host (default localhost).`, group: 'databases' },
  { name: `${prefix}_PORT`, description: `The ${engine} port (default: the engine's).`, group: 'databases' },
  ...nameVariables.map((name, index) => ({
    name,
    description:
      index === 0 ? `The ${engine} database name.` : `The ${engine} database name, as the official Docker image names it (same as ${nameVariables[0]}).`,
    group: 'databases' as const,
  })),
  { name: `${prefix}_USER`, description: `The ${engine} login.`, group: 'databases' },
  { name: `${prefix}_PASSWORD`, description: `The ${engine} password.`, group: 'databases' },
];

const PROVIDER_KEYS: Array<[string, string]> = [
  ['DEEPSEEK_API_KEY', 'DeepSeek'],
  ['OPENROUTER_API_KEY', 'OpenRouter'],
  ['GROQ_API_KEY', 'Groq'],
  ['MISTRAL_API_KEY', 'Mistral'],
  ['GEMINI_API_KEY', 'Gemini'],
  ['XAI_API_KEY', 'xAI'],
  ['TOGETHER_API_KEY', 'Together AI'],
  ['FIREWORKS_API_KEY', 'Fireworks'],
  ['MOONSHOT_API_KEY', 'Moonshot'],
  ['LMSTUDIO_API_KEY', 'LM Studio (optional)'],
  ['VLLM_API_KEY', 'vLLM (optional)'],
];

export const ENV_VARS: readonly EnvVar[] = [
  { name: 'QUARRY_HOME', description: "quarry's home (default ~/.quarry): config.yaml, profiles/, prompts/, sessions/, repl_history.", group: 'quarry' },
  { name: 'QUARRY_PROFILE', description: 'The default profile (default readonly); --profile overrides it.', group: 'quarry' },
  { name: 'QUARRY_MODEL', description: 'The default model (PROVIDER/MODEL); --model overrides it.', group: 'quarry' },
  { name: 'QUARRY_DB_CONFIG', description: 'A YAML file of databases, like --databases.', group: 'quarry' },
  { name: 'QUARRY_MCP_TOKEN', description: 'The bearer token of quarry mcp --http (same as --token).', group: 'quarry' },
  { name: 'QUARRY_MCP_MAX_SESSIONS', description: 'quarry mcp --http: the most client sessions at once (default 64).', group: 'quarry' },
  { name: 'QUARRY_MCP_SESSION_IDLE_SECONDS', description: 'quarry mcp --http: seconds unused before a session is closed (default 1800).', group: 'quarry' },
  { name: 'QUARRY_USER', description: 'Who quarry knowledge add and /verify record as verified_by (default $USER).', group: 'quarry' },
  { name: 'QUARRY_EXCEL_SECONDS', description: 'The time limit of one read_excel call, in seconds (default 60).', group: 'quarry' },
  { name: 'QUARRY_NO_BWRAP', description: "1: turn the restricted shell's OS layer (bubblewrap) off, to see the policy layer alone.", group: 'quarry' },
  { name: 'QUARRY_NO_RIPGREP', description: '1: the grep tool uses GNU grep instead of the bundled ripgrep (tests).', group: 'quarry' },
  { name: 'QUARRY_RETRY_BASE_MS', description: 'The first retry delay of model requests, in milliseconds (tests use 1).', group: 'quarry' },
  { name: 'OPENAI_API_KEY', description: 'The key for openai/NAME models and OpenAI-compatible endpoints.', group: 'models' },
  { name: 'OPENAI_BASE_URL', description: 'An OpenAI-compatible endpoint (same as --base-url).', group: 'models' },
  { name: 'ANTHROPIC_API_KEY', description: 'The key for anthropic/NAME models.', group: 'models' },
  { name: 'ANTHROPIC_BASE_URL', description: "Another address for Anthropic's API.", group: 'models' },
  { name: 'OLLAMA_HOST', description: 'The Ollama server for ollama/NAME models (default 127.0.0.1:11434).', group: 'models' },
  ...PROVIDER_KEYS.map(([name, provider]) => ({ name, description: `The key of the ${provider} provider preset.`, group: 'models' as const })),
  { name: 'SQLITE_DB', description: 'SQLite database files from the environment, comma-separated.', group: 'databases' },
  ...DATABASE_SERVER_VARIABLES('POSTGRES', 'PostgreSQL', ['POSTGRES_DATABASE', 'POSTGRES_DB']),
  ...DATABASE_SERVER_VARIABLES('MYSQL', 'MySQL / MariaDB', ['MYSQL_DATABASE']),
  ...DATABASE_SERVER_VARIABLES('VERTICA', 'Vertica', ['VERTICA_DATABASE', 'VERTICA_DB']),
  ...DATABASE_SERVER_VARIABLES('CLICKHOUSE', 'ClickHouse', ['CLICKHOUSE_DATABASE', 'CLICKHOUSE_DB']),
  { name: 'ORACLE_DSN', description: 'An Oracle database from the environment: its Easy Connect string (host:port/service) or TNS alias.', group: 'databases' },
  { name: 'ORACLE_USER', description: 'The Oracle login.', group: 'databases' },
  { name: 'ORACLE_PASSWORD', description: 'The Oracle password.', group: 'databases' },
  { name: 'DAYTONA_API_KEY', description: 'The Daytona key (the daytona profile runs tools in a Daytona sandbox).', group: 'daytona' },
  { name: 'DAYTONA_API_URL', description: "Another address for Daytona's API.", group: 'daytona' },
  { name: 'DAYTONA_SANDBOX_IMAGE', description: "The sandbox's image.", group: 'daytona' },
  { name: 'DAYTONA_SANDBOX_CPU', description: "The sandbox's CPU cores.", group: 'daytona' },
  { name: 'DAYTONA_SANDBOX_MEMORY', description: "The sandbox's memory in MB.", group: 'daytona' },
  { name: 'DAYTONA_SANDBOX_DISK', description: "The sandbox's disk in GB.", group: 'daytona' },
  { name: 'NO_COLOR', description: 'Set: no colours (like --no-color).', group: 'system' },
  { name: 'HOME', description: 'Where ~ is, for ~/.quarry and SSH files.', group: 'system' },
  { name: 'USER', description: 'The default SSH login and verified_by.', group: 'system' },
  { name: 'LOGNAME', description: 'The default SSH login when USER is not set.', group: 'system' },
  { name: 'PATH', description: 'Where programs are found (the shell, bubblewrap, MCP servers).', group: 'system' },
  { name: 'SSH_AUTH_SOCK', description: 'The SSH agent that SSH tunnels use when no identity_file is given.', group: 'system' },
  { name: 'TMPDIR', description: 'The temporary folder (create-only writes and exports may go there).', group: 'system' },
];
