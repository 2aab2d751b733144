import { EventEmitter } from 'node:events';

/** An AbortSignal or a CallCancel: its reason tells a deadline from a client that left. */
export interface Cancellation {
  readonly aborted: boolean;
  readonly reason?: unknown;
}

/**
 * One call's deadline or client gone, as an EventEmitter undici accepts as a `signal`: an
 * AbortSignal's listeners cost far more (docs/performance.md#what-was-tried).
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
