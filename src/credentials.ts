import { createHash, timingSafeEqual } from 'node:crypto';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header, if that is what the header holds. */
export function bearerToken(authorization: string | null): string | undefined {
  return authorization ? BEARER.exec(authorization)?.[1] : undefined;
}

/** A short, one-way name for a token: safe to keep as a rate-limit key, never reversible. */
export function tokenId(token: string): string {
  return createHash('sha256').update(token).digest('base64url').slice(0, 22);
}

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
