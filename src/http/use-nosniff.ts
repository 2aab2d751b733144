import type { Plugin } from 'graphql-yoga';
import { NO_SNIFF } from './headers.js';

/** On every answer: whatwg-node runs onResponse for answers ended early too. */
export function useNoSniff(): Plugin {
  return {
    onResponse({ response }) {
      response.headers.set('x-content-type-options', NO_SNIFF['x-content-type-options']);
    },
  };
}
