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

/**
 * GraphiQL's tabs are framer-motion reorder items, and on a first visit some are left with a
 * stale drag offset that GraphiQL's stylesheet hides only until the tab has focus: pressing the
 * mouse on a tab focuses it, the tab jumps away from the pointer, and the click is lost. Tabs stay
 * where they are laid out; dragging still reorders them, without the tab following the pointer.
 * A stylesheet of the page, not an edit of GraphiQL; the focus-bound rule it overrides is the same in
 * the GraphiQL Yoga bundles (5.2.0) and in graphiql 5.4.0 (@graphiql/react 0.39.1).
 */
const TAB_FIX = '<style>.graphiql-tab{transform:none!important}</style>';

/**
 * GraphiQL sends the operation name it last worked out for the editor, and works it out only
 * after the editor's change handler runs: a run right after switching tabs sends the previous
 * tab's name with this tab's document, and the page's fetcher fails with "Cannot infer operation".
 * The fix sends that name only when it is a word of the document being sent; otherwise none, so a
 * one-operation document runs as is. It edits GraphiQL's minified run action (`f`: the name the
 * user picked, `c`: the name worked out, `E`: the document): `patchGraphiQL` throws when the text
 * is not found, and the graphiql test fails on an upgrade that changes it.
 * No option of GraphiQL or Yoga avoids it (a fixed `operationName` prop is sent as is, and `''`
 * matches no operation), no page script can (Yoga's fetcher resolves the operation from the
 * name before it fetches, so the error is raised before any request) and no release fixes it: `run` sends the debounced name in the GraphiQL
 * Yoga bundles (5.2.0), in graphiql 5.4.0 (@graphiql/react 0.39.1) and on GraphiQL's v6 branch
 * (graphql/graphiql#1807).
 * Drop the edit once @graphql-yoga/render-graphiql bundles a GraphiQL that works the name out
 * from the document it sends.
 */
const OPERATION_NAME_FIX = {
  find: 'operationName:f??c}',
  replace: 'operationName:f??(c&&E.split(/[^_0-9A-Za-z]+/).includes(c)?c:void 0)}',
};

/** GraphiQL's page with the two fixes above. */
export function patchGraphiQL(html: string): string {
  const at = html.indexOf(OPERATION_NAME_FIX.find);
  if (at === -1 || html.indexOf(OPERATION_NAME_FIX.find, at + 1) !== -1) {
    throw new Error('GraphiQL run action not found once: review OPERATION_NAME_FIX');
  }
  return html
    .replace(OPERATION_NAME_FIX.find, OPERATION_NAME_FIX.replace)
    .replace('</head>', `${TAB_FIX}</head>`);
}

/** Whether an If-None-Match header names `etag` (weak comparison, as RFC 9110 asks for here). */
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
  /** The GraphQL endpoint GraphiQL is served at (and its trailing-slash twin). */
  endpoint: string;
  title: string;
}

/**
 * GraphiQL, built once and served from memory: the page inlines the whole GraphiQL bundle, so
 * rendering and compressing it per view would make every page view cost the server what a
 * thousand queries do. It is rendered on the first view (an API-only replica never holds it),
 * compressed off the event loop, and answered with an ETag, so a reload is a 304. The page holds
 * nobody's data, which is why it may be served before any client check. A GET that carries a
 * `query` gets the page too: GraphiQL keeps the operation being edited in the address bar, so a
 * reload carries one, and an HTML answer is all a browser asking for text/html can use.
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
