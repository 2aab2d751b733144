// `npm run bench -- --attribution`: what each layer of the facade costs, over HTTP. Each variant
// is its own process on core 0: the floor (bench/floor.ts on node:http), the same floor served by
// bare graphql-yoga, and the facade's production entry, whole and with each layer its
// configuration turns off left out (the product has no switch for the others, and gets none for a
// benchmark). In every round each variant serves the page for BENCH_DURATION_S seconds from
// BENCH_CONNECTIONS connections, one after another; a layer's cost is the median over the rounds
// of (whole - without it), CPU per request, so that a change of the machine's load between rounds
// falls on both sides.
//
// BENCH_BASE, the path of another checkout with its facade built (`npm run build` there), runs
// that build's facade variants too, alternated with this one's in every round, for a before and
// after measured in the same run: `git worktree add /tmp/base <commit>`, link its node_modules,
// build it, then `BENCH_BASE=/tmp/base npm run bench -- --attribution`.
import { freePort } from '../test/helpers/net.js';
import { serve } from './compare.js';
import { bases, startFacade, startFloor } from './processes.js';

const ROUNDS = Number(process.env.BENCH_ATTRIBUTION_ROUNDS ?? 5);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 4);
const BASE = bases[0];

// What the configuration can turn off: the layers a variant leaves out.
const OFF: Record<string, string> = {
  RATE_LIMIT_POINTS: '0',
  LOG_LEVEL: 'warn',
  RESPONSE_CACHE: 'false',
  FEDERATED_TRACING: 'false',
};

/** Facade variants: the settings each runs with; instructions.ts's too. */
export const FACADE_VARIANTS: Record<string, Record<string, string>> = {
  whole: {},
  ...Object.fromEntries(
    Object.entries(OFF).map(([name, value]) => [`with ${name}=${value}`, { [name]: value }]),
  ),
  'with all of these': OFF,
};

interface Server {
  pid: number;
  url: string;
  stop: () => void;
}

async function startVariants(sandboxUrl: string): Promise<Map<string, Server>> {
  const servers = new Map<string, Server>();
  const add = async (name: string, launch: (port: number) => ReturnType<typeof startFloor>) => {
    const port = await freePort();
    const child = await launch(port);
    servers.set(name, {
      pid: child.pid as number,
      url: `http://127.0.0.1:${port}/graphql`,
      stop: () => child.kill('SIGTERM'),
    });
  };
  await add('floor (node:http)', (port) => startFloor(port, sandboxUrl));
  await add('floor on Yoga', (port) => startFloor(port, sandboxUrl, 'yoga'));
  for (const [name, env] of Object.entries(FACADE_VARIANTS)) {
    await add(`facade ${name}`, (port) => startFacade(port, sandboxUrl, env));
    if (BASE) {
      await add(`base: facade ${name}`, (port) =>
        startFacade(port, sandboxUrl, env, 1, BASE.script),
      );
    }
  }
  return servers;
}

const cpuPerRequest = async (server: Server, body: string, seconds: number) =>
  (await serve(server, body, seconds)).cpuUs;

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export async function attribution(sandboxUrl: string, body: string): Promise<void> {
  const servers = await startVariants(sandboxUrl);
  try {
    // Warm every process (JIT, pools, caches) before anything counts.
    for (const server of servers.values()) await cpuPerRequest(server, body, 6);
    const measured = new Map<string, number[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, server] of servers) {
        const us = await cpuPerRequest(server, body, DURATION_S);
        measured.set(name, [...(measured.get(name) ?? []), us]);
      }
    }
    const wholes = {
      facade: measured.get('facade whole') as number[],
      base: measured.get('base: facade whole') ?? [],
    };
    const floor = median(measured.get('floor (node:http)') as number[]);
    const onYoga = measured.get('floor on Yoga') as number[];
    const paired = (a: number[], b: number[]) =>
      Math.round(median(a.map((us, round) => us - (b[round] as number))));
    console.table(
      [...measured].map(([name, values]) => ({
        variant: name,
        cpuUsPerRequest: Math.round(median(values)),
        ofFloor: Number((median(values) / floor).toFixed(2)),
        // Paired by round: what leaving the layer out saved (negative: it cost more without).
        wholeMinusThis: /^(base: )?facade with /.test(name)
          ? paired(name.startsWith('base') ? wholes.base : wholes.facade, values)
          : null,
        rounds: values.map(Math.round).join(' '),
      })),
    );
    // The figure to watch: what the facade's pipeline costs over bare Yoga.
    console.log(`facade whole - floor on Yoga: ${paired(wholes.facade, onYoga)} µs a request`);
    if (BASE) console.log(`base: the same: ${paired(wholes.base, onYoga)} µs a request`);
  } finally {
    for (const server of servers.values()) server.stop();
  }
}
