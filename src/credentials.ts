// The one credential policy (docs/operations.md#credentials): whether the service key or the
// caller's own credential goes upstream, which callers are accepted, and what else of theirs is
// passed on. Everything else asks this module rather than deciding for itself.
import { hash, timingSafeEqual } from 'node:crypto';
import type { Settings } from './config/variables.js';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header, if that is what the header holds. */
export function bearerToken(authorization: string | null): string | undefined {
  return authorization ? BEARER.exec(authorization)?.[1] : undefined;
}

/** A short, one-way name for a token: safe to keep as a rate-limit key. */
export function tokenId(token: string): string {
  return hash('sha256', token, 'base64url').slice(0, 22);
}

const digest = (value: string) => hash('sha256', value, 'buffer');

/**
 * Whether a token is one of `accepted`, in a time that tells nothing of how much of a guess was
 * right or of which token matched: fixed-size digests, each compared.
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

type CredentialSettings = Pick<
  Settings,
  'clientTokens' | 'forwardHeaders' | 'allowAnonymousServiceKey'
> & { upstream: Pick<Settings['upstream'], 'apiKey'> };

export interface CredentialPolicy {
  /** `service-key` (UPSTREAM_API_KEY): the key acts for every caller; `forward`: each its own. */
  readonly mode: 'service-key' | 'forward';
  /**
   * Whether a bearer token is one of CLIENT_TOKENS, a verified identity; undefined where no caller
   * is checked, and anyone can invent a token.
   */
  readonly acceptsClient: ((token: string | undefined) => boolean) | undefined;
  /**
   * An answer depends on its caller when the caller's credential goes upstream, when callers are
   * checked, or when something of theirs is forwarded.
   */
  readonly answerDependsOnCaller: boolean;
  /** The Authorization an upstream call for this caller carries: the key's, or the caller's. */
  upstreamAuthorization(callerHeaders: Headers): string | undefined;
  /**
   * Who the caller is, for keeping one caller's joined calls and kept answers from another's: the
   * Authorization as it came when it goes upstream; in service-key mode, where only its token
   * counts, the token however the scheme is spelled.
   */
  callerCredential(callerHeaders: Headers): string | undefined;
  /** The caller's headers that FORWARD_HEADERS names; undefined when it names none. */
  forwardedHeaders(callerHeaders: Headers): Record<string, string> | undefined;
  /** What the process's own requests to itself present to be accepted. */
  readonly ownAuthorization: string | undefined;
}

export function createCredentialPolicy(settings: CredentialSettings): CredentialPolicy {
  const { apiKey } = settings.upstream;
  const names = settings.forwardHeaders;
  const tokens = apiKey ? (settings.clientTokens ?? []) : [];
  const keyAuthorization = apiKey ? `Bearer ${apiKey}` : undefined;
  return {
    mode: apiKey ? 'service-key' : 'forward',
    acceptsClient: tokens.length > 0 ? createTokenMatcher(tokens) : undefined,
    answerDependsOnCaller: !apiKey || tokens.length > 0 || names.length > 0,
    upstreamAuthorization: keyAuthorization
      ? () => keyAuthorization
      : (headers) => headers.get('authorization') ?? undefined,
    callerCredential: keyAuthorization
      ? (headers) => {
          const authorization = headers.get('authorization') ?? undefined;
          const token = bearerToken(authorization ?? null);
          return token === undefined ? authorization : `Bearer ${token}`;
        }
      : (headers) => headers.get('authorization') ?? undefined,
    forwardedHeaders(headers) {
      if (names.length === 0) return undefined;
      const forwarded: Record<string, string> = {};
      for (const name of names) {
        const value = headers.get(name);
        if (value !== null) forwarded[name] = value;
      }
      return forwarded;
    },
    ownAuthorization: tokens[0] ? `Bearer ${tokens[0]}` : undefined,
  };
}

/** Why the credential settings cannot run, or undefined; loadConfig refuses to start on one. */
export function credentialSettingsProblem(settings: CredentialSettings): string | undefined {
  const { apiKey } = settings.upstream;
  // Without a service key the caller's Authorization goes upstream: the tokens would check nothing.
  if (settings.clientTokens?.length && !apiKey) {
    return "CLIENT_TOKENS: checked only in service-key mode; set UPSTREAM_API_KEY, or unset CLIENT_TOKENS to forward callers' own credentials";
  }
  if (apiKey && !settings.clientTokens?.length && !settings.allowAnonymousServiceKey) {
    return 'UPSTREAM_API_KEY: service-key mode acts for every caller; set CLIENT_TOKENS, or ALLOW_ANONYMOUS_SERVICE_KEY=true to run without a client check';
  }
  return undefined;
}
