import { redactUrl } from './config.js';
import type { DatabaseConfig } from './types.js';

/**
 * Passwords never reach output, traces or errors (SPEC §11.4): driver error text can echo a
 * connection string or the password itself, so every message passes through here.
 */
export function scrubSecrets(text: string, config: Pick<DatabaseConfig, 'password'>): string {
  let scrubbed = redactUrl(text);
  const password = config.password;
  if (password) {
    for (const form of new Set([password, encodeURIComponent(password)])) scrubbed = scrubbed.split(form).join('***');
  }
  return scrubbed;
}
