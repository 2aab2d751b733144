import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { type FacadeProcess, post, startFacade } from '../helpers/process.js';

// Well within the drain of an idle process; a hung one never gets there.
const EXIT_WITHIN_MS = 5_000;

/** SIGTERM, then how the process ended, or 'alive' if it had not within the limit. */
async function terminate(facade: FacadeProcess): Promise<number | string> {
  facade.child.kill('SIGTERM');
  return Promise.race([facade.exited, sleep(EXIT_WITHIN_MS).then(() => 'alive')]);
}

describe('the facade process, with stdout a pipe its reader has closed', () => {
  let facade: FacadeProcess | undefined;
  afterEach(async () => {
    await facade?.stop(1_000);
    facade = undefined;
  });

  /** Started as `npm start` starts it; its reader then goes, as `| head -c 300` does. */
  async function startThenCloseStdout(): Promise<FacadeProcess> {
    facade = await startFacade();
    facade.child.stdout?.destroy();
    return facade;
  }

  it('exits promptly on SIGTERM', async () => {
    const started = await startThenCloseStdout();
    expect(await terminate(started)).toBe(0);
    expect(started.stderr()).toBe('');
  }, 40_000);

  it('keeps serving while its log lines are dropped, then exits on SIGTERM', async () => {
    const started = await startThenCloseStdout();
    for (const id of ['closed-stdout-1', 'closed-stdout-2']) {
      const response = await post(started.url, '{ repositories(limit: 1) { total } }', {
        'x-request-id': id,
      });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({ repositories: { total: 50 } });
    }
    expect(await terminate(started)).toBe(0);
    expect(started.stderr()).toBe('');
  }, 40_000);
});
