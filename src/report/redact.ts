import { join } from 'node:path';
import type { StoredDatabases } from '../agent/session.js';
import { configFilesRead } from '../config/config-file.js';
import { redactUrl } from '../config/databases.js';
import { quarryHome } from '../config/home.js';
import { knownSecretValues, redactEncodedSecrets, removeAnyCase } from '../security/secret-values.js';
import { escapeHtml } from './step-output.js';

/**
 * A report or chart page that carries a known secret value (src/security/secret-values.ts: secret
 * environment variables and config.yaml's passwords, tokens and headers), as text or inside a link,
 * shows `[secret removed]` instead, so that opening or sharing the page cannot send it anywhere; the
 * password of any URL on the page is hidden too (`:***@`), however short.
 */

/** Every spelling a page may hold a value in: as written, HTML-escaped, URL-encoded, base64, percent-encoded any other way. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    const escaped = escapeHtml(secret);
    const encoded = encodeURIComponent(secret);
    const encodedEscaped = encoded.replace(/&/g, '&amp;');
    for (const form of new Set([secret, escaped, encoded, encodedEscaped])) out = removeAnyCase(out, form);
  }
  return redactUrl(redactEncodedSecrets(out, secrets));
}

/** The secrets a session's page must not carry: the environment's, $QUARRY_HOME/config.yaml's and those of the config and databases files the session used. */
export function sessionSecretValues(databases: StoredDatabases | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  const files = [join(quarryHome(env), 'config.yaml'), databases?.config_file, databases?.databases_file].filter((file): file is string => Boolean(file));
  return knownSecretValues(env, [...new Set([...files, ...configFilesRead()])]);
}
