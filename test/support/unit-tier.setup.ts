import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * setupFiles of the unit project (vitest.config.ts): installs test/support/unit-tier-guard.cjs in
 * this worker and, through NODE_OPTIONS, in every Node process the tests start.
 */
const GUARD = fileURLToPath(new URL('./unit-tier-guard.cjs', import.meta.url));

process.env.QUARRY_TEST_TIER = 'unit';
if (!(process.env.NODE_OPTIONS ?? '').includes(GUARD)) {
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --require ${JSON.stringify(GUARD)}`.trim();
}
createRequire(import.meta.url)(GUARD);
