import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type * as Tr46 from 'tr46';
import { z } from 'zod';

// The contract's rule for a domain, shared by every field that takes one (domains.ts,
// dns-check.ts): a guard of its own, kept apart from the types that use it.

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
