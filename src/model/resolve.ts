import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config/home.js';
import type { ModelProvider, ProviderQuirks } from './types.js';
import { ModelError } from './types.js';

/**
 * Which provider and model a run uses, from --model / QUARRY_MODEL and --base-url / OPENAI_BASE_URL:
 * - `script:FILE`: the scripted provider.
 * - `PRESET/NAME` for the OpenAI-compatible providers in PROVIDER_PRESETS (deepseek, openrouter,
 *   groq, mistral, gemini, xai, together, fireworks, moonshot, lmstudio, vllm): the preset's base URL
 *   (or --base-url), key variable, headers and quirks; NAME is sent without the prefix.
 * - `--base-url URL --model NAME`: an OpenAI-compatible endpoint serving NAME (sent verbatim, so
 *   OpenRouter names such as `meta-llama/llama-3.1-70b` work), except the prefixes above.
 * - `openai/NAME` (OPENAI_API_KEY; OPENAI_BASE_URL relocates it), `anthropic/NAME`
 *   (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL), `ollama/NAME` (a local Ollama, OLLAMA_HOST or 127.0.0.1:11434).
 * - a bare NAME: an OpenAI-compatible endpoint when OPENAI_BASE_URL is set; otherwise `claude*`
 *   means Anthropic and `gpt-*`, `o1/o3/o4*` OpenAI.
 */

/**
 * The no-model hint's last line: `npm run demo` only where it can run (a checkout with the demo's
 * script in fixtures/); an installed package has no fixtures/, so there it names script:FILE.
 */
function noModelLine(): string {
  return existsSync(join(packageRoot(), 'fixtures', 'demo', 'analyst.json'))
    ? '  No model at all (replays a scripted conversation): npm run demo'
    : '  No model at all: replay a scripted conversation with --model script:FILE (docs/guide/models.md, "The scripted provider", describes the file)';
}

export const howToConfigureAModel = (): string =>
  [
    'no model configured. Choose one with --model (or the QUARRY_MODEL environment variable):',
    '  OpenAI:        export OPENAI_API_KEY=sk-...      then  quarry --model openai/gpt-4.1 "your question"',
    '  Anthropic:     export ANTHROPIC_API_KEY=sk-ant-... then  quarry --model anthropic/claude-sonnet-4-5 "your question"',
    '  Local server (Ollama, vLLM, LM Studio, LiteLLM; any OpenAI-compatible endpoint):',
    '                 quarry --base-url http://127.0.0.1:11434/v1 --model llama3.1 "your question"   (or --model ollama/llama3.1)',
    '  Other providers: deepseek/, openrouter/, groq/, mistral/, gemini/, xai/, together/, fireworks/, moonshot/, lmstudio/, vllm/',
    '                 e.g. export DEEPSEEK_API_KEY=... then quarry --model deepseek/deepseek-chat "your question" (docs/guide/models.md)',
    noModelLine(),
  ].join('\n');

export const DEFAULT_OLLAMA_URL = 'http://127.0.0.1:11434';
/** For models not in the table below; pass --context-window for local models with smaller windows. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/**
 * The one table of known context windows (docs/guide/models.md), matched on the model name
 * after its last `/`, first match wins.
 */
export const CONTEXT_WINDOWS: [RegExp, number][] = [
  [/^claude-/, 200_000],
  [/^deepseek-(chat|reasoner|v3)/, 128_000],
  [/^gemini-(1\.5-pro|2|3)/, 1_048_576],
  [/^grok-4/, 256_000],
  [/^grok-(3|code)/, 131_072],
  [/^(mistral-large|mistral-medium|magistral|codestral|devstral)/, 128_000],
  [/^(kimi-k2|moonshot-v1-128k)/, 131_072],
  [/^(llama-3\.[123]|llama-4|meta-llama-3\.1)/i, 131_072],
  [/^qwen3/i, 32_768],
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-5/, 400_000],
  [/^gpt-4o/, 128_000],
  [/^gpt-4-turbo/, 128_000],
  [/^o[134](-|$)/, 200_000],
  [/^gpt-3\.5/, 16_385],
];

