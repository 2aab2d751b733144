// What several HTTP plugins negotiate or write the same way.

export type Encoding = 'br' | 'gzip' | 'identity';

/** The encoding to send for an Accept-Encoding header: br, then gzip, unless refused with q=0. */
export function chooseEncoding(acceptEncoding: string | null): Encoding {
  const quality = new Map<string, number>();
  for (const entry of (acceptEncoding ?? '').split(',')) {
    const [name = '', ...params] = entry.split(';').map((part) => part.trim().toLowerCase());
    const q = params.find((param) => param.startsWith('q='));
    const value = q === undefined ? 1 : Number(q.slice(2));
    if (name !== '') quality.set(name, Number.isNaN(value) ? 0 : value);
  }
  const accepts = (name: string) => (quality.get(name) ?? quality.get('*') ?? 0) > 0;
  return accepts('br') ? 'br' : accepts('gzip') ? 'gzip' : 'identity';
}

/**
 * Adds each of `names` not listed yet to a list header, in one `set`, never `append`: an append
 * makes whatwg-node rebuild every header of the answer one by one (docs/performance.md).
 */
export function addToList(headers: Headers, field: string, names: readonly string[]): void {
  const value = headers.get(field);
  const listed = value ? value.toLowerCase().split(/\s*,\s*/) : [];
  const added: string[] = [];
  for (const name of names) {
    const lower = name.toLowerCase();
    if (listed.includes(lower)) continue;
    listed.push(lower);
    added.push(name);
  }
  if (added.length > 0) headers.set(field, (value ? [value, ...added] : added).join(', '));
}

export const addVary = (headers: Headers, ...names: string[]) => addToList(headers, 'vary', names);

/** On every answer, the metrics port's too: one that quotes a caller is never run as a page. */
export const NO_SNIFF = { 'x-content-type-options': 'nosniff' } as const;
