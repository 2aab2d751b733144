// `npm run bench -- --compare`: this checkout's facade against BENCH_BASE's, document by document,
// for a before and after measured in the same run. Every facade is started once (on core 0, the
// image's node options, the pod's heap) and warmed for BENCH_WARM_S; then in each of
// BENCH_COMPARE_ROUNDS rounds, each document, each facade in turn (the order reversed every other
// round) serves BENCH_REWARM_S of it unmeasured, then BENCH_DURATION_S measured. A row is the
// median over the rounds of req/s and of CPU per request (`/proc/<pid>/stat`), and their ratios to
// the first base: on this noisy machine a single run decides nothing, and CPU per request moves
// less with the load than req/s does. Settings pass through the environment to every facade, e.g.
// `JOIN_UPSTREAM_CALLS=false BENCH_BASE=/tmp/base npm run bench -- --compare`.
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { freePort } from '../test/helpers/net.js';
import { bases, CONNECTIONS, cpuSeconds, startFacade } from './processes.js';

const ROUNDS = Number(process.env.BENCH_COMPARE_ROUNDS ?? 3);
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const WARM_S = Number(process.env.BENCH_WARM_S ?? 25);
const REWARM_S = Number(process.env.BENCH_REWARM_S ?? 3);

interface Facade {
  name: string;
  pid: number;
  url: string;
}

interface Run {
  rps: number;
  cpuUs: number;
}

/** `body` POSTed to a server for `seconds`: its req/s, and the CPU per request of its process. */
export async function serve(
  server: { pid: number; url: string },
  body: string,
  seconds: number,
): Promise<Run> {
  const before = cpuSeconds(server.pid);
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  if (result.non2xx + result.errors + result.timeouts > 0)
    throw new Error(`${server.url}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  return {
    rps: result.requests.average,
    cpuUs: (1e6 * (cpuSeconds(server.pid) - before)) / result.requests.total,
  };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export async function compare(sandboxUrl: string, documents: Record<string, string>) {
  if (bases.length === 0) throw new Error('--compare needs BENCH_BASE: the checkouts to compare');
  const children: ChildProcess[] = [];
  try {
    const facades: Facade[] = [];
    for (const { name, script } of [{ name: 'this', script: undefined }, ...bases]) {
      const port = await freePort();
      const child = await startFacade(port, sandboxUrl, {}, 1, script);
      children.push(child);
      facades.push({ name, pid: child.pid as number, url: `http://127.0.0.1:${port}/graphql` });
    }
    const first = Object.values(documents)[0] as string;
    for (const facade of facades) await serve(facade, first, WARM_S);
    const runs = new Map<string, Run[]>();
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? facades : [...facades].reverse();
      for (const [document, body] of Object.entries(documents)) {
        for (const facade of order) {
          await serve(facade, body, REWARM_S);
          const key = `${document}\t${facade.name}`;
          runs.set(key, [...(runs.get(key) ?? []), await serve(facade, body, DURATION_S)]);
        }
      }
    }
    const baseName = (bases[0] as { name: string }).name;
    const rows = Object.keys(documents).flatMap((document) => {
      const of = (name: string) => runs.get(`${document}\t${name}`) ?? [];
      const base = of(baseName);
      return facades.map(({ name }) => {
        const measured = of(name);
        const rps = median(measured.map((run) => run.rps));
        const cpuUs = median(measured.map((run) => run.cpuUs));
        return {
          document,
          facade: name,
          rps: Math.round(rps),
          cpuUsPerRequest: Math.round(cpuUs),
          rpsOfBase: Number((rps / median(base.map((run) => run.rps))).toFixed(3)),
          cpuOfBase: Number((cpuUs / median(base.map((run) => run.cpuUs))).toFixed(3)),
          rounds: measured
            .map((run) => `${Math.round(run.rps)}/${Math.round(run.cpuUs)}`)
            .join(' '),
        };
      });
    });
    console.log(
      `Medians of ${ROUNDS} alternating rounds of ${DURATION_S} s (rounds: req/s / CPU µs per request), against ${baseName}:`,
    );
    console.table(rows);
    return rows;
  } finally {
    for (const child of children) child.kill('SIGTERM');
  }
}
