import { z } from 'zod';
import type { TxtLookupResult } from '../upstream/dns.js';
import { type WatchEnd, watchUntil } from '../upstream/dns-watch.js';
import { builder } from './builder.js';
import { UPSTREAM_CALL_WEIGHT } from './cost.js';
import { domainName, txtHost } from './domain-name.js';

interface DomainDnsCheck {
  host: string;
  values: string[];
  matches: boolean | null;
  error: string | null;
}

const DomainDnsCheckRef = builder.objectRef<DomainDnsCheck>('DomainDnsCheck').implement({
  shareable: true,
  cost: UPSTREAM_CALL_WEIGHT,
  description:
    "What the facade's own resolver sees at a domain's verification host right now: whether the TXT record is published yet, before calling verifyDomain. A DNS outcome (missing name, timeout, ...) is an answer here, never a GraphQL error.",
  fields: (t) => ({
    host: t.exposeString('host', {
      description:
        'The name that was looked up: `_service_custom_hostname.<domain>`, the domain in punycode.',
    }),
    values: t.exposeStringList('values', {
      description:
        'The TXT values found there now, one per record (a record sent in several character-strings is joined). Empty when there are none or the look-up failed.',
    }),
    matches: t.exposeBoolean('matches', {
      nullable: true,
      description:
        'True when one of the values equals verificationCode; false when none does (no record at all included); null when no code was given or the look-up itself failed.',
    }),
    error: t.exposeString('error', {
      nullable: true,
      description:
        'Why `values` is empty or incomplete, in plain words: no such name, no TXT record at that name, the resolver timed out, the resolver refused or failed. Null when the look-up answered records. On the last event of a subscription that ends without a match, it begins with "Watch ended:" and says why (a time limit passed, or the server is restarting).',
    }),
  }),
});

/** Plain words for a failed look-up; c-ares's codes mean nothing to the person at the DNS provider. */
function describe(result: TxtLookupResult, host: string, timeoutMs: number): string | null {
  switch (result.outcome) {
    case 'found':
      return null;
    case 'no-such-name':
      return `No such name: ${host} does not exist (yet). Publish the TXT record there, then check again.`;
    case 'no-record':
      return `No TXT record at that name: ${host} exists but has no TXT record.`;
    case 'timeout':
      return `The resolver timed out: no answer within ${timeoutMs} ms. Try again later.`;
    case 'refused':
      return 'The resolver refused the query.';
    case 'failed':
      return `The resolver failed (${FAILURES[result.code] ?? result.code}).`;
  }
}

const FAILURES: Record<string, string> = {
  ESERVFAIL: 'it answered SERVFAIL',
  ECONNREFUSED: 'connection refused',
  EBADRESP: 'a malformed answer',
  ECANCELLED: 'the request was cancelled',
};

// Whitespace around a pasted code is a copy-and-paste accident, not part of the code; the
// upstream compares trimmed values too, so `matches: true` predicts `verified: true`.
const verificationCode = z.string().trim().min(1, 'must not be empty when given').nullish();

builder.queryFields((t) => ({
  domainDnsCheck: t.field({
    type: DomainDnsCheckRef,
    description:
      'Looks up the TXT record at `_service_custom_hostname.<domain>` from the facade, so a client can tell its user "not published yet" before calling verifyDomain. An invalid domain is BAD_USER_INPUT (and nothing is looked up); every DNS outcome is an answer. Look-ups are bounded, and past a bound nothing is looked up: each distinct domain of a request counts as one of its MAX_UPSTREAM_CALLS (UPSTREAM_BUDGET_EXCEEDED past it), and the facade runs at most DNS_MAX_CONCURRENT at a time (RATE_LIMITED with `retryAfter` past it). A found record is reused for its TTL, at most DNS_CACHE_MAX_TTL_S; a missing record or a failed look-up is asked again every time.',
    args: {
      domain: t.arg.string({
        required: true,
        description:
          'The domain, as for createDomainVerification: trimmed, lower-cased, trailing dot dropped, an internationalised name converted to punycode.',
        validate: domainName,
      }),
      verificationCode: t.arg.string({
        description: 'The code from createDomainVerification; without it `matches` is null.',
        validate: verificationCode,
      }),
    },
    resolve: async (_root, args, ctx) => {
      const host = txtHost(args.domain);
      const result = await ctx.txtLookups.load(host);
      return toCheck(result, host, args.verificationCode ?? null, ctx.config.dns.timeoutMs);
    },
  }),
}));

