// A fleet as deploy/kubernetes/ runs one, on loopback: the sandbox upstream, one redis-server,
// replicas of the real facade process on one Redis, and HAProxy in front of them
// health-checking /readiness. Shared by the fleet's end-to-end test and `npm run bench -- --fleet`.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, waitForPort } from './net.js';
import { startRedis, stopRedis } from './redis.js';

/** Whether Debian's `haproxy` is on PATH: without it the fleet's tests are skipped. */
export const hasHaproxy = spawnSync('haproxy', ['-v']).status === 0;

if (!hasHaproxy && process.env.CI !== 'true') {
  process.emitWarning(
    'haproxy is not installed: the fleet tests are skipped (apt-get install haproxy)',
  );
}

/** How a program is run: the command and its arguments (`node`, its flags, the script). */
export type Command = readonly string[];

export interface FleetOptions {
  replicas?: number;
  /** Runs one replica; default: the production entry through tsx, as the e2e tests run it. */
  facade?: Command;
  /** Runs the sandbox; default: its own entry through tsx. */
  sandbox?: Command;
  /** The sandbox's settings (SANDBOX_CACHE_CONTROL, ...); faults are always on. */
  sandboxEnv?: Record<string, string>;
  /** Every replica's settings beside the fleet's own (PORT, UPSTREAM_URL, REDIS_URL). */
  env?: Record<string, string>;
  /**
   * A Redis of the caller's (a Sentinel's URL, say), or null for replicas without one; default: a
   * redis-server of the fleet's.
   */
  redisUrl?: string | null;
}

export interface Replica {
  readonly name: string;
  readonly port: number;
  /** The replica itself, past the load balancer. */
  readonly url: string;
  /** The running process; replaced by a restart. */
  child: ChildProcess;
}

export interface Fleet {
  /** The load balancer's GraphQL endpoint. */
  readonly url: string;
  readonly sandboxUrl: string;
  readonly redisUrl: string | undefined;
  readonly replicas: readonly Replica[];
  /** Restarts one replica as a rolling update does; resolves once the balancer sends it traffic. */
  restart(replica: Replica, options?: RestartOptions): Promise<void>;
  /** Every replica, one after another. */
  rollingRestart(options?: RestartOptions): Promise<void>;
  /** The balancer's view of each replica: `UP`, `DOWN`, `DRAIN`, `MAINT`, ... */
  states(): Promise<Record<string, string>>;
  /** Upstream calls the sandbox has answered so far, by route (`GET /git/v1/repo`). */
  upstreamCounts(): Promise<Record<string, number>>;
  /** Sets a sandbox fault on a route (`GET /git/v1/repo`), or clears every fault. */
  fault(route: string | undefined, fault?: object): Promise<void>;
  stop(): Promise<void>;
}

export interface RestartOptions {
  /**
   * Take the replica out of the balancer before SIGTERM, as Kubernetes removes a terminating pod's
   * endpoint while its preStop hook sleeps (deploy/kubernetes/deployment.yaml); default true.
   * Without it the balancer learns of the drain from /readiness and refused connections alone.
   */
  preStop?: boolean;
  /** Runs once the old process has exited, before the new one starts. */
  whileDown?: () => Promise<void>;
}

const ROOT = new URL('../..', import.meta.url).pathname;
const TSX = ['--import', 'tsx'];
const DEFAULT_FACADE: Command = [process.execPath, ...TSX, 'src/main.ts'];
const DEFAULT_SANDBOX: Command = [process.execPath, ...TSX, 'sandbox/main.ts'];
const BACKEND = 'facade';
// The balancer's health checks: short, so that a replica is out within a few hundred ms of its
// /readiness failing and in again once it has answered twice; each check may take a second, as
// a loaded replica's answer can take longer than the interval.
const CHECK_INTER_MS = 200;

/** Only what Node needs; each program gets its settings from the fleet, not from this process. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR'] as const) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** A child whose stderr is kept (the last 8 KiB) for the error that says why it did not start. */
function run(command: Command, env: Record<string, string>) {
  const [file, ...args] = command;
  if (!file) throw new Error('empty command');
  const child = spawn(file, args, {
    cwd: ROOT,
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8192);
  });
  return { child, stderr: () => stderr };
}

