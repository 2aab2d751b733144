import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, startSandbox } from '../../sandbox/server.js';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';

describe('WORKERS=2 in production, PORT=0', () => {
  let sandbox: Sandbox;
  let facade: FacadeProcess | undefined;

  beforeAll(async () => {
    sandbox = await startSandbox({ repositories: 7 });
    facade = await startFacade(
      { NODE_ENV: 'production', UPSTREAM_URL: sandbox.url, HOST: '127.0.0.1', WORKERS: '2' },
      { timeoutMs: 60_000 },
    );
  }, 90_000);
  afterAll(async () => {
    await facade?.stop(10_000);
    await sandbox?.close();
  });

  it('answers every request from the facade itself', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const answer = await post(facade?.url ?? '', '{ repositories(limit: 2) { total } }');
      statuses.push(answer.status);
    }
    expect(statuses).toEqual(Array(20).fill(200));
    expect(facade?.stderr()).toBe('');
  });
});
