import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type * as Tr46 from 'tr46';
import { z } from 'zod';
import { UpstreamError } from '../errors.js';
import type { WireDomainVerification } from '../upstream/wire.js';
import { builder } from './builder.js';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
// The forms of the full stop that IDNA maps to '.', so they separate labels before mapping too.
const SEPARATOR = /[.\u3002\uff0e\uff61]/;
// tr46's time grows with what it is given (faster than that within one label), and a caller
// chooses the input: a name is bounded before it gets there. The raw form may be longer than the
// ASCII form it stands for (a decomposed letter is up to three code points, a mathematical letter
// two UTF-16 units), so the bounds allow four units per ASCII character: past them, a raw form
// could only normalise to a name of 253 characters (labels of 63) by padding IDNA throws away.
const MAX_RAW_NAME = 4 * 253;
const MAX_RAW_LABEL = 4 * 63;
// Mapping never removes a separator, so more raw labels than a 253-character name can hold (one
// character and a dot each) are never a DNS name.
const MAX_LABELS = 127;
const TXT_PREFIX = '_service_custom_hostname';
const NOT_A_DOMAIN =
  'must be a DNS name of at least two labels (letters, digits or hyphens, 1-63 characters each, not starting or ending with a hyphen), 253 characters at most, and not an IP address';

// tr46 holds Unicode's IDNA tables in the heap for the process's life once loaded: it is
// loaded by the first domain to check, not at start, so a facade that serves only reads never
// holds them. Loading is synchronous (tr46 is CommonJS), as the check that uses it is.
let tr46: typeof Tr46 | undefined;
const loadTr46 = () => (tr46 ??= createRequire(import.meta.url)('tr46') as typeof Tr46);

/** The TXT host a verification code must be published at. */
export const txtHost = (domain: string) => `${TXT_PREFIX}.${domain}`;

/** Whether a raw name (trimmed, trailing dot dropped) is small enough to be worth normalising. */
function withinRawBounds(name: string): boolean {
  if (name === '' || name.length > MAX_RAW_NAME) return false;
  const labels = name.split(SEPARATOR);
  return labels.length <= MAX_LABELS && labels.every((label) => label.length <= MAX_RAW_LABEL);
}

/**
 * A domain as the contract wants it before any upstream call or DNS query: trimmed, lower-cased,
 * one trailing dot dropped, an internationalised name in its punycode form, then checked label by
 * label. It is checked as a DNS name, never parsed as a URL host: URL parsing reads "a.com/b" as
 * "a.com", decodes "%65" and turns "0x7f.1" into an IPv4 address, all of which must be refused.
 */
export const domainName = z.string().transform((raw, ctx) => {
  // Surrounding whitespace is trimmed natively at no real cost, so only the name itself is bounded.
  const padded = raw.trim();
  // One trailing dot, in any of the forms IDNA maps to a full stop (as 。 or ．).
  const trimmed = SEPARATOR.test(padded.at(-1) ?? '') ? padded.slice(0, -1) : padded;
  // UTS #46 with the STD3 rules refuses every character a host name cannot hold (/ ? # \ % @ :).
  const ascii = withinRawBounds(trimmed)
    ? loadTr46().toASCII(trimmed, {
        useSTD3ASCIIRules: true,
        checkHyphens: true,
        checkBidi: true,
        checkJoiners: true,
        verifyDNSLength: true,
      })
    : null;
  const labels = ascii?.split('.') ?? [];
  const valid =
    ascii !== null &&
    ascii.length <= 253 &&
    labels.length >= 2 &&
    labels.every((label) => LABEL.test(label)) &&
    // A top label that is a number (decimal, or 0x hex as URL parsers read it) makes the name an
    // IPv4 address to resolvers and URL parsers (RFC 3696 section 2; WHATWG URL "ends in a number").
    !/^(?:[0-9]+|0x[0-9a-f]*)$/.test(labels.at(-1) ?? '') &&
    isIP(ascii) === 0;
  if (!valid) {
    ctx.addIssue({ code: 'custom', message: NOT_A_DOMAIN });
    return z.NEVER;
  }
  return ascii;
});