/** Resolves once `url` answers 2xx; throws if the process exits first or the time runs out. */
async function untilAnswers(
  url: string,
  started: ReturnType<typeof run>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { child } = started;
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${child.spawnargs.join(' ')} exited:\n${started.stderr()}`);
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${url} did not answer within ${timeoutMs} ms:\n${started.stderr()}`);
    }
    await sleep(100);
  }
}

/** A call to the sandbox's control routes; if it fails, the error says how the sandbox ended. */
function control(
  sandbox: ReturnType<typeof run>,
  url: string,
  init?: RequestInit,
): Promise<Response> {
  return fetch(url, init).catch((error: unknown) => {
    const { exitCode, signalCode } = sandbox.child;
    throw new Error(
      `the sandbox did not answer ${url} (exit ${exitCode ?? signalCode ?? 'none yet'}):\n${sandbox.stderr()}`,
      { cause: error },
    );
  });
}

/** SIGTERM (or `signal`), then SIGKILL after `waitMs`; resolves once the process is gone. */
export async function stopChild(
  child: ChildProcess,
  waitMs = 30_000,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  if ((await Promise.race([exited, sleep(waitMs).then(() => 'timeout')])) !== 'timeout') return;
  child.kill('SIGKILL');
  await exited;
}

function haproxyConfig(socket: string, port: number, replicas: readonly Replica[]): string {
  const servers = replicas.map(
    (replica) => `  server ${replica.name} 127.0.0.1:${replica.port} check`,
  );
  return `global
  maxconn 2000
  stats socket ${socket} mode 600 level admin

defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 10s
  timeout queue 5s
  timeout check 1s
  # A connection refused (a replica between its SIGTERM and the balancer's next check) is tried
  # again on another server. Nothing else is retried: a request the replica took and lost must
  # show as a failure, not be replayed elsewhere.
  retries 3
  option redispatch 1
  retry-on conn-failure

frontend graphql
  bind 127.0.0.1:${port}
  default_backend ${BACKEND}

backend ${BACKEND}
  balance roundrobin
  http-reuse always
  option httpchk GET /readiness
  http-check expect status 200
  default-server inter ${CHECK_INTER_MS}ms fastinter ${CHECK_INTER_MS}ms downinter ${CHECK_INTER_MS}ms fall 2 rise 2
${servers.join('\n')}
`;
}

/** One command on HAProxy's runtime API (its stats socket); resolves with the answer. */
function haproxyCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = connect(socket);
    let answer = '';
    connection.setEncoding('utf8');
    connection.on('data', (chunk: string) => {
      answer += chunk;
    });
    connection.once('error', reject);
    connection.once('end', () => resolve(answer));
    connection.end(`${command}\n`);
  });
}

/** Starts the sandbox, Redis, the replicas and HAProxy; `stop()` ends every one of them. */
export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'fleet-'));
  let redisProcess: ChildProcess | undefined;
  const stop = async () => {
    await Promise.allSettled(children.map((child) => stopChild(child, 5_000, 'SIGKILL')));
    await stopRedis(redisProcess);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    return await assemble(options, dir, children, stop, (child) => {
      redisProcess = child;
    });
  } catch (error) {
    await stop();
    throw error;
  }
}

