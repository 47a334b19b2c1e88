import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';

/**
 * Strict host-key checking against an OpenSSH known_hosts file (docs/guide/databases.md "SSH tunnels"), as
 * `StrictHostKeyChecking yes` does: the server's key must be listed for its name, which is `host`
 * on port 22 and `[host]:port` on any other port. Entries may be plain (comma-separated patterns
 * with `*`, `?` and `!` negation) or hashed (`|1|salt|hmac`, from `HashKnownHosts yes`);
 * `@revoked` keys are refused; `@cert-authority` lines are not used (no certificates).
 */

export type HostKeyVerdict = { ok: true } | { ok: false; message: string };

interface Entry {
  marker: '' | '@revoked' | '@cert-authority';
  patterns: string;
  type: string;
  key: string;
  line: number;
}

/** The name known_hosts lists a server under. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host.toLowerCase() : `[${host.toLowerCase()}]:${port}`;
}

/** `SHA256:...` as `ssh-keygen -l` and OpenSSH's messages print it. */
export function keyFingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named at the start of an SSH public-key blob. */
export function keyType(keyBlob: Buffer): string {
  if (keyBlob.length < 4) return 'unknown';
  const length = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + length).toString('latin1');
}

function readEntries(path: string): Entry[] | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  const entries: Entry[] = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const fields = line.split(/\s+/);
    const marker = fields[0] === '@revoked' || fields[0] === '@cert-authority' ? (fields.shift() as Entry['marker']) : '';
    const [patterns, type, key] = fields;
    if (patterns && type && key) entries.push({ marker, patterns, type, key, line: index + 1 });
  });
  return entries;
}

function wildcardMatch(pattern: string, name: string): boolean {
  const source = pattern
    .toLowerCase()
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(name);
}

function hashedMatch(pattern: string, name: string): boolean {
  const [, kind, salt, hash] = pattern.split('|');
  if (kind !== '1' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest();
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Whether an entry's host field names the server (a negated pattern that matches rules it out). */
function entryMatches(patterns: string, name: string): boolean {
  if (patterns.startsWith('|')) return hashedMatch(patterns, name);
  let matched = false;
  for (const pattern of patterns.split(',')) {
    if (pattern.startsWith('!')) {
      if (wildcardMatch(pattern.slice(1), name)) return false;
    } else if (wildcardMatch(pattern, name)) matched = true;
  }
  return matched;
}

/** The key types known_hosts holds for the server, to ask it for one of those first (as OpenSSH does). */
export function knownKeyTypes(path: string, host: string, port: number): string[] {
  const name = knownHostsName(host, port);
  return [...new Set((readEntries(path) ?? []).filter((entry) => entry.marker === '' && entryMatches(entry.patterns, name)).map((entry) => entry.type))];
}

/** Checks the key a server presented; a refusal names the key's fingerprint and how to accept it. */
export function checkHostKey(path: string, host: string, port: number, keyBlob: Buffer): HostKeyVerdict {
  const name = knownHostsName(host, port);
  const type = keyType(keyBlob);
  const fingerprint = `${type} ${keyFingerprint(keyBlob)}`;
  const presented = keyBlob.toString('base64');
  const entries = (readEntries(path) ?? []).filter((entry) => entryMatches(entry.patterns, name));
  const server = `${host}:${port}`;
  if (entries.some((entry) => entry.marker === '@revoked' && entry.key === presented))
    return { ok: false, message: `SSH host key of ${server} (${fingerprint}) is marked @revoked in ${path}; refused` };
  const plain = entries.filter((entry) => entry.marker === '');
  if (plain.some((entry) => entry.key === presented)) return { ok: true };
  const accept = `ssh-keyscan -t ${type} -p ${port} ${host} >> ${path}`;
  if (plain.length === 0) {
    return {
      ok: false,
      message:
        `SSH host key of ${server} is unknown (${fingerprint}; not in ${path}); refused. If that fingerprint is the server's (ask its administrator), ` +
        `accept it with: ${accept}`,
    };
  }
  return {
    ok: false,
    message:
      `SSH host key of ${server} has CHANGED: it now shows ${fingerprint}, but ${path} line ${plain.map((entry) => entry.line).join(', ')} holds another; ` +
      `refused (the server was reinstalled, or someone is in between). If the change is expected, remove the old key with: ssh-keygen -R '${name}' -f ${path} ` +
      `and accept the new one with: ${accept}`,
  };
}
