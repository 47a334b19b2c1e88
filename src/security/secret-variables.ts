/**
 * Which environment variables hold secrets (docs/guide/restricted-shell.md, secrets): the restricted shell
 * removes them from its commands' environment (src/tools/bash/environment.ts), quarry hides their
 * values in /proc (process-secrets.ts), and a report redacts them (src/report/redact.ts).
 */

/** Names that hold credentials: API keys, tokens, passwords, database and cloud credentials. */
// biome-ignore format: a list of names reads best packed
const SECRET_NAME = new RegExp(
  [
    'KEY', 'TOKEN', 'SECRET', 'PASSWORD', 'PASSWD', 'PASSPHRASE', 'CREDENTIAL', 'AUTH', 'COOKIE', 'SESSION',
    'PRIVATE', 'DSN', 'DATABASE_URL', 'CONNECTION_STRING', '_PWD$', '^PGPASS', '^PGSERVICE', '^AWS_',
    '^AZURE_', '^GOOGLE_APPLICATION', '^GCLOUD_', '^VAULT_', '^OP_', '^ORACLE_PASS', '^SNOWFLAKE_',
  ].join('|'),
  'i',
);
/** A URL with a password in it (scheme://user:password@host), whatever the variable is called. */
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:[^/\s@]+@/i;

/** Whether a variable holds a secret: by its name, or by a password in a URL in its value. */
export function isSecretVariable(name: string, value: string): boolean {
  return SECRET_NAME.test(name) || URL_WITH_PASSWORD.test(value);
}
