/**
 * Adds `name` to a response's Vary unless it is listed already. Written with `set`, never
 * `append`: whatwg-node keeps a response's headers as the plain object Yoga built them in until
 * something appends or deletes, and only then sends them with one `writeHead` call; an append
 * makes it build a Map and set every header one by one, on every answer (docs/performance.md).
 */
export function addVary(headers: Headers, name: string): void {
  const vary = headers.get('vary');
  if (!vary) {
    headers.set('vary', name);
    return;
  }
  const listed = vary.toLowerCase().split(/\s*,\s*/);
  if (!listed.includes(name.toLowerCase())) headers.set('vary', `${vary}, ${name}`);
}
