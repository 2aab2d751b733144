import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Registry } from 'prom-client';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import type { Config } from '../config/load.js';
import type { MetricsSource } from '../http/use-metrics.js';
import type { CallerKeys } from '../read/ranges.js';
import type { Logger } from '../telemetry/logger.js';

// prom-client and rate-limiter-flexible share the IPC channel: our messages have this prefix.
const READY = 'facade:cluster-ready';
const METRICS_REQUEST = 'facade:metrics-request';
const METRICS_REPLY = 'facade:metrics-reply';
const FORGET = 'facade:forget-ranges';
const FORGOTTEN = 'facade:forgotten-ranges';
// How long a mutation waits at most for the other workers to forget its caller's kept ranges and
// answers.
const FORGET_WAIT_MS = 200;

type Message =
  | { type: typeof READY; ready: boolean }
  | { type: typeof METRICS_REQUEST; id: number }
  | ({ type: typeof METRICS_REPLY; id: number } & MetricsText)
  | { type: typeof FORGET; id: number; keys: CallerKeys }
  | { type: typeof FORGOTTEN; id: number };

const isMessage = (value: unknown): value is Message =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { type?: unknown }).type === 'string' &&
  (value as { type: string }).type.startsWith('facade:');

type MetricsText = Awaited<ReturnType<MetricsSource>>;

/**
 * In a worker (undefined in a single process): whether every worker listens, false again while
 * one is replaced, the whole cluster's metrics, asked of the primary, and a caller's kept ranges
 * and answers forgotten by every worker.
 */
export function workerLink() {
  const worker = cluster.worker;
  if (!cluster.isWorker || !worker) return undefined;
  let ready = false;
  let next = 0;
  const pending = new Map<number, (reply: MetricsText) => void>();
  const forgetting = new Map<number, () => void>();
  let forget: ((keys: CallerKeys) => void) | undefined;
  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === READY) ready = message.ready;
    if (message.type === METRICS_REPLY) {
      pending.get(message.id)?.({ text: message.text, contentType: message.contentType });
      pending.delete(message.id);
    }
    if (message.type === FORGET) {
      forget?.(message.keys);
      process.send?.({ type: FORGOTTEN, id: message.id } satisfies Message);
    }
    if (message.type === FORGOTTEN) forgetting.get(message.id)?.();
  });
  return {
    id: String(worker.id),
    clusterReady: () => ready,
    /** What this worker does when another forgets a caller's kept ranges and answers. */
    onForget(listener: (keys: CallerKeys) => void) {
      forget = listener;
    },
    /** Resolves once every other worker has forgotten them, or after FORGET_WAIT_MS. */
    forgetElsewhere: (keys: CallerKeys) =>
      new Promise<void>((resolve) => {
        const id = next++;
        const done = () => {
          clearTimeout(timer);
          forgetting.delete(id);
          resolve();
        };
        const timer = setTimeout(done, FORGET_WAIT_MS);
        forgetting.set(id, done);
        process.send?.({ type: FORGET, id, keys } satisfies Message);
      }),
    metrics: () =>
      new Promise<MetricsText>((resolve) => {
        const id = next++;
        pending.set(id, resolve);
        process.send?.({ type: METRICS_REQUEST, id } satisfies Message);
      }),
  };
}

// A worker that keeps dying is restarted later each time (docs/operations.md#workers).
const RESTART_BASE_MS = 200;
const RESTART_MAX_MS = 30_000;
const CRASH_MEMORY_MS = 60_000;

/** Records a crash; the restart's delay doubles with each crash of the last minute. */
function restartDelay(crashes: number[]): number {
  const now = Date.now();
  crashes.push(now);
  while ((crashes[0] ?? now) < now - CRASH_MEMORY_MS) crashes.shift();
  return Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (crashes.length - 1));
}

/** Every worker's metrics, with the primary's own `facade_worker_restarts_total`. */
function clusterRegistry() {
  const aggregator = new AggregatorRegistry();
  const own = new Registry();
  const restarts = new Counter({
    name: 'facade_worker_restarts_total',
    help: 'Workers that died and were replaced',
    registers: [own],
  });
  const clusterMetrics: MetricsSource = async () => {
    const [workers, primary] = await Promise.all([aggregator.clusterMetrics(), own.metrics()]);
    return { text: `${workers}\n${primary}`, contentType: aggregator.contentType };
  };
  return { restarts, clusterMetrics };
}

