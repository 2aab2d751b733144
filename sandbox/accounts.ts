import { createHash } from 'node:crypto';

export interface Account {
  id: string;
}

export const DEMO_ACCOUNT: Account = { id: 'demo' };

export const UNAUTHORIZED_MESSAGE = 'Authorization header must be "Bearer <token>"';

// The spec does not show the scheme; bearer tokens are what the facade forwards. The scheme name
// is case-insensitive (RFC 9110), the token is everything after the whitespace.
const BEARER = /^bearer[ \t]+(\S(?:.*\S)?)[ \t]*$/i;

const CACHE_LIMIT = 10_000;

/**
 * Maps an Authorization header to its account: each token is its own account, no header at all is
 * the `demo` account, anything else is undefined (the caller answers 401). Memoised by the raw
 * header value because the repository route is benchmarked and hashing per request adds up.
 */
export function createAccountResolver(): (
  authorization: string | undefined,
) => Account | undefined {
  const cache = new Map<string, Account>();
  return (authorization) => {
    if (authorization === undefined) return DEMO_ACCOUNT;
    const hit = cache.get(authorization);
    if (hit) return hit;
    const token = BEARER.exec(authorization)?.[1];
    if (token === undefined) return undefined;
    const account = { id: `acct_${createHash('sha256').update(token).digest('hex').slice(0, 16)}` };
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(authorization, account);
    return account;
  };
}