async function assemble(
  options: FleetOptions,
  dir: string,
  children: ChildProcess[],
  stop: () => Promise<void>,
  ownRedis: (child: ChildProcess) => void,
): Promise<Fleet> {
  const sandboxPort = await freePort();
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const sandbox = run(options.sandbox ?? DEFAULT_SANDBOX, {
    SANDBOX_PORT: String(sandboxPort),
    SANDBOX_FAULTS: 'true',
    ...options.sandboxEnv,
  });
  children.push(sandbox.child);
  await untilAnswers(`${sandboxUrl}/__sandbox/counts`, sandbox);

  let redisUrl = options.redisUrl ?? undefined;
  if (options.redisUrl === undefined) {
    const redis = await startRedis();
    ownRedis(redis.process);
    redisUrl = redis.url;
  }

  const replicaEnv = (port: number) => ({
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    UPSTREAM_URL: sandboxUrl,
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    WORKERS: '1',
    LOG_LEVEL: 'warn',
    // Every request comes from the balancer's one address: a per-address limit would refuse the
    // load itself.
    RATE_LIMIT_POINTS: '1000000000',
    RATE_LIMIT_ADDRESS_POINTS: '1000000000',
    ...options.env,
  });
  const launch = async (replica: Pick<Replica, 'port' | 'url'>) => {
    const started = run(options.facade ?? DEFAULT_FACADE, replicaEnv(replica.port));
    children.push(started.child);
    await untilAnswers(`http://127.0.0.1:${replica.port}/readiness`, started);
    return started.child;
  };
  const count = options.replicas ?? 3;
  const ports = await Promise.all(Array.from({ length: count }, () => freePort()));
  const replicas: Replica[] = await Promise.all(
    ports.map(async (port, index) => {
      const replica = { name: `r${index + 1}`, port, url: `http://127.0.0.1:${port}/graphql` };
      return { ...replica, child: await launch(replica) };
    }),
  );

  const socket = join(dir, 'admin.sock');
  const balancerPort = await freePort();
  const configFile = join(dir, 'haproxy.cfg');
  writeFileSync(configFile, haproxyConfig(socket, balancerPort, replicas));
  const balancer = run(['haproxy', '-db', '-f', configFile], {});
  children.push(balancer.child);
  // Its runtime API answers once it has bound everything; the port alone could be another's.
  const admin = async (command: string) => {
    const { exitCode, signalCode } = balancer.child;
    if (exitCode !== null || signalCode !== null)
      throw new Error(`haproxy exited (${exitCode ?? signalCode}):\n${balancer.stderr()}`);
    return haproxyCommand(socket, command);
  };
  const deadline = Date.now() + 10_000;
  while (
    !(await admin('show info').then(
      (info) => info.includes('Pid:'),
      () => false,
    ))
  ) {
    if (Date.now() > deadline) throw new Error(`haproxy did not start:\n${balancer.stderr()}`);
    await sleep(50);
  }
  await waitForPort(balancerPort);

  const states = async () => {
    const csv = await admin('show stat');
    const [header = '', ...rows] = csv.trim().split('\n');
    const columns = header.replace(/^# /, '').split(',');
    const [proxy, server, status] = ['pxname', 'svname', 'status'].map((name) =>
      columns.indexOf(name),
    ) as [number, number, number];
    const result: Record<string, string> = {};
    for (const row of rows) {
      const fields = row.split(',');
      const name = fields[server] ?? '';
      if (fields[proxy] === BACKEND && replicas.some((replica) => replica.name === name))
        result[name] = (fields[status] ?? '').split(' ')[0] ?? '';
    }
    return result;
  };
  const untilState = async (replica: Replica, wanted: (state: string) => boolean) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const state = (await states())[replica.name] ?? '';
      if (wanted(state)) return;
      if (Date.now() > deadline)
        throw new Error(`HAProxy still says ${replica.name} is ${state} after 30 s`);
      await sleep(CHECK_INTER_MS / 2);
    }
  };
  await Promise.all(replicas.map((replica) => untilState(replica, (state) => state === 'UP')));

  const server = (replica: Replica) => `${BACKEND}/${replica.name}`;
  const restart = async (replica: Replica, { preStop = true, whileDown }: RestartOptions = {}) => {
    if (preStop) {
      // The endpoint's removal: no new request goes to it, those in flight finish.
      await admin(`set server ${server(replica)} state drain`);
      await untilState(replica, (state) => state === 'DRAIN');
    }
    // The facade drains on SIGTERM: /readiness answers 503, requests in flight finish, it exits.
    await stopChild(replica.child);
    const gone = replica.child;
    children.splice(children.indexOf(gone), 1);
    await untilState(replica, (state) => state !== 'UP');
    await whileDown?.();
    replica.child = await launch(replica);
    if (preStop) await admin(`set server ${server(replica)} state ready`);
    await untilState(replica, (state) => state === 'UP');
  };

  return {
    url: `http://127.0.0.1:${balancerPort}/graphql`,
    sandboxUrl,
    redisUrl,
    replicas,
    restart,
    async rollingRestart(restartOptions) {
      for (const replica of replicas) await restart(replica, restartOptions);
    },
    states,
    async upstreamCounts() {
      const response = await control(sandbox, `${sandboxUrl}/__sandbox/counts`);
      return ((await response.json()) as { counts: Record<string, number> }).counts;
    },
    async fault(route, fault) {
      const response = route
        ? await control(sandbox, `${sandboxUrl}/__sandbox/faults/${route.replace(' ', '')}`, {
            method: 'PUT',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(fault ?? {}),
          })
        : await control(sandbox, `${sandboxUrl}/__sandbox/faults`, { method: 'DELETE' });
      if (!response.ok) throw new Error(`sandbox refused the fault: ${await response.text()}`);
    },
    stop,
  };
}

