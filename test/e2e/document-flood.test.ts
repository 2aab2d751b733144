import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHAPES } from '../../bench/documents.js';
import { type Sandbox, startSandbox } from '../../sandbox/server.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

/** The image's command (deploy/Dockerfile's CMD), its entry replaced by `entry`. */
function imageArguments(entry: string): string[] {
  const cmd = /^CMD \[(.+)\]$/m.exec(readFileSync(join(root, 'deploy/Dockerfile'), 'utf8'))?.[1];
  const [node, ...args] = JSON.parse(`[${cmd}]`) as string[];
  expect(node).toBe('node');
  return args.map((arg) => (arg === 'dist/src/main.js' ? entry : arg));
}

/** Sends each body once, `width` at a time; the statuses, in order. */
async function flood(url: string, bodies: string[], width = 4): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const i = next++;
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: bodies[i],
      });
      await response.arrayBuffer();
      statuses[i] = response.status;
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return statuses;
}

// The pod: the production build, one process, a heap of 256 MiB. Every document a caller sends is
// one the process may keep (parsed, with its errors): only a bound in bytes keeps it alive.
describe('the production process in a 256 MiB heap, sent hundreds of distinct hostile documents', () => {
  let dir: string;
  let sandbox: Sandbox;
  let facade: FacadeProcess | undefined;

  beforeAll(async () => {
    // Inside node_modules/, so the build resolves the project's packages; compiled for this test,
    // so it never runs a stale dist/.
    mkdirSync(join(root, 'node_modules/.cache'), { recursive: true });
    dir = mkdtempSync(join(root, 'node_modules/.cache/facade-documents-'));
    await run(process.execPath, [
      join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      join(root, 'tsconfig.build.json'),
      '--outDir',
      dir,
    ]);
    sandbox = await startSandbox({ repositories: 3 });
    facade = await startFacade(
      { NODE_ENV: 'production', UPSTREAM_URL: sandbox.url, HOST: '127.0.0.1', WORKERS: '1' },
      { entry: ['--max-old-space-size=256', ...imageArguments(join(dir, 'src/main.js'))] },
    );
  }, 240_000);

  afterAll(async () => {
    await facade?.stop(5_000);
    await sandbox?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers every one of them and keeps serving', async () => {
    const url = facade?.url ?? '';
    const counts: Record<string, number> = {
      'invalid, 4 KB of 1,995 unknown fields': 400,
      'valid, 2.4 KB of fields': 300,
      'invalid, 1 MB, its text a string argument': 150,
      'fails to parse, 1 MB of tokens': 150,
      'fails to parse, 1 MB string unterminated': 150,
      // Each document run with as many page sizes as the cost keeps per operation.
      'valid, 1 MB operation name, 32 page sizes': 12,
    };
    for (const [shape, count] of Object.entries(counts)) {
      const found = SHAPES[shape];
      if (!found) throw new Error(`no shape ${shape}`);
      const { make, runs = 1 } = found;
      const bodies = Array.from({ length: count }, (_, n) => make(n)).flatMap((query) =>
        Array.from({ length: runs }, (_, run) =>
          JSON.stringify({ query, variables: { l: run + 1 } }),
        ),
      );
      const statuses = await flood(url, bodies);
      expect({ shape, statuses: [...new Set(statuses)] }).toEqual({ shape, statuses: [200] });
    }
    expect(facade?.child.exitCode).toBeNull();
    const answer = await post(url, '{ repositories(limit: 2) { total } }');
    expect(answer.body).toMatchObject({ data: { repositories: { total: 3 } } });
    expect(facade?.stderr()).toBe('');
  }, 600_000);
});
