import type { Plugin } from 'graphql-yoga';
import { FacadeError } from '../errors.js';

/** What Yoga's result processors can answer in (JSON, server-sent events, multipart). */
const ANSWER_TYPES = [
  'application/graphql-response+json',
  'application/json',
  'text/event-stream',
  'multipart/mixed',
].map((type) => type.split('/'));

/**
 * Yoga's own reading of Accept (no header is any type; only UTF-8): whether one of the types it
 * lists is one the facade can answer in.
 */
function acceptsAnAnswer(accept: string | null): boolean {
  if (!accept) return true;
  for (const part of accept.replace(/\s/g, '').toLowerCase().split(',')) {
    const [type = '', ...params] = part.split(';');
    const charset = params.find((param) => param.includes('charset='));
    if (charset !== undefined && charset !== 'charset=utf-8') continue;
    const [pre, suf] = type.split('/');
    if (ANSWER_TYPES.some(([p, s]) => (pre === '*' || pre === p) && (suf === '*' || suf === s)))
      return true;
  }
  return false;
}

/**
 * Content negotiation, settled before anything runs and refused the way every other refusal is,
 * with a GraphQL error body that repeats nothing of the request's headers:
 * - an Accept that no answer satisfies is 406 here, instead of Yoga's empty 406 after execution
 *   (a mutation would have run, and its result been thrown away);
 * - a body no request parser reads (XML, text/plain) is 415 instead of Yoga's empty 415.
 * Must come after every plugin that registers a request parser.
 */
export function useMediaType(): Plugin {
  return {
    onRequestParse({ request, requestParser, endResponse, fetchAPI }) {
      if (!acceptsAnAnswer(request.headers.get('accept'))) {
        // The one answer the client did not ask for: there is no type it would accept.
        const body = JSON.stringify({
          errors: [
            {
              message:
                'Not Acceptable: accept application/graphql-response+json or application/json',
              extensions: { code: 'BAD_USER_INPUT' },
            },
          ],
        });
        endResponse(
          new fetchAPI.Response(body, {
            status: 406,
            headers: { 'content-type': 'application/json; charset=utf-8' },
          }),
        );
        return;
      }
      // Other methods are Yoga's to refuse, with 405 and the methods it allows.
      if (requestParser || (request.method !== 'GET' && request.method !== 'POST')) return;
      throw new FacadeError(
        'BAD_USER_INPUT',
        'Unsupported Content-Type: send application/json (or a GET with the query in the URL)',
        { http: { status: 415, headers: { accept: 'application/json' } } },
      );
    },
  };
}
