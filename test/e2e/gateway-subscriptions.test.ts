import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compose } from '../helpers/composers.js';
import { startHiveGateway } from '../helpers/gateway.js';
import { postGraphQL, useDnsHarness } from '../helpers/harness.js';
import { type Listening, listen } from '../helpers/net.js';
import { sseClient, subscribe } from '../helpers/subscriptions.js';

const DOMAIN = 'gateway.example.com';
const HOST = `_service_custom_hostname.${DOMAIN}`;
const CODE = 'svc-verify-gateway';

describe('Subscription.domainDnsCheck through Hive Gateway', () => {
  const live = useDnsHarness();
  let facade: Listening;
  /** The Accept header of each request the facade received. */
  const accepts: string[] = [];

  beforeAll(async () => {
    const app = live.h.createApp({
      config: { subscriptions: { minIntervalMs: 200, maxIntervalMs: 200 } },
    });
    facade = await listen((request, response) => {
      accepts.push(request.headers.accept ?? '');
      void app(request, response);
    });
  });
  afterAll(() => facade?.close());

  // Both supergraphs a gateway of the npm registry serves: @apollo/composition's and the Guild's.
  it.each(['apollo', 'guild'] as const)(
    'delivers the events over SSE from the %s supergraph, then completes',
    async (composer) => {
      const { data } = await postGraphQL<{ _service: { sdl: string } }>(
        facade.url,
        '{ _service { sdl } }',
      );
      const result = compose(composer, [
        { name: 'facade', url: facade.url, sdl: data?._service.sdl ?? '' },
      ]);
      expect(result.errors).toEqual([]);
      const gateway = await startHiveGateway(result.supergraphSdl ?? '');
      try {
        live.dns.remove(HOST);
        accepts.length = 0;
        const watch = subscribe(sseClient(gateway.url, { authorization: 'Bearer gateway-test' }), {
          domain: DOMAIN,
          code: CODE,
        });
        expect((await watch.next())?.data?.domainDnsCheck).toEqual({
          host: HOST,
          values: [],
          matches: false,
          error: expect.stringMatching(/^No such name/),
        });
        live.dns.setTxt(HOST, [CODE]);
        expect((await watch.next())?.data?.domainDnsCheck).toMatchObject({ matches: true });
        expect(await watch.next()).toBeUndefined();
        // The gateway subscribed at the facade over server-sent events.
        expect(accepts).toEqual([expect.stringContaining('text/event-stream')]);
      } finally {
        await gateway.close();
      }
    },
  );
});
