// The one credential policy (docs/operations.md, "Credentials"): whether the facade's service key
// or the caller's own credential goes upstream, which callers it accepts, and what else of theirs
// is passed on. Everything else asks this module rather than deciding for itself.
import { hash, timingSafeEqual } from 'node:crypto';
import type { Settings } from './config/variables.js';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/** The token of an `Authorization: Bearer <token>` header, if that is what the header holds. */
export function bearerToken(authorization: string | null): string | undefined {
  return authorization ? BEARER.exec(authorization)?.[1] : undefined;
}

/** A short, one-way name for a token: safe to keep as a rate-limit key, never reversible. */
export function tokenId(token: string): string {
  return hash('sha256', token, 'base64url').slice(0, 22);
}

const digest = (value: string) => hash('sha256', value, 'buffer');

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

/** What the policy is made of: the configuration's credential settings. */
export type CredentialSettings = Pick<
  Settings,
  'clientTokens' | 'forwardHeaders' | 'allowAnonymousServiceKey'
> & { upstream: Pick<Settings['upstream'], 'apiKey'> };

export interface CredentialPolicy {
  /**
   * `service-key` (UPSTREAM_API_KEY set): the facade's key acts for every caller, and no caller's
   * credential goes upstream. `forward`: each caller's Authorization goes upstream as it came.
   */
  readonly mode: 'service-key' | 'forward';
  /**
   * Where callers are checked (service-key mode with CLIENT_TOKENS): whether a bearer token is one
   * of CLIENT_TOKENS. A token it accepts is a verified identity, which the rate limit counts on its
   * own. Undefined where no caller is checked (forward mode, ALLOW_ANONYMOUS_SERVICE_KEY): there
   * anyone can invent a token, so a token is a claim and never a pass.
   */
  readonly acceptsClient: ((token: string | undefined) => boolean) | undefined;
  /** The Authorization an upstream call made for this caller carries: the key's, or the caller's. */
  upstreamAuthorization(callerHeaders: Headers): string | undefined;
  /**
   * The credential the caller presented (its Authorization, as it came), in both modes: what keeps
   * one caller's joined calls and cached answers from another's, even where the service key makes
   * their upstream calls alike.
   */
  callerCredential(callerHeaders: Headers): string | undefined;
  /** The caller's headers that FORWARD_HEADERS names, as they came; undefined when it names none. */
  forwardedHeaders(callerHeaders: Headers): Record<string, string> | undefined;
  /** What the process's own requests to itself (the warm-up's) present to be accepted. */
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
    upstreamAuthorization: keyAuthorization
      ? () => keyAuthorization
      : (headers) => headers.get('authorization') ?? undefined,
    callerCredential: (headers) => headers.get('authorization') ?? undefined,
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
  // Without a service key the caller's Authorization goes upstream as it came: it cannot also be
  // one of the facade's client tokens, so the tokens would silently check nothing.
  if (settings.clientTokens?.length && !apiKey) {
    return "CLIENT_TOKENS: checked only in service-key mode; set UPSTREAM_API_KEY, or unset CLIENT_TOKENS to forward callers' own credentials";
  }
  if (apiKey && !settings.clientTokens?.length && !settings.allowAnonymousServiceKey) {
    return 'UPSTREAM_API_KEY: service-key mode acts for every caller; set CLIENT_TOKENS, or ALLOW_ANONYMOUS_SERVICE_KEY=true to run without a client check';
  }
  return undefined;
}
