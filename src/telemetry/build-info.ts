import { readFileSync } from 'node:fs';

/** From the nearest package.json above: src/ and dist/src/ sit at different depths. */
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
      // Not here: one folder up.
    }
    const parent = new URL('..', dir);
    if (parent.href === dir.href) return 'unknown';
    dir = parent;
  }
}
