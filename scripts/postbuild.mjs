// Makes the compiled entry point executable so that `quarry` works when linked as a bin.
import { chmodSync } from 'node:fs';
chmodSync(new URL('../dist/cli.js', import.meta.url), 0o755);
