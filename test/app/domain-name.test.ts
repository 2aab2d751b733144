import { describe, expect, it } from 'vitest';
import { domainName, txtHost } from '../../src/schema/domain-name.js';

const accepts = (raw: string) => {
  const parsed = domainName.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
};

// Mapped to nothing by IDNA: raw padding that makes a name long before tr46 and short after it.
const SOFT_HYPHEN = '\u00ad';

describe('domainName', () => {
  it('answers the lower-case ASCII form, without one trailing full stop in any of its forms', () => {
    expect(accepts('  Example.COM  ')).toBe('example.com');
    expect(accepts('example.com.')).toBe('example.com');
    expect(accepts('example.com\u3002')).toBe('example.com');
    expect(accepts('bücher.example')).toBe('xn--bcher-kva.example');
  });

  it('accepts raw bounds of exactly 1012 units for the name and 252 for a label', () => {
    const label = (ascii: string, units: number) =>
      ascii + SOFT_HYPHEN.repeat(units - ascii.length);
    const raw = [label('a', 252), label('b', 252), label('c', 252), label('d', 251), 'e'].join('.');
    expect(raw).toHaveLength(1012);
    expect(accepts(raw)).toBe('a.b.c.d.e');
  });

  it('refuses a name or a label past its raw bound before IDNA sees it', () => {
    expect(accepts(`${'a'.repeat(1)}${SOFT_HYPHEN.repeat(252)}.com`)).toBeUndefined();
    const raw = ['a', 'b', 'c', 'd', 'e'].map((ascii) => ascii + SOFT_HYPHEN.repeat(202)).join('.');
    expect(raw).toHaveLength(1019);
    expect(accepts(raw)).toBeUndefined();
  });

  it('accepts 127 labels, the most a name of 253 characters holds', () => {
    const name = Array.from({ length: 127 }, () => 'a').join('.');
    expect(name).toHaveLength(253);
    expect(accepts(name)).toBe(name);
    expect(accepts(`a.${name}`)).toBeUndefined();
  });

  it('refuses hyphens in the third and fourth places of a label', () => {
    expect(accepts('ab--cd.example')).toBeUndefined();
    expect(accepts('ab-cd.example')).toBe('ab-cd.example');
  });

  it('refuses a label mixing left-to-right and right-to-left letters', () => {
    expect(accepts('a\u05d0.example')).toBeUndefined();
    expect(accepts('\u05d0\u05d1.example')).toBe('xn--4dbc.example');
  });

  it('refuses a joiner where no script needs one, written raw or as punycode', () => {
    expect(accepts('a\u200db.example')).toBeUndefined();
    expect(accepts('xn--ab-m1t.example')).toBeUndefined();
  });

  it('refuses a top label that is a number, which makes the name an IPv4 address', () => {
    for (const raw of ['example.1', 'example.12', 'example.0x', 'example.0x7f', '127.0.0.1']) {
      expect(accepts(raw)).toBeUndefined();
    }
    expect(accepts('example.x1')).toBe('example.x1');
  });

  it('refuses what is not a DNS name of two labels, with the rule in the message', () => {
    for (const raw of ['', ' ', 'example', 'a_b.example', 'a/b.example', '[::1]', '-a.example']) {
      expect(accepts(raw)).toBeUndefined();
    }
    expect(domainName.safeParse('example').error?.issues[0]?.message).toMatch(
      /^must be a DNS name of at least two labels/,
    );
  });
});

describe('txtHost', () => {
  it('prefixes the domain with the verification label', () => {
    expect(txtHost('example.com')).toBe('_service_custom_hostname.example.com');
  });
});
