// Watching a TXT name until it says what a subscriber waits for (docs/domains.md#watching-the-record):
// one watcher per name in the process, whatever the number of subscribers, and, with a store
// shared by the fleet, one look-up per interval for the fleet.
import { Repeater } from 'graphql-yoga';
import type { TxtLookupResult, TxtResolver } from './dns.js';
import type { DnsWatchStore } from './dns-watch-store.js';

export interface DnsWatchOptions {
  resolver: TxtResolver;
  /** DNS_WATCH_MIN_INTERVAL_MS: the wait after a change, doubled while nothing changes. */
  minIntervalMs: number;
  /** DNS_WATCH_MAX_INTERVAL_MS. */
  maxIntervalMs: number;
  /** Shared by the fleet (Redis); without one, or while it fails, each process looks up alone. */
  store?: DnsWatchStore | undefined;
  /** Told of every look-up this process made itself. */
  onLookUp?: ((host: string) => void) | undefined;
}

export interface DnsWatches {
  /** Calls `listener` with what the name says now (at once when known), then at each look-up. */
  watch(host: string, listener: (result: TxtLookupResult) => void): { close(): void };
  /** Names watched now, by this process. */
  readonly names: number;
}

interface Watcher {
  listeners: Set<(result: TxtLookupResult) => void>;
  last?: { result: TxtLookupResult; at: number } | undefined;
  delayMs: number;
  timer?: NodeJS.Timeout | undefined;
  running: boolean;
}

/** Whether two look-ups say the same: a subscriber hears of a change only. */
export function sameResult(a: TxtLookupResult, b: TxtLookupResult): boolean {
  if (a.outcome !== b.outcome) return false;
  if (a.outcome === 'found' && b.outcome === 'found') {
    return [...a.values].sort().join('\u0000') === [...b.values].sort().join('\u0000');
  }
  return a.outcome !== 'failed' || b.outcome !== 'failed' || a.code === b.code;
}

export function createDnsWatches(options: DnsWatchOptions): DnsWatches {
  const { minIntervalMs, maxIntervalMs } = options;
  const watchers = new Map<string, Watcher>();

  /** The next wait: back to the minimum after a change, else doubled; never below a found TTL. */
  const nextDelay = (watcher: Watcher, result: TxtLookupResult): number => {
    const changed = !watcher.last || !sameResult(watcher.last.result, result);
    const backedOff = changed ? minIntervalMs : Math.min(maxIntervalMs, watcher.delayMs * 2);
    // Before its TTL ends, a resolver answers a found record from its cache: asking is wasted.
    const ttlMs = result.outcome === 'found' && result.ttlS ? result.ttlS * 1000 : 0;
    return Math.min(maxIntervalMs, Math.max(backedOff, ttlMs));
  };

  const lookUp = async (host: string, watcher: Watcher): Promise<TxtLookupResult | undefined> => {
    const ownLookUp = async (): Promise<TxtLookupResult | undefined> => {
      options.onLookUp?.(host);
      // DNS_MAX_CONCURRENT refuses with RATE_LIMITED: this round is skipped, the next one asks.
      return options.resolver.resolveTxt(host).catch(() => undefined);
    };
    const { store } = options;
    if (!store) return ownLookUp();
    const shared = await store.lookUp(host, ownLookUp, (result) => nextDelay(watcher, result));
    return shared;
  };

  const schedule = (host: string, watcher: Watcher, delayMs: number) => {
    clearTimeout(watcher.timer);
    watcher.timer = setTimeout(() => void tick(host, watcher), delayMs);
    // A watch keeps no process alive: the subscriptions' streams do, and they end on SIGTERM.
    watcher.timer.unref();
  };

  const tick = async (host: string, watcher: Watcher) => {
    if (watcher.running) return;
    watcher.running = true;
    clearTimeout(watcher.timer);
    const result = await lookUp(host, watcher);
    watcher.running = false;
    // The last subscriber left while the look-up ran.
    if (watchers.get(host) !== watcher) return;
    if (!result) {
      schedule(host, watcher, minIntervalMs);
      return;
    }
    watcher.delayMs = nextDelay(watcher, result);
    watcher.last = { result, at: Date.now() };
    for (const listener of watcher.listeners) listener(result);
    schedule(host, watcher, watcher.delayMs);
  };

  return {
    get names() {
      return watchers.size;
    },
    watch(host, listener) {
      let watcher = watchers.get(host);
      if (!watcher) {
        watcher = { listeners: new Set(), delayMs: minIntervalMs, running: false };
        watchers.set(host, watcher);
      }
      const joined = watcher;
      joined.listeners.add(listener);
      // A result younger than the shortest wait is what DNS says now; an older one is asked again,
      // once for every subscriber that joins meanwhile.
      const { last } = joined;
      if (last && Date.now() - last.at < minIntervalMs) queueMicrotask(() => listener(last.result));
      else void tick(host, joined);
      return {
        close() {
          joined.listeners.delete(listener);
          if (joined.listeners.size > 0 || watchers.get(host) !== joined) return;
          clearTimeout(joined.timer);
          watchers.delete(host);
        },
      };
    },
  };
}

