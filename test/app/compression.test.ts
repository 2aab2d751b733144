import { request as httpRequest } from 'node:http';
import { brotliDecompressSync, createBrotliDecompress, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useHarness } from '../helpers/harness.js';
import { listen } from '../helpers/net.js';

// Large enough to be compressed: 40 repositories with their branches.
const LARGE = '{ repositories(limit: 40) { items { id defaultBranch branches { name target } } } }';
const SMALL = '{ repositories(limit: 1) { total } }';

describe('compression', () => {
  // Production: no extensions.upstreamCalls, whose durations would differ between two answers.
  const h = useHarness({ config: { production: true } });

  const send = (query: string, headers: Record<string, string> = {}) =>
    h.app.fetch('http://facade.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query }),
    });
  const bytes = async (response: Response) => Buffer.from(await response.arrayBuffer());
  const decode = (encoding: string | null, body: Buffer) =>
    encoding === 'br' ? brotliDecompressSync(body) : encoding === 'gzip' ? gunzipSync(body) : body;

  it('compresses a large answer with br when the client accepts it, else gzip; decoded, it is the plain answer', async () => {
    const plain = await bytes(await send(LARGE));
    expect(plain.byteLength).toBeGreaterThan(1024);
    for (const [accept, expected] of [
      ['gzip, deflate, br', 'br'],
      ['br;q=0, gzip', 'gzip'],
      ['gzip;q=0.5, *;q=0.1', 'br'],
      ['GZIP', 'gzip'],
    ]) {
      const response = await send(LARGE, { 'accept-encoding': accept as string });
      expect(response.headers.get('content-encoding'), accept).toBe(expected);
      expect(response.headers.get('vary')).toMatch(/accept-encoding/i);
      const body = await bytes(response);
      expect(body.byteLength).toBeLessThan(plain.byteLength / 2);
      expect(response.headers.get('content-length')).toBe(String(body.byteLength));
      expect(decode(expected as string, body).equals(plain)).toBe(true);
    }
  });

  it('sends small answers, and answers to clients that accept no encoding, as they are', async () => {
    const small = await send(SMALL, { 'accept-encoding': 'gzip, br' });
    expect(small.headers.get('content-encoding')).toBeNull();
    expect(small.headers.get('vary')).toMatch(/accept-encoding/i);
    expect(await small.json()).toEqual({ data: { repositories: { total: 50 } } });
    for (const accept of [undefined, 'identity', 'deflate', 'br;q=0, gzip;q=0']) {
      const response = await send(LARGE, accept ? { 'accept-encoding': accept } : {});
      expect(response.headers.get('content-encoding'), accept).toBeNull();
    }
  });

  it('compresses an answer in parts (@stream) too; decoded, it is the plain one', async () => {
    const query =
      '{ repositories(limit: 40) { items @stream(initialCount: 1) { id branches { name } } } }';
    const accept = 'multipart/mixed';
    const plain = (await bytes(await send(query, { accept }))).toString();
    for (const encoding of ['br', 'gzip']) {
      const response = await send(query, { accept, 'accept-encoding': encoding });
      expect(response.headers.get('content-type')).toMatch(/^multipart\/mixed/);
      expect(response.headers.get('content-encoding')).toBe(encoding);
      expect(decode(encoding, await bytes(response)).toString()).toBe(plain);
    }
    // Yoga marks an event stream `Content-Encoding: none`: it stays as it is.
    const events = await send(query, { accept: 'text/event-stream', 'accept-encoding': 'br' });
    expect(events.headers.get('content-encoding')).toBe('none');
    expect(await events.text()).toContain('event: next');
  });

  it('delivers each part of a compressed answer when it is ready, over HTTP', async () => {
    const server = await listen((req, res) => void h.app.requestListener(req, res));
    // The deferred page waits for the upstream, which answers only once the first part has been
    // decoded here: a compressor that held the first part back until the end would never get the
    // page, and the answer would end without it.
    let answerUpstream = () => {};
    const gate = new Promise<void>((resolve) => {
      answerUpstream = resolve;
    });
    try {
      h.sandbox.setFault('GET /git/v1/repo', { until: gate, times: 1 });
      const seen = await new Promise<{ first: string; endedBeforeFirst: boolean; all: string }>(
        (resolve, reject) => {
          const req = httpRequest(server.url, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'multipart/mixed',
              'accept-encoding': 'br',
            },
          });
          req.on('error', reject);
          req.on('response', (res) => {
            expect(res.headers['content-encoding']).toBe('br');
            let ended = false;
            let text = '';
            let first: { text: string; ended: boolean } | undefined;
            const decoder = res.pipe(createBrotliDecompress());
            res.on('end', () => {
              ended = true;
            });
            decoder.on('data', (chunk: Buffer) => {
              text += chunk.toString();
              if (!first && text.includes('"hasNext":true')) {
                first = { text, ended };
                answerUpstream();
              }
            });
            decoder.on('error', reject);
            decoder.on('end', () =>
              resolve({
                first: first?.text ?? '',
                endedBeforeFirst: first?.ended ?? true,
                all: text,
              }),
            );
          });
          req.end(
            JSON.stringify({
              query: '{ __typename ... @defer { repositories(limit: 1) { total } } }',
            }),
          );
        },
      );
      expect(seen.first).toContain('{"data":{"__typename":"Query"},"hasNext":true}');
      expect(seen.first).not.toContain('repositories');
      expect(seen.endedBeforeFirst).toBe(false);
      expect(seen.all).toContain('"repositories":{"total":50}');
    } finally {
      answerUpstream();
      await server.close();
    }
  });
});
