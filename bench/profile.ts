// `npm run bench -- --profile`: where a list request's CPU time goes, from V8's own CPU profiles
// (`node --cpu-prof`), for the floor, the floor on Yoga and the facade side by side. Each server is
// loaded for BENCH_WARM_S seconds, then profiled under BENCH_PROFILE_S seconds of the same load;
// only the samples taken in that window count (V8's profile and this process read the same
// monotonic clock). A sample is charged to the innermost frame that has a script (native code,
// such as a socket write or a compiled query's function, to the JavaScript that called it), and
// frames are grouped by package or file into the rows of docs/performance.md's table.
//
// Two rows are picked out by function, since their cost is inlined into a caller's frame: the
// upstream answer's JSON.parse (undici's `consumeEnd`, behind body.json() and body.text(); the
// facade's `parseBody`) and the answer's JSON.stringify (Yoga's `jsonStringifyResultWithoutInternals`;
// the floor's `handle`, which also parses its small request body).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../test/helpers/net.js';
import { CONNECTIONS, startFacade, startFloor } from './processes.js';

const WARM_S = Number(process.env.BENCH_WARM_S ?? 25);
const PROFILE_S = Number(process.env.BENCH_PROFILE_S ?? 20);
// A sample every 250 µs: about 2 to 4 per request, thousands per row over the window.
const INTERVAL_US = 250;

/** The rows, first match wins; `file` is a frame's script URL. */
const GROUPS: ReadonlyArray<[row: string, file: RegExp]> = [
  [
    'request log and metrics (pino, prom-client, the request-log and metrics plugins)',
    /node_modules\/(pino|sonic-boom|prom-client|fast-redact|@pinojs)\/|dist\/src\/telemetry\/(?!use-(tracing|upstream-calls))|dist\/src\/http\/(health|use-metrics)\.js/,
  ],
  [
    "the facade's other plugins (CSRF and CORS, rate limit, limits, cost, APQ, @defer, compression)",
    /dist\/src\/(http|security|telemetry)\/|dist\/src\/(credentials|documents)\.js|node_modules\/(rate-limiter-flexible|@escape\.tech|@graphql-yoga\/plugin-[^/]+)\//,
  ],
  [
    'schema and resolvers (Pothos and its validation)',
    /node_modules\/@pothos\/|dist\/src\/schema\//,
  ],
  [
    'GraphQL execution (graphql-jit and its compiled query, graphql-js)',
    /node_modules\/(graphql-jit|graphql|@envelop\/graphql-jit|fast-json-stringify)\//,
  ],
  [
    'Yoga, whatwg-node and envelop',
    /node_modules\/(graphql-yoga|@whatwg-node\/[^/]+|@envelop\/core|lru-cache)\//,
  ],
  [
    "the facade's upstream client (deadline, cancellation, breaker, loaders, decoding)",
    /dist\/src\/upstream\/|node_modules\/(cockatiel|dataloader)\//,
  ],
  ['undici (pool, llhttp)', /node_modules\/undici\/|^wasm:/],
  ["the floor's own code (server, resolver, client calls)", /dist\/bench\/floor\.js/],
  ["the facade's app and context", /dist\/src\//],
  [
    "node's HTTP, sockets and streams",
    /^node:(_http_\w+|net|stream|buffer|url|internal\/(stream_base_commons|streams\/|buffer|url|http))/,
  ],
  [
    "node's events, timers and microtask queue",
    /^node:(events|timers|async_hooks|internal\/(timers|process\/task_queues|process\/promises|async_hooks))/,
  ],
  ['other node internals', /^node:/],
  ['other packages', /node_modules\//],
];
const JSON_PARSE = 'JSON.parse of the upstream answer';
const JSON_STRINGIFY = 'JSON.stringify of the GraphQL answer';
const BY_FUNCTION: ReadonlyArray<[row: string, functionName: string, file: RegExp]> = [
  [JSON_PARSE, 'consumeEnd', /node_modules\/undici\//],
  [JSON_PARSE, 'parseBody', /dist\/src\/upstream\/responses\.js/],
  [JSON_STRINGIFY, 'jsonStringifyResultWithoutInternals', /node_modules\/graphql-yoga\//],
  [JSON_STRINGIFY, 'handle', /dist\/bench\/floor\.js/],
];
const ROWS = [
  JSON_PARSE,
  JSON_STRINGIFY,
  ...GROUPS.map(([row]) => row),
  'garbage collection',
  'V8 and native code (compiler, runtime, libuv)',
];

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** µs per request in each row, over the samples taken between `fromUs` and `toUs`. */
export function attribute(profile: Profile, fromUs: number, toUs: number, requests: number) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node);
  const rowOf = (sampled: ProfileNode): string | undefined => {
    if (sampled.callFrame.functionName === '(idle)') return undefined;
    if (sampled.callFrame.functionName === '(garbage collector)') return 'garbage collection';
    let frame: ProfileNode | undefined = sampled;
    while (frame && !frame.callFrame.url) frame = parent.get(frame.id);
    if (!frame) return 'V8 and native code (compiler, runtime, libuv)';
    const { functionName, url } = frame.callFrame;
    const named = BY_FUNCTION.find(([, name, file]) => name === functionName && file.test(url));
    if (named) return named[0];
    return GROUPS.find(([, pattern]) => pattern.test(url))?.[0] ?? 'other packages';
  };
  const us = new Map<string, number>();
  let time = profile.startTime;
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    time += delta;
    if (time < fromUs || time > toUs) return;
    const row = rowOf(byId.get(id) as ProfileNode);
    if (row) us.set(row, (us.get(row) ?? 0) + delta);
  });
  return new Map([...us].map(([row, total]) => [row, total / requests]));
}