export function knownContextWindow(model: string): number {
  const bare = model.includes('/') ? model.slice(model.lastIndexOf('/') + 1) : model;
  return CONTEXT_WINDOWS.find(([pattern]) => pattern.test(bare))?.[1] ?? DEFAULT_CONTEXT_WINDOW;
}

export interface ModelChoice {
  kind: 'script' | 'openai' | 'anthropic';
  model: string;
  label: string;
  baseURL?: string;
  apiKey?: string;
  headers?: Record<string, string>;
  quirks?: ProviderQuirks;
}

/** An OpenAI-compatible provider reached as `PREFIX/MODEL` (docs/guide/models.md). */
export interface ProviderPreset {
  name: string;
  baseURL: string;
  /** The provider's usual key variable (for local servers it is sent only when set). */
  keyVariable: string;
  /** Local servers need no key. */
  keyOptional?: boolean;
  headers?: Record<string, string>;
  quirks?: ProviderQuirks;
}

export const PROVIDER_PRESETS: Record<string, ProviderPreset> = {
  deepseek: { name: 'DeepSeek', baseURL: 'https://api.deepseek.com', keyVariable: 'DEEPSEEK_API_KEY' },
  openrouter: { name: 'OpenRouter', baseURL: 'https://openrouter.ai/api/v1', keyVariable: 'OPENROUTER_API_KEY', headers: { 'X-Title': 'quarry' } },
  groq: { name: 'Groq', baseURL: 'https://api.groq.com/openai/v1', keyVariable: 'GROQ_API_KEY' },
  mistral: { name: 'Mistral', baseURL: 'https://api.mistral.ai/v1', keyVariable: 'MISTRAL_API_KEY', quirks: { noStreamOptions: true } },
  gemini: { name: 'Gemini', baseURL: 'https://generativelanguage.googleapis.com/v1beta/openai', keyVariable: 'GEMINI_API_KEY' },
  xai: { name: 'xAI', baseURL: 'https://api.x.ai/v1', keyVariable: 'XAI_API_KEY', quirks: { reasoningTokensSeparate: true } },
  together: { name: 'Together AI', baseURL: 'https://api.together.xyz/v1', keyVariable: 'TOGETHER_API_KEY' },
  fireworks: { name: 'Fireworks', baseURL: 'https://api.fireworks.ai/inference/v1', keyVariable: 'FIREWORKS_API_KEY' },
  moonshot: { name: 'Moonshot', baseURL: 'https://api.moonshot.ai/v1', keyVariable: 'MOONSHOT_API_KEY' },
  lmstudio: { name: 'LM Studio', baseURL: 'http://127.0.0.1:1234/v1', keyVariable: 'LMSTUDIO_API_KEY', keyOptional: true },
  vllm: { name: 'vLLM', baseURL: 'http://127.0.0.1:8000/v1', keyVariable: 'VLLM_API_KEY', keyOptional: true },
};

export interface ModelOptions {
  model?: string;
  baseUrl?: string;
  env?: NodeJS.ProcessEnv;
}

function requireKey(env: NodeJS.ProcessEnv, variable: string, provider: string): string {
  const key = env[variable];
  if (!key) throw new ModelError(`${provider} needs an API key: export ${variable}=... (or use --base-url for a local OpenAI-compatible server)`);
  return key;
}

