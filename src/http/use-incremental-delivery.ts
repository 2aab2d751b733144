import { useDeferStream } from '@graphql-yoga/plugin-defer-stream';
import type { Plugin } from 'graphql-yoga';
import { usesIncrementalDelivery } from '../documents.js';
import { FacadeError } from '../errors.js';

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
 * `@defer` and `@stream` (Yoga's plugin: the two directives and their validation rules). An
 * operation that uses one is answered as `multipart/mixed` or `text/event-stream` when the
 * client's Accept lists one of them (or there is no Accept), and refused with 406 before execution
 * otherwise, since a single JSON answer cannot carry later parts; operations without them are
 * answered as before. Yoga's own executor runs them: graphql-jit has no incremental delivery
 * (app.ts skips it for documents that usesIncrementalDelivery finds).
 */
export function useIncrementalDelivery(): Plugin[] {
  return [
    useDeferStream() as Plugin,
    {
      // Before execution: Yoga would run the operation (a mutation included) and only then find
      // that its parts cannot be sent in the type the client accepts.
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
