import { UpstreamError } from '../errors.js';
import { createDomainVerification, verifyDomain } from '../upstream/endpoints.js';
import type { WireDomainVerification } from '../upstream/wire.js';
import { builder } from './builder.js';
import { domainName, txtHost } from './domain-name.js';

const DnsRecordRef = builder
  .objectRef<{ type: string; name: string; value: string }>('DnsRecord')
  .implement({
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

// A key the router never resolves here: the upstream has no read by id (docs/federation.md).
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

/** A 4xx is the upstream's "not verified", except 401, 403 and 429: they are about the caller. */
const isAnswer = (status = 0) => status >= 400 && status < 500 && ![401, 403, 429].includes(status);

builder.mutationFields((t) => ({
  createDomainVerification: t.field({
    type: DomainVerificationRef,
    description:
      'Creates a verification code for a domain; publish `dnsRecord`, then call verifyDomain.',
    args: { input: t.arg({ type: CreateDomainVerificationInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      ctx.client.send(createDomainVerification, { domain: input.domain }, ctx.call),
  }),
  verifyDomain: t.field({
    type: DomainVerificationResultRef,
    description:
      'Asks the upstream to check the TXT record. "Not yet" is `verified: false` with a message, not an error.',
    args: { input: t.arg({ type: VerifyDomainInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      try {
        await ctx.client.send(verifyDomain, { domain: input.domain }, ctx.call);
        return { domain: input.domain, verified: true, message: null };
      } catch (error) {
        if (!(error instanceof UpstreamError && isAnswer(error.upstream.status))) throw error;
        return { domain: input.domain, verified: false, message: error.upstream.message };
      }
    },
  }),
}));
