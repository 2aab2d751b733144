import { readSandboxOptions, SettingError } from './options.js';
import { type SandboxOptions, startSandbox } from './server.js';

async function main(): Promise<void> {
  let options: SandboxOptions;
  try {
    options = readSandboxOptions(process.env, 4010);
  } catch (error) {
    if (!(error instanceof SettingError)) throw error;
    process.stderr.write(`sandbox: ${error.message}\n`);
    process.exit(1);
  }

  const sandbox = await startSandbox(options).catch((error: unknown) => {
    const reason = error instanceof Error ? error.message : String(error);
    process.stderr.write(`sandbox: cannot listen on ${options.host}:${options.port}: ${reason}\n`);
    process.exit(1);
  });
  process.stdout.write(`sandbox listening on ${sandbox.url}\n`);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    sandbox.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

await main();
