import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** The facade started as `npm start` starts it: a real process, real env, real stdout. */
export interface FacadeProcess {
  child: ChildProcess;
  port: number;
  url: string;
  /** Set when `npm start`'s development entry started the sandbox (no UPSTREAM_URL). */
  sandboxUrl: string | undefined;
  /** Parsed JSON log lines so far (stdout). */
  lines: Array<Record<string, unknown>>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `waitMs`; always resolves. */
  stop(waitMs?: number): Promise<number | string>;
}

/** Where and how the process starts: by default `npm start`'s entry, through tsx. */
export interface StartOptions {
  timeoutMs?: number;
  /** Another checkout or install to run from (a production install, say). */
  cwd?: string;
  /** Node's arguments; default: the development entry (scripts/dev.ts) through tsx. */
  entry?: string[];
  /** The program run with `entry` as its arguments, `npm` say; default: this Node. */
  command?: string;
}

// Without UPSTREAM_URL it starts the sandbox, then the facade in front of it; with one, it is the
// production entry (src/main.ts) alone.
const DEV_ENTRY = ['--import', 'tsx', 'scripts/dev.ts'];

/** The facade's child process with its output collected as it comes. */
function spawnFacade(env: Record<string, string>, options: StartOptions = {}) {
  const child = spawn(options.command ?? process.execPath, options.entry ?? DEV_ENTRY, {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  return { child, stdout: () => stdout, stderr: () => stderr };
}

function baseEnv(): NodeJS.ProcessEnv {
  // The child reads only what a test gives it, plus what Node itself needs.
  const { PATH, HOME, TMPDIR } = process.env;
  return { PATH, HOME, TMPDIR, PORT: '0', LOG_LEVEL: 'info' };
}

/** Runs the facade to completion (for start-up failures): its exit code and output. */
export function runFacade(
  env: Record<string, string>,
  timeoutMs = 20_000,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const { child, stdout, stderr } = spawnFacade(env);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout: stdout(), stderr: stderr() });
    });
  });
}

/** Starts the facade as `npm start` does; resolves once it has logged its port and upstream. */
export async function startFacade(
  env: Record<string, string> = {},
  options: StartOptions = {},
): Promise<FacadeProcess> {
  const { timeoutMs = 30_000 } = options;
  const { child, stdout, stderr } = spawnFacade(env, options);
  const lines: Array<Record<string, unknown>> = [];
  child.stdout?.on('data', () => {
    lines.length = 0;
    for (const line of stdout().split('\n')) {
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const stop = async (waitMs = 10_000) => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const outcome = await Promise.race([exited, sleep(waitMs).then(() => 'timeout' as const)]);
    if (outcome !== 'timeout') return outcome;
    child.kill('SIGKILL');
    return exited;
  };

  const deadline = Date.now() + timeoutMs;
  while (!lines.some((line) => typeof line.port === 'number')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop(1_000);
      throw new Error(`facade did not start:\n${stdout()}\n${stderr()}`);
    }
    await sleep(50);
  }
  // The facade's upstream line follows its listening line in the same tick.
  const listening = lines.findIndex((line) => typeof line.port === 'number');
  while (!lines.slice(listening).some((line) => 'upstream' in line) && Date.now() < deadline)
    await sleep(20);
  const port = Number(lines[listening]?.port);
  const sandboxUrl = lines.find((line) => typeof line.sandboxUrl === 'string')?.sandboxUrl;
  return {
    child,
    port,
    url: `http://127.0.0.1:${port}/graphql`,
    sandboxUrl: typeof sandboxUrl === 'string' ? sandboxUrl : undefined,
    lines,
    stdout,
    stderr,
    exited,
    stop,
  };
}

/** POSTs one operation over real HTTP. */
export async function post(
  url: string,
  query: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}