/** One answer of the load: its latency, and why it failed, if it did. */
export interface Answer {
  /** When it was sent (Date.now()). */
  at: number;
  ms: number;
  /** Unset for a 200 with data and no errors. */
  failure?: string;
}

export interface Load {
  /** Ends the load (the requests in flight finish) and resolves with every answer. */
  stop(): Promise<Answer[]>;
  /** Resolves with every answer once the load has reached its bound in count or time. */
  readonly finished: Promise<Answer[]>;
  /** Answers so far. */
  readonly answers: readonly Answer[];
}

const PAGE = 'total offset hasNextPage items { id defaultBranch branches { name } }';
/** The mixed reads of the load: pages of several sizes and offsets, and the connection. */
export const MIXED_QUERIES: readonly string[] = [
  `{ repositories(limit: 20) { ${PAGE} } }`,
  `{ repositories(limit: 10, offset: 20) { ${PAGE} } }`,
  `{ a: repositories(limit: 5, offset: 40) { ${PAGE} } b: repositories(limit: 5, offset: 45) { total } }`,
  '{ repositoriesConnection(first: 10) { totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }',
];

export interface LoadOptions {
  /** Requests in flight at once. */
  concurrency?: number;
  /** At most this many requests in all... */
  maxRequests?: number;
  /** ...and for at most this long. */
  maxMs?: number;
  /** The callers (`authorization`) the requests take turns as. */
  callers?: number;
  queries?: readonly string[];
}

/**
 * Steady reads through `url` until `stop()` or a bound: each answer is parsed, since a GraphQL
 * error is a 200 too. Every request has a deadline, so a lost one is a failure, not a hang.
 */
export function startLoad(url: string, options: LoadOptions = {}): Load {
  const {
    concurrency = 8,
    maxRequests = 100_000,
    maxMs = 120_000,
    callers = 4,
    queries = MIXED_QUERIES,
  } = options;
  const answers: Answer[] = [];
  const until = Date.now() + maxMs;
  let stopped = false;
  let sent = 0;
  const one = async (n: number): Promise<Answer> => {
    const at = Date.now();
    const started = performance.now();
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer caller-${n % callers}`,
        },
        body: JSON.stringify({ query: queries[n % queries.length] }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      const ms = performance.now() - started;
      let body: { data?: unknown; errors?: unknown[] } = {};
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        // Not JSON (the balancer's own 503 page): the status says what happened.
      }
      if (response.status !== 200 || body.errors?.length || !body.data)
        return { at, ms, failure: `${response.status} ${text.slice(0, 300)}` };
      return { at, ms };
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return { at, ms: performance.now() - started, failure: reason };
    }
  };
  const loop = async () => {
    while (!stopped && sent < maxRequests && Date.now() < until) answers.push(await one(sent++));
  };
  const running = Promise.all(Array.from({ length: concurrency }, loop));
  return {
    answers,
    finished: running.then(() => answers),
    async stop() {
      stopped = true;
      await running;
      return answers;
    },
  };
}

/** What went wrong, one line an answer: empty when every answer was a 200 with data. */
export const failures = (answers: readonly Answer[]): string[] =>
  answers.flatMap((answer) => (answer.failure ? [answer.failure] : []));

/** The latency at quantile `q` (0.99 for p99), in whole ms. */
export function quantile(answers: readonly Answer[], q: number): number {
  const sorted = answers.map((answer) => answer.ms).sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(q * (sorted.length - 1))] ?? 0);
}
