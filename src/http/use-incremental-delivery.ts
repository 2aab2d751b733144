import { useDeferStream } from '@graphql-yoga/plugin-defer-stream';
import type { Plugin } from 'graphql-yoga';
import { FacadeError } from '../errors.js';
import { usesIncrementalDelivery } from '../request-document.js';

const PARTS_TYPES = ['multipart/mixed', 'text/event-stream', 'multipart/*', 'text/*', '*/*'];

/** Whether an Accept header lets Yoga answer in parts (multipart/mixed or text/event-stream). */
function acceptsParts(accept: string | null): boolean {
  if (!accept) return true;
  return accept
    .toLowerCase()
    .split(',')
    .map((part) => part.split(';').map((piece) => piece.trim()))
    .some(
      ([type = '', ...params]) =>
        PARTS_TYPES.includes(type) && !params.some((param) => /^q=0(\.0*)?$/.test(param)),
    );
}

/**
 * Yoga's `@defer` and `@stream`, refused with 406 before execution when Accept allows no answer in
 * parts (docs/operations.md#incremental-delivery-defer-and-stream).
 */
export function useIncrementalDelivery(): Plugin[] {
  return [
    useDeferStream() as Plugin,
    {
      onExecute({ args }) {
        const { request } = args.contextValue;
        if (!usesIncrementalDelivery(args.document) || acceptsParts(request.headers.get('accept')))
          return;
        throw new FacadeError(
          'BAD_USER_INPUT',
          'Not Acceptable: @defer and @stream are answered as multipart/mixed or text/event-stream; accept one of them',
          { http: { status: 406 } },
        );
      },
    },
  ];
}
