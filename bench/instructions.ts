// `npm run bench -- --instructions`: the instructions each server executes per list request,
// counted by valgrind's callgrind. CPU time on this shared VM moves by ±30% between runs; a count
// moves by about ±10% (V8's background compiler is scheduled differently from run to run under
// valgrind: docs/performance.md), so compare variants of one run, and nothing else may run.
//
// Each variant runs under callgrind with instrumentation off (about ten times slower than native,
// not fifty) while it serves WARM requests, so that V8 has optimised its request path as it would
// natively (it goes on optimising the facade for about 25 s of native load); then counting is
// switched on (`callgrind_control -i on`) for COUNTED requests and off again. The main thread's
// count is the request path's; V8's compiler and GC helper threads are reported apart.
//
// Needs valgrind (Debian's `valgrind` package); not run by CI. Instructions are not time: the
// facade's code runs at fewer instructions per cycle than the floor's (docs/performance.md), so a
// cut is confirmed here and its worth is measured by `npm run bench`.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../test/helpers/net.js';
import { FACADE_VARIANTS } from './attribution.js';
import { CONNECTIONS, startFacade, startFloor } from './processes.js';

const WARM = Number(process.env.BENCH_INSTRUCTIONS_WARM ?? 12_000);
const COUNTED = Number(process.env.BENCH_INSTRUCTIONS_COUNTED ?? 1_000);

interface Count {
  mainPerRequest: number;
  otherThreadsPerRequest: number;
}

async function count(
  name: string,
  launch: (port: number, wrapper: string[]) => ReturnType<typeof startFloor>,
  body: string,
): Promise<Count> {
  const out = join(tmpdir(), `callgrind-${name.replace(/\W+/g, '-')}.out`);
  const port = await freePort();
  const child = await launch(port, [
    'valgrind',
    '--quiet',
    '--tool=callgrind',
    '--instr-atstart=no',
    // One file per thread: the main thread apart from V8's helpers.
    '--separate-threads=yes',
    // V8 rewrites its generated code in place.
    '--smc-check=all-non-file',
    `--callgrind-out-file=${out}`,
  ]);
  const url = `http://127.0.0.1:${port}/graphql`;
  const send = async (amount: number) => {
    const result = await autocannon({
      url,
      connections: CONNECTIONS,
      amount,
      // Under valgrind a request takes up to a second.
      timeout: 300,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (result.non2xx + result.errors + result.timeouts > 0)
      throw new Error(`${name}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
  };
  // valgrind names its control pipe after HOST, which startFacade and startFloor set; and
  // callgrind_control reports a pipe it cannot find on its output, not in its exit status.
  const control = (switchTo: 'on' | 'off') => {
    const said = execFileSync('callgrind_control', ['-i', switchTo, String(child.pid)], {
      env: { ...process.env, HOST: '127.0.0.1' },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (!/^\s*OK\.$/m.test(said)) throw new Error(`callgrind_control: ${said}`);
  };
  try {
    await send(WARM);
    control('on');
    await send(COUNTED);
    control('off');
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
  // <out>-01 is the main thread; the rest are V8's and libuv's.
  const files = readdirSync(tmpdir())
    .filter((file) => file.startsWith(`${out.split('/').pop()}-`))
    .sort();
  const totals = files.map((file) => {
    const text = readFileSync(join(tmpdir(), file), 'utf8');
    rmSync(join(tmpdir(), file));
    return Number(/^totals: (\d+)/m.exec(text)?.[1] ?? 0);
  });
  // callgrind also leaves the file it was named, empty: every count is in the threads' files.
  rmSync(out, { force: true });
  const [main = 0, ...others] = totals;
  return {
    mainPerRequest: main / COUNTED,
    otherThreadsPerRequest: others.reduce((sum, n) => sum + n, 0) / COUNTED,
  };
}

export async function instructions(sandboxUrl: string, body: string): Promise<void> {
  const counted = new Map<string, Count>();
  const options = (wrapper: string[]) => ({ wrapper, readyTimeoutMs: 180_000 });
  counted.set(
    'floor (node:http)',
    await count('floor', (port, w) => startFloor(port, sandboxUrl, 'node', options(w)), body),
  );
  counted.set(
    'floor on Yoga',
    await count('yoga', (port, w) => startFloor(port, sandboxUrl, 'yoga', options(w)), body),
  );
  for (const [name, env] of Object.entries(FACADE_VARIANTS)) {
    counted.set(
      `facade ${name}`,
      await count(
        name,
        (port, w) => startFacade(port, sandboxUrl, env, 1, undefined, options(w)),
        body,
      ),
    );
  }
  const floor = counted.get('floor (node:http)')?.mainPerRequest ?? Number.NaN;
  const whole = counted.get('facade whole')?.mainPerRequest ?? Number.NaN;
  console.table(
    [...counted].map(([variant, { mainPerRequest, otherThreadsPerRequest }]) => ({
      variant,
      mainThreadPerRequest: Math.round(mainPerRequest),
      ofFloor: Number((mainPerRequest / floor).toFixed(3)),
      wholeMinusThis: variant.startsWith('facade with ')
        ? Math.round(whole - mainPerRequest)
        : null,
      otherThreadsPerRequest: Math.round(otherThreadsPerRequest),
    })),
  );
}
