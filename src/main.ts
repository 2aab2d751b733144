import { createServer } from 'node:http';
import { createApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { startSandbox } from './sandbox/server.js';
import { UpstreamClient } from './upstream/client.js';

async function main() {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Invalid configuration: ${error.message}\n`);
    process.exit(1);
  }

  // Without UPSTREAM_URL the facade embeds the sandbox, so a fresh clone runs with no setup.
  const sandbox = config.upstreamUrl
    ? undefined
    : await startSandbox({
        port: config.sandbox.port,
        repositories: config.sandbox.repositories,
        dnsServers: config.dns.servers,
        dnsTimeoutMs: config.dns.timeoutMs,
      });
  const upstreamUrl = config.upstreamUrl ?? (sandbox?.url as string);
  const client = new UpstreamClient({ baseUrl: upstreamUrl, ...config.upstream });
  const yoga = createApp({ config, client });
  const server = createServer(yoga);

  server.listen(config.port, config.host, () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    console.log(`GraphQL facade listening on http://${config.host ?? 'localhost'}:${port}/graphql (GraphiQL in a browser)`);
    console.log(
      sandbox
        ? `Upstream: the built-in sandbox at ${sandbox.url} (set UPSTREAM_URL to front a real upstream)`
        : `Upstream: ${new URL(upstreamUrl).origin}`,
    );
  });

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // Stop accepting; idle keep-alive sockets go now, in-flight requests may finish.
    server.close();
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.on('close', resolve));
    await client.close();
    await sandbox?.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

await main();
