import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { promisify } from 'node:util';
import {
  type BrotliOptions,
  brotliCompress,
  constants,
  createBrotliCompress,
  createGzip,
  gzip,
  type ZlibOptions,
} from 'node:zlib';
import type { Plugin } from 'graphql-yoga';
import { addVary, chooseEncoding } from './headers.js';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

// The usual settings per request: higher brotli qualities cost several times the CPU for little.
const BROTLI: BrotliOptions = { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } };
const GZIP: ZlibOptions = { level: 6 };

/** Answers the facade writes, all text. */
const COMPRESSIBLE = /^(application\/(graphql-response\+)?json|multipart\/mixed|text\/)/i;
/** Parts must reach the client as written. Yoga marks an event stream `Content-Encoding: none`. */
const STREAMED = /^multipart\/mixed/i;

export interface CompressionOptions {
  minBytes: number;
}

/**
 * br, then gzip, from `minBytes` on, parts flushed as they go (docs/operations.md#compression). Not
 * whatwg-node's useContentEncoding: it compresses any size, ignores q-values and flushes no part.
 * The last onResponse hook: it rebuilds the answer from the headers the others set.
 */
export function useCompression({ minBytes }: CompressionOptions): Plugin {
  return {
    onResponse({ request, response, setResponse, fetchAPI }) {
      const type = response.headers.get('content-type') ?? '';
      if (response.headers.has('content-encoding') || !COMPRESSIBLE.test(type)) return;
      addVary(response.headers, 'Accept-Encoding');
      const encoding = chooseEncoding(request.headers.get('accept-encoding'));
      // Read `body` only now: whatwg-node then builds a stream around an answer kept as a string.
      if (encoding === 'identity' || !response.body) return;
      const declared = response.headers.get('content-length');
      if (declared !== null && Number(declared) < minBytes) return;

      // Copied entry by entry: the ponyfill's `new Headers(headers)` of Yoga's plain object keeps
      // the keys' case, and then finds no `content-type`.
      const compressedInit = (length?: number) => {
        const headers = new fetchAPI.Headers();
        response.headers.forEach((value, key) => {
          headers.append(key, value);
        });
        headers.set('content-encoding', encoding);
        if (length === undefined) headers.delete('content-length');
        else headers.set('content-length', String(length));
        return { status: response.status, statusText: response.statusText, headers };
      };

      if (STREAMED.test(type)) {
        const compressor =
          encoding === 'br'
            ? createBrotliCompress({ ...BROTLI, flush: constants.BROTLI_OPERATION_FLUSH })
            : createGzip({ ...GZIP, flush: constants.Z_SYNC_FLUSH });
        const source = Readable.from(response.body as NodeReadableStream<Uint8Array>);
        // A client that goes away ends the source: the compressor must go with it.
        source.on('error', (error) => compressor.destroy(error));
        source.pipe(compressor);
        setResponse(
          new fetchAPI.Response(Readable.toWeb(compressor) as ReadableStream, compressedInit()),
        );
        return;
      }

      return (async () => {
        const plain = Buffer.from(await response.arrayBuffer());
        if (plain.byteLength < minBytes) {
          setResponse(
            new fetchAPI.Response(plain, {
              status: response.status,
              statusText: response.statusText,
              headers: response.headers,
            }),
          );
          return;
        }
        const compressed =
          encoding === 'br' ? await brotli(plain, BROTLI) : await gzipAsync(plain, GZIP);
        setResponse(new fetchAPI.Response(compressed, compressedInit(compressed.byteLength)));
      })();
    },
  };
}
