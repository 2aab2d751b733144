// `npm run example:web`: the facade over its built-in sandbox, serving only the example's trusted
// documents, and the example page on Vite's dev server. Ctrl-C stops both.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startExampleServer } from './server.js';

const FACADE_PORT = Number(process.env.PORT ?? 4000);
const WEB_PORT = Number(process.env.WEB_PORT ?? 5173);
const root = fileURLToPath(new URL('../..', import.meta.url));
const manifest = fileURLToPath(new URL('./src/gql/persisted-documents.json', import.meta.url));
const origin = `http://localhost:${WEB_PORT}`;

// `npm start`'s entry: the sandbox, then the facade in front of it.
const facade = spawn(process.execPath, ['--import', 'tsx', 'scripts/dev.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    PORT: String(FACADE_PORT),
    PERSISTED_DOCUMENTS: manifest,
    PERSISTED_DOCUMENTS_ONLY: 'true',
    CORS_ORIGINS: origin,
  },
});
facade.once('exit', (code) => {
  process.exitCode = code ?? 1;
  void web.then((server) => server.close());
});

const web = startExampleServer({
  facadeUrl: `http://localhost:${FACADE_PORT}/graphql`,
  port: WEB_PORT,
});
const server = await web;
console.log(
  `Example frontend: ${server.origin} (facade at http://localhost:${FACADE_PORT}/graphql)`,
);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    facade.kill('SIGTERM');
    void server.close();
  });
}
