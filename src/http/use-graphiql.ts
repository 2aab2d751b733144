import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { Plugin } from 'graphql-yoga';
import { graphiqlTabs } from './graphiql-tabs.js';
import { chooseEncoding, type Encoding } from './headers.js';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** The page in each encoding, each with its own ETag: they are different representations. */
type Page = Record<Encoding, { etag: string; body: ArrayBuffer }>;

// A focused GraphiQL tab can jump to a stale drag offset away from the pointer, losing the click:
// tabs stay where they are laid out (dragging still reorders them).
const TAB_FIX = '<style>.graphiql-tab{transform:none!important}</style>';

// GraphiQL's run sends the operation name of the previous tab (graphql/graphiql#1807): the edit of
// its minified run action (`c`: that name, `E`: the document) sends it only when the document has
// it. Drop it once render-graphiql's GraphiQL is fixed; an upgrade that moves the text fails here.
const OPERATION_NAME_FIX = {
  find: 'operationName:f??c}',
  replace: 'operationName:f??(c&&E.split(/[^_0-9A-Za-z]+/).includes(c)?c:void 0)}',
};

function patchGraphiQL(html: string): string {
  const at = html.indexOf(OPERATION_NAME_FIX.find);
  if (at === -1 || html.indexOf(OPERATION_NAME_FIX.find, at + 1) !== -1) {
    throw new Error('GraphiQL run action not found once: review OPERATION_NAME_FIX');
  }
  return html
    .replace(OPERATION_NAME_FIX.find, OPERATION_NAME_FIX.replace)
    .replace('</head>', `${TAB_FIX}</head>`);
}

/** Weak comparison, as RFC 9110 asks for If-None-Match. */
function matches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  return ifNoneMatch
    .split(',')
    .map((tag) => tag.trim().replace(/^W\//, ''))
    .some((tag) => tag === '*' || tag === etag);
}

/** A Buffer's bytes as the ArrayBuffer a Response body takes (pooled Buffers share theirs). */
const bytes = (buffer: Buffer): ArrayBuffer =>
  buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer;

export interface GraphiQLOptions {
  /** Served there and at its trailing-slash twin. */
  endpoint: string;
  title: string;
}

/**
 * Built on the first view and kept, pre-compressed, with an ETag (docs/performance.md). It holds
 * nobody's data, so it comes before any client check; a GET with a `query` (a reload) gets it too.
 */
export function useGraphiQL({ endpoint, title }: GraphiQLOptions): Plugin {
  let page: Promise<Page> | undefined;
  const build = async (): Promise<Page> => {
    const { renderGraphiQL } = await import('@graphql-yoga/render-graphiql');
    const defaultTabs = graphiqlTabs.map((query) => ({ query }));
    const html = renderGraphiQL({ title, defaultTabs, shouldPersistHeaders: false });
    const identity = Buffer.from(patchGraphiQL(html));
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
    const hash = createHash('sha256').update(identity).digest('base64url').slice(0, 27);
    return {
      identity: { etag: `"${hash}"`, body: bytes(identity) },
      gzip: { etag: `"${hash}-gzip"`, body: bytes(gz) },
      br: { etag: `"${hash}-br"`, body: bytes(br) },
    };
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
        const encoding = chooseEncoding(request.headers.get('accept-encoding'));
        const { etag, body } = built[encoding];
        const headers: Record<string, string> = {
          etag,
          // Revalidated on every view: a deploy with another page is seen at once.
          'cache-control': 'no-cache',
          vary: 'Accept-Encoding',
        };
        if (matches(request.headers.get('if-none-match'), etag)) {
          endResponse(new fetchAPI.Response(null, { status: 304, headers }));
          return;
        }
        if (encoding !== 'identity') headers['content-encoding'] = encoding;
        headers['content-type'] = 'text/html; charset=utf-8';
        endResponse(new fetchAPI.Response(body, { status: 200, headers }));
      });
    },
  };
}
