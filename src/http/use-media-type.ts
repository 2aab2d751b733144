import type { Plugin } from 'graphql-yoga';
import { FacadeError } from '../errors.js';

/** What Yoga's result processors can answer in (JSON, server-sent events, multipart). */
const ANSWER_TYPES = [
  'application/graphql-response+json',
  'application/json',
  'text/event-stream',
  'multipart/mixed',
].map((type) => type.split('/'));

/** Accept read as Yoga reads it: no header is any type, and only UTF-8. */
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
 * 406 and 415 before anything runs, with an error body, where Yoga answers them empty and its 406
 * after execution. After every plugin that registers a request parser.
 */
export function useMediaType(): Plugin {
  return {
    onRequestParse({ request, requestParser, endResponse, fetchAPI }) {
      if (!acceptsAnAnswer(request.headers.get('accept'))) {
        // In a type the client did not ask for: there is none it would accept.
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
