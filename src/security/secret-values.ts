import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { configFilesRead } from '../config/config-file.js';
import { quarryHome } from '../config/home.js';
import { isSecretVariable } from './secret-variables.js';

/**
 * Known secret values (README "Security model"): what a report or a chart must never carry, as text
 * or inside a link. Two sources:
 * - the environment: the values of the variables the restricted shell withholds (API keys, tokens,
 *   passwords, URLs with a password), at least MIN_ENV_SECRET_CHARS long;
 * - config.yaml (`$QUARRY_HOME/config.yaml`, and every config or databases file the process read): every
 *   value under a secret-sounding key (password, passphrase, token, api_key, secret, auth...: database
 *   passwords, SSH passwords and passphrases of every hop, MCP servers' env tokens), every MCP server
 *   header value (and the credential after `Bearer`/`Basic`/`Token`), and the password of any URL,
 *   with `${VAR}` references resolved from the environment; at least MIN_CONFIG_SECRET_CHARS long.
 * Shorter values are not listed: removed as plain text they would hit ordinary words (the page would
 * lose "select" to a password "select"). A config file that is missing or not YAML adds nothing
 * (quarry could not have run with it).
 */
const MIN_ENV_SECRET_CHARS = 8;
const MIN_CONFIG_SECRET_CHARS = 6;

/** Keys whose values in config.yaml are secrets. */
const SECRET_KEY = /pass|pwd|token|secret|api_?key|auth|credential|cookie|private|(?:^|_)key(?:$|_)/i;
/** A URL's userinfo password: scheme://user:PASSWORD@host. */
const URL_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:([^/\s]+)@/gi;
/** An Authorization header's scheme, before the credential itself. */
const AUTH_SCHEME = /^\s*(?:bearer|basic|token|apikey|api-key)\s+(\S+)\s*$/i;

export function knownSecretValues(env: NodeJS.ProcessEnv = process.env, configFiles: readonly string[] = defaultConfigFiles(env)): string[] {
  const values = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && value.length >= MIN_ENV_SECRET_CHARS && isSecretVariable(name, value)) values.add(value);
  }
  for (const file of configFiles) for (const value of configSecrets(file, env)) if (value.length >= MIN_CONFIG_SECRET_CHARS) values.add(value);
  // Longest first, so a secret that contains another is removed whole.
  return [...values].sort((a, b) => b.length - a.length);
}

/** $QUARRY_HOME/config.yaml and every config or databases file this process has read (--config, --databases). */
function defaultConfigFiles(env: NodeJS.ProcessEnv): string[] {
  return [...new Set([join(quarryHome(env), 'config.yaml'), ...configFilesRead()])];
}

function configSecrets(file: string, env: NodeJS.ProcessEnv): string[] {
  let document: unknown;
  try {
    document = parseYaml(readFileSync(file, 'utf8'));
  } catch {
    return [];
  }
  const out: string[] = [];
  const add = (value: string) => {
    out.push(value);
    const credential = AUTH_SCHEME.exec(value)?.[1];
    if (credential) out.push(credential);
  };
  const walk = (node: unknown, key: string, inHeaders: boolean) => {
    if (Array.isArray(node)) for (const item of node) walk(item, key, inHeaders);
    else if (node && typeof node === 'object') for (const [name, value] of Object.entries(node)) walk(value, name, inHeaders || name === 'headers');
    else if (typeof node === 'string' || typeof node === 'number') {
      const value = resolveVariables(String(node), env);
      if (inHeaders || SECRET_KEY.test(key)) add(value);
      for (const match of value.matchAll(URL_PASSWORD)) {
        const password = match[1]!;
        out.push(password);
        try {
          out.push(decodeURIComponent(password));
        } catch {
          // Not percent-encoded: the raw form is listed.
        }
      }
    }
  };
  walk(document, '', false);
  return out;
}

/** `${VAR}` as quarry reads config.yaml; an unset variable reads as nothing here. */
function resolveVariables(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => env[name] ?? '');
}

export const SECRET_REMOVED = '[secret removed]';

/** Every spelling of a value in plain text (a chart's labels, a tool's answer): as written, URL-encoded, base64 and percent-encoded any other way. */
export function redactPlainSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) for (const form of new Set([secret, encodeURIComponent(secret)])) out = removeAnyCase(out, form);
  return redactEncodedSecrets(out, secrets);
}

/**
 * `form` removed from `text` in any letter case: a token upper-cased (a hex key, a case-insensitive
 * password) still gives it away. Base64 forms are removed as written (their case is their content).
 */
