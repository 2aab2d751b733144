// What the benchmark and the soak share: the build they measure, and the facade and the sandbox as
// separate, pinned processes, observed through /proc.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));

/** Measured as it is deployed: compiled JavaScript (`npm run build`), not through tsx. */
export function build(): void {
  execFileSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' });
}

/** Starts a pinned process and waits until `readyUrl` answers; its log lines go nowhere. */
export async function start(
  core: number,
  script: string,
  env: Record<string, string>,
  readyUrl: string,
): Promise<ChildProcess> {
  const child = spawn(
    'taskset',
    // Compiled JavaScript needs no loader: tsx's loader thread would add its own memory and CPU.
    ['-c', String(core), process.execPath, script],
    {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const deadline = Date.now() + 30_000;
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
  throw new Error(`${script} did not answer ${readyUrl} within 30 s`);
}

/** The compiled sandbox on core 1 (with the load generator), ready once it answers. */
export function startSandbox(port: number, env: Record<string, string>): Promise<ChildProcess> {
  return start(
    1,
    'dist/sandbox/main.js',
    { SANDBOX_PORT: String(port), ...env },
    `http://127.0.0.1:${port}/__sandbox/counts`,
  );
}

/** The compiled facade on core 0 with production settings in front of `upstreamUrl`. */
export function startFacade(
  port: number,
  upstreamUrl: string,
  env: Record<string, string> = {},
): Promise<ChildProcess> {
  return start(
    0,
    'dist/src/main.js',
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      UPSTREAM_URL: upstreamUrl,
      NODE_ENV: 'production',
      ...env,
    },
    `http://127.0.0.1:${port}/health`,
  );
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After "pid (comm) ", utime and stime are the 12th and 13th fields.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** A memory figure of /proc/<pid>/status in MB: VmRSS (now) or VmHWM (the peak so far). */
function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

export const rssMb = (pid: number) => statusMb(pid, 'VmRSS');
export const peakRssMb = (pid: number) => statusMb(pid, 'VmHWM');
