import { escapeHtml } from './html.js';

/** Names of environment variables that hold credentials (OPENAI_API_KEY, PGPASSWORD, GITHUB_TOKEN, …). */
const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?)$/i;
/** Shorter values are too likely to occur by chance (a port, "true"). */
const MIN_SECRET_CHARS = 8;

/** The values of this process's credential variables, longest first. */
export function knownSecretValues(env: NodeJS.ProcessEnv = process.env): string[] {
  const values = Object.entries(env)
    .filter(([name, value]) => SECRET_NAME.test(name) && value !== undefined && value.length >= MIN_SECRET_CHARS)
    .map(([, value]) => value as string);
  return [...new Set(values)].sort((a, b) => b.length - a.length);
}

/**
 * Removes every known secret value from a rendered page (README "quarry report"): as written, HTML-escaped
 * and URL-encoded, so neither its text nor a link (which a click would send) carries it.
 */
export function redactSecrets(html: string, secrets: readonly string[] = knownSecretValues()): string {
  let result = html;
  for (const secret of secrets) {
    for (const form of new Set([secret, escapeHtml(secret), encodeURIComponent(secret), escapeHtml(encodeURIComponent(secret))])) {
      result = result.split(form).join('[secret removed]');
    }
  }
  return result;
}