export function removeAnyCase(text: string, form: string): string {
  return text.replace(new RegExp(form.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), SECRET_REMOVED);
}

/** A base64 form shorter than this is not looked for: it would hit ordinary text. */
const MIN_BASE64_CHARS = 8;
/** A percent escape or an HTML character reference. */
const ESCAPE = /%[0-9A-Fa-f]{2}|&#?[0-9A-Za-z]+;/g;
/** What ends a run of URL or word characters. */
const RUN_END = /[\s"'<>()\\`]/;

/**
 * `text` with each run of URL or word characters that holds an escape replaced by `replace(run)`. In
 * one pass (a run is found from its escapes, then widened to its ends), so a page with megabytes of
 * base64 and no escape costs one scan.
 */
function replaceEscapedRuns(text: string, replace: (run: string) => string): string {
  let out = '';
  let done = 0;
  ESCAPE.lastIndex = 0;
  for (let match = ESCAPE.exec(text); match; match = ESCAPE.exec(text)) {
    let start = match.index;
    while (start > done && !RUN_END.test(text[start - 1]!)) start--;
    let end = match.index + match[0].length;
    while (end < text.length && !RUN_END.test(text[end]!)) end++;
    out += text.slice(done, start) + replace(text.slice(start, end));
    done = end;
    ESCAPE.lastIndex = end;
  }
  return out + text.slice(done);
}

/** The named character references of ASCII punctuation (HTML has none for letters, digits or "-"). */
const NAMED_REFERENCES: Record<string, string> = {
  amp: '&',
  lowbar: '_',
  period: '.',
  colon: ':',
  sol: '/',
  num: '#',
  excl: '!',
  plus: '+',
  equals: '=',
  commat: '@',
  dollar: '$',
  percnt: '%',
  quest: '?',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  comma: ',',
  semi: ';',
  ast: '*',
  tilde: '~',
  Hat: '^',
  grave: '`',
  lpar: '(',
  rpar: ')',
  lsqb: '[',
  rsqb: ']',
  lcub: '{',
  rcub: '}',
  verbar: '|',
  bsol: '\\',
};

/**
 * The spellings a page can carry a value in that redacting its plain forms misses: base64 (standard
 * and URL-safe, at each of the three byte alignments, so a value after a prefix is found too) anywhere
 * in the text; and, in a run of URL or word characters, any other percent-encoding (every byte,
 * lower-case hex, twice) or HTML character references (`&#104;`, `&#x2d;`, `&lowbar;`, which a
 * browser shows as the characters): such a run is removed whole.
 */
export function redactEncodedSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) for (const form of base64Forms(secret)) out = out.split(form).join(SECRET_REMOVED);
  return replaceEscapedRuns(out, (run) => {
    let decoded = run;
    for (let round = 0; round < 3; round++) {
      const next = percentDecode(decodeReferences(decoded));
      if (next === decoded) break;
      decoded = next;
    }
    const lower = decoded.toLowerCase();
    return secrets.some((secret) => lower.includes(secret.toLowerCase())) ? SECRET_REMOVED : run;
  });
}

/** HTML character references decoded: numeric ones, and the named ones of ASCII punctuation. */
function decodeReferences(text: string): string {
  return text.replace(/&#[xX]([0-9A-Fa-f]{1,6});|&#([0-9]{1,7});|&([A-Za-z]+);/g, (whole, hex: string, dec: string, name: string) => {
    const code = hex ? Number.parseInt(hex, 16) : dec ? Number(dec) : -1;
    if (code >= 0) return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    return NAMED_REFERENCES[name] ?? whole;
  });
}

/** `%XX` sequences decoded as UTF-8 bytes (a broken sequence becomes U+FFFD, never an error). */
function percentDecode(text: string): string {
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (escapes) => Buffer.from(escapes.replace(/%/g, ''), 'hex').toString('utf8'));
}

/** The characters of base64 that depend only on `secret`, whatever surrounds it, at each alignment. */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const forms = new Set<string>();
  for (let shift = 0; shift < 3; shift++) {
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const form = encoded.slice(shift === 0 ? 0 : 4, Math.floor((shift + bytes.length) / 3) * 4);
    if (form.length < MIN_BASE64_CHARS) continue;
    forms.add(form);
    forms.add(form.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...forms];
}

/** Every string in a JSON value (a chart specification: data, titles, labels, descriptions) with the secrets removed. */
export function redactJsonSecrets<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') return redactPlainSecrets(node, secrets);
    if (Array.isArray(node)) return node.map(walk);
    if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([key, item]) => [redactPlainSecrets(key, secrets), walk(item)]));
    return node;
  };
  return walk(value) as T;
}
