import { fileURLToPath } from 'node:url';
import { createServer, type ViteDevServer } from 'vite';

export interface ExampleServer {
  /** The page's origin, e.g. http://localhost:5173: the facade's CORS_ORIGINS must list it. */
  origin: string;
  close(): Promise<void>;
}

/** The example page on Vite's dev server, talking to the facade at `facadeUrl`. */
export async function startExampleServer(options: {
  facadeUrl: string;
  /** 0: a free port. */
  port: number;
  host?: string;
}): Promise<ExampleServer> {
  const host = options.host ?? 'localhost';
  const server: ViteDevServer = await createServer({
    root: fileURLToPath(new URL('.', import.meta.url)),
    configFile: false,
    logLevel: 'warn',
    clearScreen: false,
    define: { FACADE_URL: JSON.stringify(options.facadeUrl) },
    server: { port: options.port, host, strictPort: options.port !== 0 },
  });
  await server.listen();
  const address = server.httpServer?.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { origin: `http://${host}:${port}`, close: () => server.close() };
}
