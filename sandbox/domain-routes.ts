import { randomBytes, randomUUID } from 'node:crypto';
import {
  type Exchange,
  isPlainObject,
  json,
  message,
  messageBody,
  type Reply,
  type Route,
} from './http-io.js';
import type { TxtLookup } from './txt-records.js';

interface Verification {
  id: string;
  domain: string;
  accountId: string;
  verificationCode: string;
  createdAt: string;
}

export const TXT_PREFIX = '_service_custom_hostname.';
const VERIFICATIONS_PATH = '/domains/v1/verifications';

/**
 * Status codes of this route's errors are "not shown" in the spec: 400 for a bad request or a
 * failed check, 404 for a domain never created, 503 when DNS itself cannot answer.
 */
export function createDomainRoutes(txt: TxtLookup): Route[] {
  const byAccount = new Map<string, Map<string, Verification>>();

  const create = (accountId: string, ctx: Exchange): Reply => {
    const domain = domainOf(ctx);
    if (domain === undefined) return badDomain();
    const verification: Verification = {
      id: `dv_${randomUUID()}`,
      domain,
      accountId,
      verificationCode: `svc-verify-${randomBytes(16).toString('hex')}`,
      createdAt: new Date().toISOString(),
    };
    let domains = byAccount.get(accountId);
    if (!domains) {
      domains = new Map();
      byAccount.set(accountId, domains);
    }
    // A second create for the same domain replaces the code: the old one stops verifying.
    domains.set(keyOf(domain), verification);
    return json(200, verification);
  };

  const verify = async (accountId: string, ctx: Exchange): Promise<Reply> => {
    const domain = domainOf(ctx);
    if (domain === undefined) return badDomain();
    const verification = byAccount.get(accountId)?.get(keyOf(domain));
    if (!verification) return message(404, `No verification request for domain ${domain}`);

    const host = `${TXT_PREFIX}${domain}`;
    const result = await txt.lookup(host);
    switch (result.kind) {
      case 'missing':
        return message(400, `No TXT record found at ${host}`);
      case 'invalid-name':
        return message(400, `${host} is not a valid DNS name`);
      case 'failed':
        return message(503, `DNS lookup of the TXT record at ${host} failed (${result.reason})`);
      case 'found':
        if (!result.values.some((value) => value.trim() === verification.verificationCode)) {
          return message(400, `TXT record at ${host} does not contain the verification code`);
        }
        return json(200, { domain, verified: true, verifiedAt: new Date().toISOString() });
    }
  };

  return [
    { method: 'POST', path: VERIFICATIONS_PATH, errorBody: messageBody, handle: create },
    { method: 'PUT', path: VERIFICATIONS_PATH, errorBody: messageBody, handle: verify },
  ];
}

function domainOf(ctx: Exchange): string | undefined {
  if (!ctx.bodyIsJson || !isPlainObject(ctx.body)) return undefined;
  const domain = ctx.body.domain;
  return typeof domain === 'string' && domain.trim() !== '' ? domain.trim() : undefined;
}

function badDomain(): Reply {
  return message(400, 'Request body must be a JSON object with a non-empty string "domain"');
}

/** DNS names are case-insensitive and the root dot is optional. */
function keyOf(domain: string): string {
  return domain.toLowerCase().replace(/\.$/, '');
}
