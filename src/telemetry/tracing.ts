import { createRequire } from 'node:module';
import type { Tracer } from '@opentelemetry/api';
import type { TracingConfig } from '../config.js';

/** The running OpenTelemetry SDK: the tracer the facade's spans come from, and its shutdown. */
export interface Tracing {
  tracer: Tracer;
  /** Names the active server span after its route (`POST /graphql`) rather than its method alone. */
  setHttpRoute(route: string): void;
  /** Exports what is still buffered; called on the way out. */
  shutdown(): Promise<void>;
}

export const TRACER_NAME = 'graphql-rest-facade';

/**
 * Starts the SDK from `config.tracing`. The SDK and its exporters are imported here, on demand:
 * without an endpoint the process never loads them, and its request path carries no span work.
 * Must run before the HTTP server handles a request: the server span comes from
 * @opentelemetry/instrumentation-http, which patches node:http's Server when it is enabled.
 */
export async function startTracing(
  config: TracingConfig,
  probePaths: readonly string[],
): Promise<Tracing> {
  const [
    {
      NodeTracerProvider,
      BatchSpanProcessor,
      ParentBasedSampler,
      TraceIdRatioBasedSampler,
      AlwaysOnSampler,
      AlwaysOffSampler,
    },
    { getRPCMetadata, RPCType },
    { resourceFromAttributes },
    { registerInstrumentations },
    { HttpInstrumentation },
    exporters,
    api,
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-http'),
    config.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/api'),
  ]);

  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  const root = {
    always_on: new AlwaysOnSampler(),
    always_off: new AlwaysOffSampler(),
    traceidratio: ratio,
    parentbased_always_on: new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    parentbased_always_off: new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    parentbased_traceidratio: new ParentBasedSampler({ root: ratio }),
  }[config.sampler];

  const exporter = new exporters.OTLPTraceExporter({
    url: config.endpoint,
    headers: config.headers,
  });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      ...config.resourceAttributes,
      'service.name': config.serviceName,
    }),
    sampler: root,
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  // The W3C trace-context and baggage propagators, and an AsyncLocalStorage context manager.
  provider.register();

  const probes = new Set(probePaths);
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes would be most of the spans and say nothing.
        ignoreIncomingRequestHook: (request) =>
          probes.has((request.url ?? '/').split('?', 1)[0] ?? '/'),
        // The exporter is the only other user of node:http: its own calls are not traced.
        disableOutgoingRequestInstrumentation: true,
      }),
    ],
  });
  // An ES module's `import 'node:http'` does not pass the require hook that applies the patch:
  // requiring it once here does, and the patch (on Server.prototype) serves every importer.
  createRequire(import.meta.url)('node:http');

  return {
    tracer: provider.getTracer(TRACER_NAME),
    setHttpRoute(route) {
      const metadata = getRPCMetadata(api.context.active());
      if (metadata?.type === RPCType.HTTP) metadata.route = route;
    },
    shutdown: () => provider.shutdown(),
  };
}