const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

async function profileOne(
  launch: (port: number, nodeFlags: string[]) => ReturnType<typeof startFloor>,
  body: string,
) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  const port = await freePort();
  const child = await launch(port, [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    `--cpu-prof-interval=${INTERVAL_US}`,
  ]);
  const load = (duration: number) =>
    autocannon({
      url: `http://127.0.0.1:${port}/graphql`,
      connections: CONNECTIONS,
      duration,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
  try {
    await load(WARM_S);
    const from = monotonicUs();
    const result = await load(PROFILE_S);
    const to = monotonicUs();
    if (result.non2xx + result.errors + result.timeouts > 0)
      throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors under profiling`);
    // The profile is written when the process exits (both servers exit 0 on SIGTERM).
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (!file) throw new Error('no CPU profile was written');
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    if (profile.startTime > from) throw new Error("the profile's clock is not this process's");
    return {
      rps: result.requests.average,
      us: attribute(profile, from, to, result.requests.total),
    };
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function profile(sandboxUrl: string, body: string): Promise<void> {
  const servers = {
    floor: (port: number, nodeFlags: string[]) =>
      startFloor(port, sandboxUrl, 'node', { nodeFlags }),
    'floor on Yoga': (port: number, nodeFlags: string[]) =>
      startFloor(port, sandboxUrl, 'yoga', { nodeFlags }),
    facade: (port: number, nodeFlags: string[]) =>
      startFacade(port, sandboxUrl, {}, 1, 'dist/src/main.js', { nodeFlags }),
  };
  const measured: Record<string, Awaited<ReturnType<typeof profileOne>>> = {};
  for (const [name, launch] of Object.entries(servers)) {
    measured[name] = await profileOne(launch, body);
  }
  const cell = (name: string, row: string) => Math.round(measured[name]?.us.get(row) ?? 0);
  const rows = ROWS.map((row) => ({
    row,
    ...Object.fromEntries(Object.keys(servers).map((name) => [name, cell(name, row)])),
  }));
  const total = (name: string) =>
    Math.round([...(measured[name]?.us.values() ?? [])].reduce((sum, us) => sum + us, 0));
  rows.push({
    row: 'CPU µs per list request (main thread, under the profiler)',
    ...Object.fromEntries(Object.keys(servers).map((name) => [name, total(name)])),
  });
  rows.push({
    row: 'requests per second under the profiler',
    ...Object.fromEntries(
      Object.keys(servers).map((name) => [name, Math.round(measured[name]?.rps ?? 0)]),
    ),
  });
  console.log(
    `CPU µs per list request on the main thread, from --cpu-prof, ${PROFILE_S} s after ${WARM_S} s of load:`,
  );
  console.table(rows);
}
