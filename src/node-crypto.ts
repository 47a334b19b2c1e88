import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Node's crypto module, loaded on first use: importing it at the top of a module cost every
 * command about 3 ms (up to 20 ms on a cold start) of start-up, though most commands never make
 * a random name or a hash.
 */
export function nodeCrypto(): typeof import('node:crypto') {
  return require('node:crypto') as typeof import('node:crypto');
}
