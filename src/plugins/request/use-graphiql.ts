import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { Plugin } from 'graphql-yoga';
import { graphiqlTabs } from './graphiql-tabs.js';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

interface Page {
  etag: string;
  identity: ArrayBuffer;
  gzip: ArrayBuffer;
  br: ArrayBuffer;
}

/** A Buffer's bytes as the ArrayBuffer a Response body takes (pooled Buffers share theirs). */
const bytes = (buffer: Buffer): ArrayBuffer =>
  buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;

export interface GraphiQLOptions {
  /** The GraphQL endpoint GraphiQL is served at (and its trailing-slash twin). */
  endpoint: string;
  title: string;
}

/**
 * GraphiQL, built once and served from memory: the page inlines the whole GraphiQL bundle, so
 * rendering and compressing it per view would make every page view cost the server what a
 * thousand queries do. It is rendered on the first view (an API-only replica never holds it),
 * compressed off the event loop, and answered with an ETag, so a reload is a 304. The page holds
 * nobody's data, which is why it may be served before any client check.
 */
export function useGraphiQL({ endpoint, title }: GraphiQLOptions): Plugin {
  let page: Promise<Page> | undefined;
  const build = async (): Promise<Page> => {
    const { renderGraphiQL } = await import('@graphql-yoga/render-graphiql');
    const html = renderGraphiQL({ title, defaultTabs: graphiqlTabs, shouldPersistHeaders: false });
    const identity = Buffer.from(html);
    const [gz, br] = await Promise.all([
      gzipAsync(identity, { level: 6 }),
      // Quality 6: the best levels take seconds on a bundle this size for a few percent less.
      brotli(identity, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: 6,
          [constants.BROTLI_PARAM_SIZE_HINT]: identity.length,
        },
      }),
    ]);
    const etag = `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`;
    return { etag, identity: bytes(identity), gzip: bytes(gz), br: bytes(br) };
  };

  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (request.method !== 'GET' || !request.headers.get('accept')?.includes('text/html')) return;
      if (url.pathname !== endpoint && url.pathname !== `${endpoint}/`) return;
      page ??= build().catch((error: unknown) => {
        page = undefined;
        throw error;
      });
      return page.then((built) => {
        const headers: Record<string, string> = {
          etag: built.etag,
          // Revalidated on every view: a deploy with another page is seen at once.
          'cache-control': 'no-cache',
          vary: 'Accept-Encoding',
        };
        if (request.headers.get('if-none-match') === built.etag) {
          endResponse(new fetchAPI.Response(null, { status: 304, headers }));
          return;
        }
        const accepted = request.headers.get('accept-encoding') ?? '';
        const encoding = /\bbr\b/.test(accepted) ? 'br' : /\bgzip\b/.test(accepted) ? 'gzip' : '';
        const body =
          encoding === 'br' ? built.br : encoding === 'gzip' ? built.gzip : built.identity;
        if (encoding) headers['content-encoding'] = encoding;
        headers['content-type'] = 'text/html; charset=utf-8';
        endResponse(new fetchAPI.Response(body, { status: 200, headers }));
      });
    },
  };
}