/** The answer, the same for the query and each event of the subscription. */
function toCheck(
  result: TxtLookupResult,
  host: string,
  code: string | null,
  timeoutMs: number,
): DomainDnsCheck {
  const values = result.outcome === 'found' ? result.values : [];
  const answered =
    result.outcome === 'found' ||
    result.outcome === 'no-such-name' ||
    result.outcome === 'no-record';
  return {
    host,
    values,
    matches: code === null || !answered ? null : values.some((value) => value.trim() === code),
    error: describe(result, host, timeoutMs),
  };
}

/** The last event's words when a watch ends without a match. */
function endedBecause(end: WatchEnd, limits: { idleLimitS: number; timeLimitS: number }): string {
  switch (end) {
    case 'idle-limit':
      return `Watch ended: nothing changed for ${limits.idleLimitS} s.`;
    case 'time-limit':
      return `Watch ended: the time limit (${limits.timeLimitS} s) passed.`;
    case 'shutdown':
      return 'Watch ended: the server is restarting.';
    case 'matched':
      return '';
  }
}

builder.subscriptionFields((t) => ({
  domainDnsCheck: t.field({
    type: DomainDnsCheckRef,
    description:
      'Watches `_service_custom_hostname.<domain>` until the TXT record matches verificationCode: an event at once with what DNS says now, then one each time that changes; the event that matches is the last, and the stream completes. Without a code nothing matches. A watch also ends, with a last event whose `error` begins with "Watch ended:", when nothing changed for DNS_WATCH_IDLE_LIMIT_S, after DNS_WATCH_TIME_LIMIT_S, or when the server restarts: subscribe again to go on. Look-ups start DNS_WATCH_MIN_INTERVAL_MS apart and back off to DNS_WATCH_MAX_INTERVAL_MS while nothing changes (never sooner than a found record\'s TTL); every subscriber of a name shares them. An invalid domain is BAD_USER_INPUT and nothing is looked up; past MAX_SUBSCRIPTIONS_PER_CLIENT open subscriptions of a client, or MAX_SUBSCRIPTIONS in the server, a new one is RATE_LIMITED with `retryAfter`.',
    args: {
      domain: t.arg.string({
        required: true,
        description: 'The domain, as for the query `domainDnsCheck`.',
        validate: domainName,
      }),
      verificationCode: t.arg.string({
        description:
          'The code from createDomainVerification; without it `matches` is null and the watch ends only at a limit.',
        validate: verificationCode,
      }),
    },
    subscribe: (_root, args, ctx) => {
      const host = txtHost(args.domain);
      const code = args.verificationCode ?? null;
      const limits = ctx.config.subscriptions;
      const opened = ctx.subscriptions.open('domainDnsCheck');
      return watchUntil(ctx.dnsWatches, host, {
        isDone: (result) => toCheck(result, host, code, 0).matches === true,
        idleLimitMs: limits.idleLimitS * 1000,
        timeLimitMs: limits.timeLimitS * 1000,
        shutdown: ctx.subscriptions.shutdown,
        onEnd: (reason, events) => opened.end(reason, { host, events }),
      });
    },
    resolve: ({ result, end }, args, ctx) => {
      const host = txtHost(args.domain);
      const code = args.verificationCode ?? null;
      const check = toCheck(result, host, code, ctx.config.dns.timeoutMs);
      if (!end || end === 'matched') return check;
      const why = endedBecause(end, ctx.config.subscriptions);
      return { ...check, error: check.error ? `${why} ${check.error}` : why };
    },
  }),
}));
