import type { Plugin } from 'graphql-yoga';
import { bearerToken } from '../credentials.js';
import { FacadeError } from '../errors.js';

/**
 * Service-key mode: the facade's key acts for every caller, so a caller needs one of CLIENT_TOKENS,
 * checked before its body is read.
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