/** Pure decision (tested directly); createProvider builds the client. */
export function chooseModel(options: ModelOptions): ModelChoice {
  const env = options.env ?? process.env;
  const model = options.model || env.QUARRY_MODEL || '';
  const flagBaseUrl = options.baseUrl;
  if (!model) {
    if (flagBaseUrl) throw new ModelError(`--base-url needs --model NAME (the model the server at ${flagBaseUrl} serves)`);
    throw new ModelError(howToConfigureAModel());
  }
  if (model.startsWith('script:')) {
    const file = model.slice('script:'.length);
    if (!file) throw new ModelError('--model script:FILE needs the path of a script file');
    return { kind: 'script', model: file, label: model };
  }
  const slash = model.indexOf('/');
  const prefix = slash > 0 ? model.slice(0, slash) : '';
  const name = slash > 0 ? model.slice(slash + 1) : model;
  if (prefix === 'anthropic') {
    const baseURL = flagBaseUrl ?? env.ANTHROPIC_BASE_URL;
    const apiKey = baseURL && !env.ANTHROPIC_API_KEY ? 'not-needed' : requireKey(env, 'ANTHROPIC_API_KEY', 'Anthropic');
    return { kind: 'anthropic', model: name, label: model, apiKey, ...(baseURL ? { baseURL } : {}) };
  }
  const preset = PROVIDER_PRESETS[prefix];
  if (preset) {
    const baseURL = flagBaseUrl ?? preset.baseURL;
    const key = env[preset.keyVariable];
    if (!key && !preset.keyOptional && !flagBaseUrl) requireKey(env, preset.keyVariable, preset.name);
    return {
      kind: 'openai',
      model: name,
      label: flagBaseUrl ? `${model} at ${flagBaseUrl}` : model,
      baseURL,
      apiKey: key || 'not-needed',
      ...(preset.headers ? { headers: preset.headers } : {}),
      ...(preset.quirks ? { quirks: preset.quirks } : {}),
    };
  }
  if (flagBaseUrl) {
    return { kind: 'openai', model, label: `${model} at ${flagBaseUrl}`, baseURL: flagBaseUrl, apiKey: env.OPENAI_API_KEY || 'not-needed' };
  }
  if (prefix === 'ollama') {
    const host = (env.OLLAMA_HOST || DEFAULT_OLLAMA_URL).replace(/\/+$/, '');
    const baseURL = `${/^https?:\/\//.test(host) ? host : `http://${host}`}/v1`;
    return { kind: 'openai', model: name, label: model, baseURL, apiKey: 'ollama' };
  }
  const envBaseUrl = env.OPENAI_BASE_URL;
  if (prefix === 'openai') {
    const apiKey = envBaseUrl && !env.OPENAI_API_KEY ? 'not-needed' : requireKey(env, 'OPENAI_API_KEY', 'OpenAI');
    return { kind: 'openai', model: name, label: model, apiKey, ...(envBaseUrl ? { baseURL: envBaseUrl } : {}) };
  }
  if (envBaseUrl) return { kind: 'openai', model, label: `${model} at ${envBaseUrl}`, baseURL: envBaseUrl, apiKey: env.OPENAI_API_KEY || 'not-needed' };
  if (/^claude/.test(model)) return chooseModel({ ...options, model: `anthropic/${model}` });
  if (/^(gpt-|chatgpt|o[134](-|$))/.test(model)) return chooseModel({ ...options, model: `openai/${model}` });
  throw new ModelError(
    `cannot tell which provider serves "${model}": write PROVIDER/${model} (openai, anthropic, ollama, ${Object.keys(PROVIDER_PRESETS).join(', ')}), or ` +
      `give --base-url URL for an OpenAI-compatible server (quarry --help lists the options)`,
  );
}

/** Loads only the SDK the run needs (each costs tens of milliseconds to import). */
export async function createProvider(choice: ModelChoice, cwd: string): Promise<ModelProvider> {
  switch (choice.kind) {
    case 'script': {
      const { ScriptedProvider } = await import('./script.js');
      return ScriptedProvider.fromFile(choice.model, cwd);
    }
    case 'openai': {
      const { OpenAIChatProvider } = await import('./openai.js');
      return new OpenAIChatProvider({
        label: choice.label,
        model: choice.model,
        apiKey: choice.apiKey ?? 'not-needed',
        ...(choice.baseURL ? { baseURL: choice.baseURL } : {}),
        ...(choice.headers ? { headers: choice.headers } : {}),
        ...(choice.quirks ? { quirks: choice.quirks } : {}),
      });
    }
    case 'anthropic': {
      const { AnthropicProvider } = await import('./anthropic.js');
      return new AnthropicProvider({
        label: choice.label,
        model: choice.model,
        apiKey: choice.apiKey ?? 'not-needed',
        ...(choice.baseURL ? { baseURL: choice.baseURL } : {}),
      });
    }
  }
}