const DnsRecordRef = builder
  .objectRef<{ type: string; name: string; value: string }>('DnsRecord')
  .implement({
    // A value type other subgraphs may define too: @shareable, so that they compose.
    shareable: true,
    description: 'A DNS record to publish at your DNS provider.',
    fields: (t) => ({
      type: t.exposeString('type', { description: 'The record type: always "TXT".' }),
      name: t.exposeString('name', {
        description: 'The host name: `_service_custom_hostname.<domain>`.',
      }),
      value: t.exposeString('value', { description: 'The record value: the verification code.' }),
    }),
  });

const DomainVerificationRef = builder
  .objectRef<WireDomainVerification>('DomainVerification')
  .implement({
    description: 'A request to verify a domain through a DNS TXT record.',
    fields: (t) => ({
      id: t.exposeID('id', { description: 'The identifier of the request.' }),
      domain: t.exposeString('domain', { description: 'The domain the code was created for.' }),
      accountId: t.exposeID('accountId', { description: 'The owning account.' }),
      verificationCode: t.exposeString('verificationCode', {
        description: 'The value to publish in the TXT record.',
      }),
      createdAt: t.exposeString('createdAt', {
        description: 'When it was created, as the upstream sends it (format unspecified).',
      }),
      dnsRecord: t.field({
        type: DnsRecordRef,
        description: 'Exactly what to publish before calling verifyDomain.',
        resolve: (v) => ({ type: 'TXT', name: txtHost(v.domain), value: v.verificationCode }),
      }),
    }),
  });

// A federation entity, so other subgraphs can reference a verification by its id. The upstream has
// no fetch-by-id, so the key is not resolvable: the router never asks this subgraph for one.
builder.asEntity(DomainVerificationRef, {
  key: builder.keyDirective(builder.selection<{ id: string }>('id'), false),
  resolveReference: () => {
    throw new Error('DomainVerification cannot be fetched by key: the upstream has no such read');
  },
});

interface VerificationResult {
  domain: string;
  verified: boolean;
  message: string | null;
}

const DomainVerificationResultRef = builder
  .objectRef<VerificationResult>('DomainVerificationResult')
  .implement({
    // A value type other subgraphs may define too: @shareable, so that they compose.
    shareable: true,
    description: 'The outcome of a verification attempt.',
    fields: (t) => ({
      domain: t.exposeString('domain', { description: 'The domain that was checked.' }),
      verified: t.exposeBoolean('verified', {
        description: 'Whether the upstream accepted the TXT record.',
      }),
      message: t.exposeString('message', {
        nullable: true,
        description: "Why not, in the upstream's words, when verified is false.",
      }),
    }),
  });

const CreateDomainVerificationInput = builder.inputType('CreateDomainVerificationInput', {
  description: 'The domain to create a verification code for.',
  fields: (t) => ({
    domain: t.string({
      required: true,
      description: 'The domain, e.g. example.com; an internationalised name is sent in punycode.',
      validate: domainName,
    }),
  }),
});

const VerifyDomainInput = builder.inputType('VerifyDomainInput', {
  description: 'The domain to verify, once its TXT record is published.',
  fields: (t) => ({
    domain: t.string({
      required: true,
      description: 'The domain whose TXT record is published.',
      validate: domainName,
    }),
  }),
});

// 401, 403 and 429 are about the caller, not the domain: they stay errors.
const NOT_AN_ANSWER = new Set([401, 403, 429]);

builder.mutationFields((t) => ({
  createDomainVerification: t.field({
    type: DomainVerificationRef,
    description:
      'Creates a verification code for a domain; publish `dnsRecord`, then call verifyDomain.',
    args: { input: t.arg({ type: CreateDomainVerificationInput, required: true }) },
    resolve: (_root, { input }, ctx) => ctx.client.createDomainVerification(input.domain, ctx.call),
  }),
  verifyDomain: t.field({
    type: DomainVerificationResultRef,
    description:
      'Asks the upstream to check the TXT record. "Not yet" is `verified: false` with a message, not an error.',
    args: { input: t.arg({ type: VerifyDomainInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      try {
        await ctx.client.verifyDomain(input.domain, ctx.call);
        return { domain: input.domain, verified: true, message: null };
      } catch (error) {
        const status = error instanceof UpstreamError ? error.upstream.status : undefined;
        if (status === undefined || status < 400 || status >= 500 || NOT_AN_ANSWER.has(status))
          throw error;
        return {
          domain: input.domain,
          verified: false,
          message: (error as UpstreamError).upstream.message,
        };
      }
    },
  }),
}));
