import type { Plugin } from 'graphql-yoga';
import { NO_SNIFF } from './headers.js';

/**
 * `X-Content-Type-Options: nosniff` on every answer, whichever stage wrote it (a route, a refusal,
 * a kept answer): whatwg-node runs every onResponse hook for answers ended early too.
 */
export function useNoSniff(): Plugin {
  return {
    onResponse({ response }) {
      response.headers.set('x-content-type-options', NO_SNIFF['x-content-type-options']);
    },
  };
}
