import { EventEmitter } from 'node:events';

/** What tells a deadline from a client that left: an AbortSignal, or a CallCancel. */
export interface Cancellation {
  readonly aborted: boolean;
  readonly reason?: unknown;
}

/**
 * The cancellation of one upstream call: its deadline passed, or the GraphQL client went away.
 * Shaped as undici also accepts a `signal` (an EventEmitter with `aborted` and `reason`) rather
 * than an AbortController: undici's EventTarget listeners are a large share of a small call's CPU,
 * EventEmitter listeners next to nothing (docs/performance.md).
 */
export class CallCancel extends EventEmitter implements Cancellation {
  aborted = false;
  reason: unknown;

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  /** Resolves after `ms`; rejects with the reason as soon as the call is cancelled. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.aborted) return reject(this.reason);
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.reason);
      };
      const timer = setTimeout(() => {
        this.off('abort', onAbort);
        resolve();
      }, ms);
      this.once('abort', onAbort);
    });
  }
}
