import { readFileSync } from 'node:fs';

/**
 * The package's version, from the nearest package.json above this module: src/ and the compiled
 * dist/src/ sit at different depths, and a container runs `node dist/src/main.js` without npm.
 */
export const VERSION = readVersion();

function readVersion(): string {
  let dir = new URL('.', import.meta.url);
  for (;;) {
    try {
      const { version } = JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as {
        version?: unknown;
      };
      if (typeof version === 'string') return version;
    } catch {
      // Not here: look one folder up.
    }
    const parent = new URL('..', dir);
    if (parent.href === dir.href) return 'unknown';
    dir = parent;
  }
}
