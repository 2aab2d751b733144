import { createHash } from 'node:crypto';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header, if that is what the header holds. */
export function bearerToken(authorization: string | null): string | undefined {
  return authorization ? BEARER.exec(authorization)?.[1] : undefined;
}

/** A short, one-way name for a token: safe to keep as a rate-limit key, never reversible. */
export function tokenId(token: string): string {
  return createHash('sha256').update(token).digest('base64url').slice(0, 22);
}
