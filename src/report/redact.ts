import { isSecretVariable } from '../security/secret-variables.js';
import { escapeHtml } from './step-output.js';

/**
 * Known secret values (docs/security.md): the values of the environment variables the
 * restricted shell withholds (API keys, tokens, passwords, URLs with a password). A report or chart
 * that carries one, as text or inside a link, shows `[secret removed]` instead, so that opening or
 * sharing the page cannot send it anywhere.
 */
const MIN_SECRET_CHARS = 8;

export function knownSecretValues(env: NodeJS.ProcessEnv = process.env): string[] {
  const values = Object.entries(env)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1].length >= MIN_SECRET_CHARS && isSecretVariable(entry[0], entry[1]))
    .map(([, value]) => value);
  // Longest first, so a secret that contains another is removed whole.
  return [...new Set(values)].sort((a, b) => b.length - a.length);
}

const REMOVED = '[secret removed]';

/** Every spelling a page may hold a value in: as written, HTML-escaped, URL-encoded. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    const escaped = escapeHtml(secret);
    const encoded = encodeURIComponent(secret);
    const encodedEscaped = encoded.replace(/&/g, '&amp;');
    for (const form of new Set([secret, escaped, encoded, encodedEscaped])) out = out.split(form).join(REMOVED);
  }
  return out;
}
