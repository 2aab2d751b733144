// The process's own servers on loopback, before it listens: the warm-up's and the parser's.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// Exclusive: in a cluster worker a plain listen(0) is routed through the primary, which gives
// every worker's listen(0) on an address the same shared port, so these servers would share a
// port with each other, with other workers' and with the real server when PORT=0.
export function listen(server: Server): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => resolve(server));
  });
}

export function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export const origin = (server: Server) =>
  `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
