// stale-while-revalidate's background refreshes: at most one per key, outside any request, ended
// by the drain (docs/caching.md#stale-answers).

export interface Refreshes {
  /**
   * Runs `refresh` in the background unless one for `key` is already running. It gets a signal
   * of its own, aborted by `drain`, and its failure is only counted: nobody waits for it; one
   * that resolves 'skipped' (another process refreshes) is not counted. False when it was not
   * started.
   */
  start(key: string, route: string, refresh: (signal: AbortSignal) => Promise<unknown>): boolean;
  /** Resolves once every refresh has ended; those still running after `graceMs` are aborted. */
  drain(graceMs: number): Promise<void>;
  readonly running: number;
}

export interface RefreshOptions {
  /** Told of every refresh's end, by route: `ok` or `failed`. */
  onEnd?: ((route: string, outcome: 'ok' | 'failed') => void) | undefined;
}

export function createRefreshes(options: RefreshOptions = {}): Refreshes {
  const running = new Map<string, { done: Promise<void>; controller: AbortController }>();
  let draining = false;
  return {
    get running() {
      return running.size;
    },
    start(key, route, refresh) {
      if (draining || running.has(key)) return false;
      const controller = new AbortController();
      const done = refresh(controller.signal).then(
        (outcome) => {
          if (outcome !== 'skipped') options.onEnd?.(route, 'ok');
        },
        () => options.onEnd?.(route, 'failed'),
      );
      running.set(key, { done, controller });
      void done.finally(() => running.delete(key));
      return true;
    },
    async drain(graceMs) {
      draining = true;
      const all = Promise.allSettled([...running.values()].map(({ done }) => done));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), graceMs);
      });
      if ((await Promise.race([all, late])) === 'late') {
        for (const { controller } of running.values()) controller.abort();
        await all;
      }
      clearTimeout(timer);
    },
  };
}
