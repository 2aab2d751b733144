import { createHash, timingSafeEqual } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';
import { bearerToken } from '../credentials.js';
import { FacadeError } from '../errors.js';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Whether `token` is one of `accepted`. Comparing fixed-size digests with timingSafeEqual, and
 * always against every accepted token, keeps the answer's timing independent of how much of a
 * guess was right and of which token matched.
 */
export function createTokenMatcher(
  accepted: readonly string[],
): (token: string | undefined) => boolean {
  const digests = accepted.map(digest);
  return (token) => {
    const candidate = digest(token ?? '');
    let match = false;
    for (const known of digests) match = timingSafeEqual(candidate, known) || match;
    return match && token !== undefined;
  };
}

/**
 * Service-key mode's client check: the facade's key acts for every caller, so a caller must
 * present one of CLIENT_TOKENS before anything runs. Checked at request parsing, before the body
 * is read and long before any resolver or upstream call.
 */
export function useClientTokens(isAccepted: (token: string | undefined) => boolean): Plugin {
  return {
    onRequestParse({ request }) {
      if (isAccepted(bearerToken(request.headers.get('authorization')))) return;
      throw new FacadeError(
        'UNAUTHENTICATED',
        'This endpoint needs "Authorization: Bearer <token>" with a token it accepts',
        { http: { status: 401, headers: { 'WWW-Authenticate': 'Bearer' } } },
      );
    },
  };
}