/** Why a watch ended: the record matched, one of its limits passed, or the server stops. */
export type WatchEnd = 'matched' | 'idle-limit' | 'time-limit' | 'shutdown';

export interface WatchEvent {
  result: TxtLookupResult;
  /** Set on the last event. */
  end?: WatchEnd | undefined;
}

export interface WatchUntilOptions {
  /** The event that ends the watch (the record matches). */
  isDone(result: TxtLookupResult): boolean;
  /** DNS_WATCH_IDLE_LIMIT_S and DNS_WATCH_TIME_LIMIT_S, in ms. */
  idleLimitMs: number;
  timeLimitMs: number;
  /** Aborted when the server stops: the watch sends its last event and completes. */
  shutdown: AbortSignal;
  /**
   * Told when the stream ends, why: a WatchEnd, or `cancelled` when the client left; a stream the
   * client leaves after its end is told `cancelled` too, so `onEnd` keeps the first it is told.
   */
  onEnd(reason: WatchEnd | 'cancelled', events: number): void;
}

/**
 * One subscriber's stream: an event at once, one per change, and a last one when `isDone`, a limit
 * passes or the server stops; then it completes. A client that leaves ends it at once (Repeater
 * settles a pending `next` on `return`, where an async generator would wait for the next event).
 */
export function watchUntil(
  watches: DnsWatches,
  host: string,
  options: WatchUntilOptions,
): AsyncIterableIterator<WatchEvent> {
  const repeater = new Repeater<WatchEvent>(async (push, stop) => {
    let previous: TxtLookupResult | undefined;
    let events = 0;
    let ended: WatchEnd | undefined;
    const finish = (end: WatchEnd, result: TxtLookupResult | undefined) => {
      if (ended) return;
      ended = end;
      events += 1;
      // No result yet (a resolver that never answered): the last event says the look-up timed out.
      void push({ result: result ?? { outcome: 'timeout' }, end }).then(() => stop());
    };
    let idle = setTimeout(() => finish('idle-limit', previous), options.idleLimitMs);
    const total = setTimeout(() => finish('time-limit', previous), options.timeLimitMs);
    const onShutdown = () => finish('shutdown', previous);
    options.shutdown.addEventListener('abort', onShutdown, { once: true });
    if (options.shutdown.aborted) onShutdown();
    const watch = watches.watch(host, (result) => {
      if (ended || (previous && sameResult(previous, result))) return;
      previous = result;
      clearTimeout(idle);
      idle = setTimeout(() => finish('idle-limit', previous), options.idleLimitMs);
      if (options.isDone(result)) {
        finish('matched', result);
        return;
      }
      events += 1;
      void push({ result });
    });
    await stop;
    watch.close();
    clearTimeout(idle);
    clearTimeout(total);
    options.shutdown.removeEventListener('abort', onShutdown);
    options.onEnd(ended ?? 'cancelled', events);
  });
  return {
    next: (value?: unknown) => repeater.next(value),
    throw: (error?: unknown) => repeater.throw(error),
    // A stream cancelled before its first read never starts the Repeater's executor: it ends here.
    async return(value?: unknown) {
      const result = await repeater.return(value);
      options.onEnd('cancelled', 0);
      return result;
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
