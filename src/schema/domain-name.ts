import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type * as Tr46 from 'tr46';
import { z } from 'zod';

// The contract's rule for a domain, shared by every field that takes one.

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
// The forms of the full stop that IDNA maps to '.', so they separate labels before mapping too.
const SEPARATOR = /[.\u3002\uff0e\uff61]/;
// tr46's time grows with its input, so a raw name is bounded first: four UTF-16 units per
// character of the longest ASCII name, and no more labels than it holds (docs/operations.md#limits).
const MAX_RAW_NAME = 4 * 253;
const MAX_RAW_LABEL = 4 * 63;
const MAX_LABELS = 127;
const TXT_PREFIX = '_service_custom_hostname';
const NOT_A_DOMAIN =
  'must be a DNS name of at least two labels (letters, digits or hyphens, 1-63 characters each, not starting or ending with a hyphen), 253 characters at most, and not an IP address';

// Loaded by the first domain checked, not at start: tr46 keeps Unicode's IDNA tables in the heap.
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
 * Trimmed, lower-cased, one trailing dot dropped, in punycode, then checked label by label: as a
 * DNS name, never parsed as a URL host, which would read "a.com/b" as "a.com".
 */
export const domainName = z.string().transform((raw, ctx) => {
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
