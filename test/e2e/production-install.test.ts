import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

// What a container image holds: the lock file, the compiled build and `npm ci --omit=dev`. A
// package the service needs at run time that sits in devDependencies fails here, not in production.
describe('a production install', () => {
  let dir: string;
  let sandbox: Sandbox;
  let facade: FacadeProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'facade-prod-'));
    for (const file of ['package.json', 'package-lock.json'])
      cpSync(join(root, file), join(dir, file));
    // The build and the install touch different folders of the copy, so they run side by side.
    await Promise.all([
      // Compiled into the copy, so the test never runs a stale dist/.
      run(process.execPath, [
        join(root, 'node_modules/typescript/bin/tsc'),
        '-p',
        join(root, 'tsconfig.build.json'),
        '--outDir',
        join(dir, 'dist'),
      ]),
      // --prefer-offline: the packages are in npm's cache from the project's own install.
      run(
        'npm',
        ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'],
        { cwd: dir },
      ),
    ]);
    sandbox = await startSandbox({ repositories: 7, faults: true });
  }, 240_000);

  afterAll(async () => {
    await facade?.stop(5_000);
    await sandbox?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // tsc compiles whatever src/ imports, even by a dynamic import: the product's build holds src/
  // alone only if the production entry reaches neither the sandbox nor the benchmark.
  it('holds the product alone, without the sandbox or the benchmark', () => {
    expect(readdirSync(join(dir, 'dist'))).toEqual(['src']);
  });

  it("starts with the image's command and production settings and answers a query", async () => {
    // deploy/Dockerfile's CMD: node, its options (--no-memory-reducer), dist/src/main.js.
    const cmd = /^CMD \[(.+)\]$/m.exec(readFileSync(join(root, 'deploy/Dockerfile'), 'utf8'))?.[1];
    const [node, ...entry] = JSON.parse(`[${cmd}]`) as string[];
    expect(node).toBe('node');
    facade = await startFacade(
      { NODE_ENV: 'production', UPSTREAM_URL: sandbox.url, HOST: '127.0.0.1' },
      { cwd: dir, entry },
    );
    const answer = await post(facade.url, '{ repositories(limit: 2) { total items { id } } }');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ data: { repositories: { total: 7 } } });
    expect(facade.stderr()).toBe('');
  });

  // A process manager (systemd, PM2, a shell's `kill`) signals the pid it started: npm's. npm
  // passes SIGTERM to its child, the shell of the script, which must be node itself.
  it('runs start:prod in production, and drains and exits on a SIGTERM to npm', async () => {
    const npm = await startFacade(
      { UPSTREAM_URL: sandbox.url, HOST: '127.0.0.1', WORKERS: '1', SHUTDOWN_GRACE_MS: '10000' },
      { cwd: dir, command: 'npm', entry: ['run', 'start:prod'] },
    );
    const nodePid = Number(npm.lines.find((line) => typeof line.port === 'number')?.pid);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      expect(nodePid).not.toBe(npm.child.pid);
      const page = await fetch(npm.url, { headers: { accept: 'text/html' } });
      expect(page.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
      await page.arrayBuffer();
      const answer = await post(npm.url, '{ repositories(limit: 2) { total } }');
      expect(answer.body).toEqual({ data: { repositories: { total: 7 } } });

      sandbox.setFault('GET /git/v1/repo', { delayMs: 1_500, times: 1 });
      const before = sandbox.counts()['GET /git/v1/repo'] ?? 0;
      const inFlight = post(npm.url, '{ repositories(limit: 3) { total } }');
      await expect
        .poll(() => sandbox.counts()['GET /git/v1/repo'], { timeout: 10_000 })
        .toBe(before + 1);
      npm.child.kill('SIGTERM');
      await expect
        .poll(() => npm.lines.some((line) => line.msg === 'draining'), { timeout: 5_000 })
        .toBe(true);
      expect((await inFlight).status).toBe(200);
      expect(await Promise.race([npm.exited, sleep(15_000).then(() => 'still running')])).toBe(0);
      expect(alive(nodePid)).toBe(false);
      await expect(fetch(npm.url.replace('/graphql', '/health'))).rejects.toThrow();
      expect(npm.lines.map((line) => line.msg)).toContain('stopped');
    } finally {
      await npm.stop(5_000);
      // An orphan the signal missed would keep serving on the port.
      if (alive(nodePid)) process.kill(nodePid, 'SIGKILL');
    }
  }, 60_000);
});
