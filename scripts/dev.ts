// `npm start`: the facade for development. Without UPSTREAM_URL it first starts the sandbox (an
// in-memory REST API, sandbox/) in this process and points the facade at it, so a fresh clone
// runs with no setup; then it runs the production entry, src/main.ts, as it is. This file is the
// one place the two programs meet: the product never imports the sandbox, and neither is built
// into the other's output.
import { pino } from 'pino';
import { readSandboxOptions, SettingError } from '../sandbox/options.js';
import { type SandboxOptions, startSandbox } from '../sandbox/server.js';
import { LOG_LEVELS } from '../src/config/values.js';
import { listenFailure } from '../src/process/startup-errors.js';
import { createLogger } from '../src/telemetry/logger.js';

/** As the facade fails to start: one stderr line, exit 1. */
function fail(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

// A cluster's workers run this file too (node:cluster forks the entry): they inherit the
// primary's UPSTREAM_URL, so they share its sandbox. In production, never: the sandbox answers
// with invented data, and a deploy that forgot its upstream must fail rather than look healthy.
if (!process.env.UPSTREAM_URL && process.env.NODE_ENV !== 'production') {
  let options: SandboxOptions;
  try {
    options = readSandboxOptions(process.env, 0);
  } catch (error) {
    if (!(error instanceof SettingError)) throw error;
    fail(`Invalid configuration: ${error.message}`);
  }
  const where = `${options.host}:${options.port} for the built-in sandbox`;
  const sandbox = await startSandbox(options).catch((error: unknown) =>
    fail(
      `Cannot start: ${listenFailure(error, { port: 'SANDBOX_PORT', host: 'SANDBOX_HOST' }, where).message}`,
    ),
  );
  process.env.UPSTREAM_URL = sandbox.url;
  // The first line, in the facade's format: which upstream this is. Written at once, so that it
  // comes before the facade's own lines.
  const level = LOG_LEVELS.find((name) => name === process.env.LOG_LEVEL) ?? 'info';
  createLogger(level, pino.destination({ dest: 1, sync: true })).info(
    { upstream: 'sandbox', sandboxUrl: sandbox.url, faults: options.faults ?? false },
    `Upstream: the built-in sandbox at ${sandbox.url} (set UPSTREAM_URL to front a real upstream)`,
  );
}

// After the sandbox: the facade reads UPSTREAM_URL when it loads.
await import('../src/main.js');
