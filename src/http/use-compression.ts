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

// Quality 4 and level 6: the usual settings for answers compressed per request; the higher
// brotli qualities cost several times the CPU for a few percent fewer bytes.
const BROTLI: BrotliOptions = { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } };
const GZIP: ZlibOptions = { level: 6 };

/** Answers the facade writes, all text; anything else (an image, a pre-compressed page) is left. */
const COMPRESSIBLE = /^(application\/(graphql-response\+)?json|multipart\/mixed|text\/)/i;
/**
 * Answers written in parts over time: every part must reach the client when it is written. (An
 * event stream arrives marked `Content-Encoding: none` by Yoga, so it is left as it is.)
 */
const STREAMED = /^multipart\/mixed/i;

export interface CompressionOptions {
  /** Smaller answers are sent as they are: compressing them saves less than its headers cost. */
  minBytes: number;
}

/**
 * Compresses answers with Node's zlib, `br` preferred over `gzip` as the client's
 * Accept-Encoding allows (q-values honoured), and marks every compressible answer
 * `Vary: Accept-Encoding`. A whole answer is compressed in one call on the thread pool, off the
 * event loop, when it is at least `minBytes`; an answer in parts (@defer, @stream as
 * multipart/mixed) is compressed as it goes, flushed after every part, so incremental delivery
 * still delivers each part when it is ready. Must be the last plugin with an onResponse hook: it
 * rebuilds the response from the headers the others set.
 *
 * `@whatwg-node/server`'s useContentEncoding is not used: it compresses every answer whatever
 * its size, picks the first encoding the client lists rather than the best one, ignores q-values
 * and does not flush streamed parts.
 */
export function useCompression({ minBytes }: CompressionOptions): Plugin {
  return {
    onResponse({ request, response, setResponse, fetchAPI }) {
      const type = response.headers.get('content-type') ?? '';
      if (response.headers.has('content-encoding') || !COMPRESSIBLE.test(type)) return;
      addVary(response.headers, 'Accept-Encoding');
      const encoding = chooseEncoding(request.headers.get('accept-encoding'));
      // The body is looked at only now: for whatwg-node, reading `body` builds a stream around
      // an answer it would otherwise write as one string.
      if (encoding === 'identity' || !response.body) return;
      // Known to be small without reading it: left as it is.
      const declared = response.headers.get('content-length');
      if (declared !== null && Number(declared) < minBytes) return;

      // Built only once the answer is to be compressed, entry by entry: the ponyfill's
      // `new Headers(headers)` of headers still kept as Yoga's object keeps their keys' case,
      // and then finds no `content-type`.
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
        // Node's own web stream, which the DOM typing of `body` does not show as async iterable.
        const source = Readable.from(response.body as NodeReadableStream<Uint8Array>);
        // A client that goes away ends the source; the compressor goes with it.
        source.on('error', (error) => compressor.destroy(error));
        source.pipe(compressor);
        setResponse(
          new fetchAPI.Response(Readable.toWeb(compressor) as ReadableStream, compressedInit()),
        );
        return;
      }

      // Only this path waits: every other answer leaves the hook without a promise.
      return (async () => {
        const plain = Buffer.from(await response.arrayBuffer());
        if (plain.byteLength < minBytes) {
          // The body was read to measure it: the same bytes, uncompressed.
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
