import { redactUrl } from '../../config/databases.js';
import { sshSecrets } from '../../config/ssh.js';
import type { DatabaseConfig } from './types.js';

/**
 * Passwords never reach output, traces or errors: driver error text can echo a connection
 * string or the password itself, so every message passes through here. The password is
 * replaced where it stands as a value (in a URL's userinfo, after `password=` / `pwd=` /
 * `password:` in a connection string, or as a whole word of its own), never inside other
 * words: a one-letter password must not turn "authentication" into "***uthentic***tion", and a
 * password equal to the user name must not hide the user where the text names the user.
 * A password of fewer than 4 characters is replaced only where it stands as a credential.
 */
export function scrubSecrets(text: string, config: Pick<DatabaseConfig, 'password'> & Partial<Pick<DatabaseConfig, 'user' | 'ssh'>>): string {
  let scrubbed = redactUrl(text);
  const secrets = [config.password, ...sshSecrets(config.ssh)].filter((secret): secret is string => Boolean(secret));
  for (const form of new Set(secrets.flatMap((secret) => [secret, encodeURIComponent(secret)]))) {
    const value = escapeRegExp(form);
    // key=value and key: value in connection strings and JSON, quoted or not.
    scrubbed = scrubbed.replace(new RegExp(`(\\b(?:password|passwd|pwd|pass)\\b["']?\\s*[=:]\\s*["']?)${value}(?=["';,\\s)}]|$)`, 'gi'), '$1***');
    // A URL's userinfo the URL pattern above did not catch (no scheme).
    scrubbed = scrubbed.replace(new RegExp(`(:)${value}(@)`, 'g'), '$1***$2');
    // Anywhere else as a whole word, unless it is also the user name (then the user stays
    // readable) or shorter than 4 characters (a password "a" would otherwise hide every "a").
    if (form !== config.user && form.length >= MIN_WORD_SCRUB_LENGTH)
      scrubbed = scrubbed.replace(new RegExp(`(?<![\\p{L}\\p{N}_])${value}(?![\\p{L}\\p{N}_])`, 'gu'), '***');
  }
  return scrubbed;
}

const MIN_WORD_SCRUB_LENGTH = 4;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
