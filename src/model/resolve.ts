import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../config.js';
import type { ModelProvider } from './types.js';
import { ModelError } from './types.js';

/**
 * Which provider and model a run uses, from --model / QUARRY_MODEL and --base-url / OPENAI_BASE_URL:
 * - `script:FILE`: the scripted provider.
 * - `--base-url URL --model NAME`: an OpenAI-compatible endpoint serving NAME (sent verbatim, so
 *   OpenRouter names such as `meta-llama/llama-3.1-70b` work), except `anthropic/NAME`.
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
    : '  No model at all: replay a scripted conversation with --model script:FILE (the README, "Running the agent", describes the file)';
}

export const howToConfigureAModel = (): string => [
  'no model configured. Choose one with --model (or the QUARRY_MODEL environment variable):',
  '  OpenAI:        export OPENAI_API_KEY=sk-...      then  quarry --model openai/gpt-4.1 "your question"',
  '  Anthropic:     export ANTHROPIC_API_KEY=sk-ant-... then  quarry --model anthropic/claude-sonnet-4-5 "your question"',
  '  Local server (Ollama, vLLM, LM Studio, LiteLLM; any OpenAI-compatible endpoint):',
  '                 quarry --base-url http://127.0.0.1:11434/v1 --model llama3.1 "your question"   (or --model ollama/llama3.1)',
  noModelLine(),
].join('\n');

export const DEFAULT_OLLAMA_URL = 'http://127.0.0.1:11434';
/** For models not in the table below; pass --context-window for local models with smaller windows. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

const CONTEXT_WINDOWS: [RegExp, number][] = [
  [/^claude-/, 200_000],
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
}

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
  throw new ModelError(`cannot tell which provider serves "${model}": write openai/${model}, anthropic/${model} or ollama/${model}, or give --base-url URL for an OpenAI-compatible server (quarry --help lists the options)`);
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
      return new OpenAIChatProvider({ label: choice.label, model: choice.model, apiKey: choice.apiKey ?? 'not-needed', ...(choice.baseURL ? { baseURL: choice.baseURL } : {}) });
    }
    case 'anthropic': {
      const { AnthropicProvider } = await import('./anthropic.js');
      return new AnthropicProvider({ label: choice.label, model: choice.model, apiKey: choice.apiKey ?? 'not-needed', ...(choice.baseURL ? { baseURL: choice.baseURL } : {}) });
    }
  }
}