const workers = () => Object.values(cluster.workers ?? {});

/** A worker's mutation: every other worker forgets the caller's ranges and answers, then it is told. */
function createForgetRelay() {
  const relays = new Map<number, { left: number; done: () => void }>();
  let relayed = 0;
  return {
    forget(from: Worker, id: number, keys: CallerKeys) {
      const reply = () => {
        if (from.isConnected()) from.send({ type: FORGOTTEN, id } satisfies Message);
      };
      const others = workers().filter((other) => other && other !== from && other.isConnected());
      if (others.length === 0) return reply();
      const relay = relayed++;
      relays.set(relay, { left: others.length, done: reply });
      // A worker that dies meanwhile never answers: the asking worker stops waiting by itself.
      setTimeout(() => relays.delete(relay), FORGET_WAIT_MS).unref();
      for (const other of others) other?.send({ type: FORGET, id: relay, keys } satisfies Message);
    },
    forgotten(relay: number) {
      const waiting = relays.get(relay);
      if (!waiting || --waiting.left > 0) return;
      relays.delete(relay);
      waiting.done();
    },
    receive(from: Worker, message: Message) {
      if (message.type === FORGET) this.forget(from, message.id, message.keys);
      if (message.type === FORGOTTEN) this.forgotten(message.id);
    },
  };
}

/**
 * The primary: forks `count` workers that share the port, replaces a worker that dies, answers
 * their metrics requests, tells them when all are ready, and drains them all on SIGTERM.
 * Returns the whole cluster's metrics, for a METRICS_PORT of its own.
 */
export function runPrimary(config: Config, logger: Logger, count: number): MetricsSource {
  // The in-memory rate limit is kept here, so N workers share one budget per client.
  new RateLimiterClusterMaster();
  const { restarts, clusterMetrics } = clusterRegistry();
  const listening = new Set<number>();
  const crashes: number[] = [];
  let stopping = false;
  // A worker that dies before any worker ever listened failed to start: the primary stops with it.
  let started = false;

  const broadcast = () => {
    const ready = !stopping && listening.size === count;
    for (const worker of workers()) worker?.send({ type: READY, ready } satisfies Message);
  };

  const relay = createForgetRelay();

  const fork = () => {
    const worker = cluster.fork();
    worker.on('listening', () => {
      started = true;
      listening.add(worker.id);
      broadcast();
    });
    worker.on('message', (message: unknown) => {
      if (isMessage(message)) relay.receive(worker, message);
      if (!isMessage(message) || message.type !== METRICS_REQUEST) return;
      void clusterMetrics().then(
        ({ text, contentType }) =>
          worker.send({ type: METRICS_REPLY, id: message.id, text, contentType } satisfies Message),
        (error: unknown) => logger.error({ err: error }, 'cluster metrics failed'),
      );
    });
  };

  cluster.on('exit', (worker, code, signal) => {
    listening.delete(worker.id);
    if (stopping) {
      if (workers().length === 0) {
        logger.info('every worker has stopped');
        logger.flush(() => process.exit(0));
      }
      return;
    }
    if (!started) {
      stopping = true;
      for (const other of workers()) other?.process.kill('SIGKILL');
      process.exit(1);
    }
    const delay = restartDelay(crashes);
    restarts.inc();
    logger.error(
      { worker: worker.id, code, signal, restartInMs: delay },
      'worker died; replacing it',
    );
    broadcast();
    setTimeout(() => {
      if (!stopping) fork();
    }, delay);
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, workers: listening.size }, 'draining every worker');
    broadcast();
    for (const worker of workers()) worker?.process.kill('SIGTERM');
    // A worker that does not exit within its own grace is cut, so the primary always ends.
    setTimeout(() => {
      for (const worker of workers()) worker?.process.kill('SIGKILL');
    }, config.shutdownGraceMs + 5_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  logger.info({ workers: count }, `starting ${count} workers`);
  for (let i = 0; i < count; i++) fork();
  return clusterMetrics;
}
